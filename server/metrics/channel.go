package metrics

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"ramanserve/inference"
	"ramanserve/server/codec"
	"ramanserve/server/contract"
)

// channelCodes are the code labels of the prediction channel: success,
// every code api/messages.md lists, and codeOther for anything else. Each
// series exists from the start, so rates begin at zero.
var channelCodes = [...]string{
	CodeOK,
	string(contract.ModelNotLoaded),
	string(contract.InvalidSpectrum),
	string(contract.SpectrumOutOfRange),
	string(contract.UnsupportedVersion),
	string(contract.UnknownType),
	string(contract.MalformedMessage),
	string(contract.MessageTooLarge),
	string(contract.ServerBusy),
	string(contract.InternalError),
	string(contract.InvalidRequest),
	codeOther,
}

const numChannelCodes = len(channelCodes)

// channelCodeIndex is the position of code in channelCodes: "" (no
// error) is CodeOK. A switch, not a map: no hashing on the hot path.
func channelCodeIndex(code contract.Code) int {
	switch code {
	case "":
		return 0
	case contract.ModelNotLoaded:
		return 1
	case contract.InvalidSpectrum:
		return 2
	case contract.SpectrumOutOfRange:
		return 3
	case contract.UnsupportedVersion:
		return 4
	case contract.UnknownType:
		return 5
	case contract.MalformedMessage:
		return 6
	case contract.MessageTooLarge:
		return 7
	case contract.ServerBusy:
		return 8
	case contract.InternalError:
		return 9
	case contract.InvalidRequest:
		return 10
	}
	return numChannelCodes - 1
}

// channelTypes are the request types by codec.MessageType; a type the
// codec could not read is "unknown".
var channelTypes = [...]codec.MessageType{codec.TypeUnknown, codec.TypePing, codec.TypePredict, codec.TypeModelInfo}

const numChannelTypes = len(channelTypes)

// Buckets. A server-side predict takes 20 to 200 us (bench: 2048 points,
// with or without preprocessing); ping and model_info a few us.
var (
	channelDurationBuckets = []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1}
	// Reduced statistics: 1 is the 95 % limit; 3 is "stop using it"
	// (api/messages.md section 8).
	reducedBuckets = []float64{0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 100}
	// Confidence is a probability; the operating rule reads it near 0.1
	// (stop) and near 1.
	confidenceBuckets = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99}
)

// ChannelRecorder records the prediction channel's requests
// (channel.Recorder). Every series is resolved when it is built, so
// recording is atomic additions only. ramanserve_predictions_total and
// ramanserve_prediction_duration_seconds are the predict series of the
// per-type metrics, copied when Prometheus scrapes (predictionsView)
// rather than recorded twice.
type ChannelRecorder struct {
	requests  [numChannelTypes][numChannelCodes]prometheus.Counter
	durations [numChannelTypes]prometheus.Histogram

	reducedT2     prometheus.Observer
	reducedQ      prometheus.Observer
	confidence    [inference.NumAnalytes]prometheus.Observer
	outsideDomain prometheus.Counter

	// last holds the bits of the last predicted concentration of each
	// analyte (NaN: none), stored with one atomic store each and read
	// when Prometheus scrapes (lastView): no lock, no allocation on the
	// predict path.
	last [inference.NumAnalytes]atomic.Uint64
}

// nanBits is what last holds for an analyte without a value.
var nanBits = math.Float64bits(math.NaN())

func newChannelRecorder(reg prometheus.Registerer) *ChannelRecorder {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "channel_requests_total",
		Help: `Prediction channel requests answered, by message type and code ("OK" or the error code of the reply).`,
	}, []string{"type", "code"})
	durations := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "channel_request_duration_seconds",
		Help:    "Server-side time of a prediction channel request, from its frames to its encoded reply, by message type.",
		Buckets: channelDurationBuckets,
	}, []string{"type"})
	reducedT2 := prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "prediction_reduced_t2",
		Help:    "Reduced Hotelling T2 (t2 / t2_limit) of successful predicts whose model computes it; above 1: outside the 95 % region.",
		Buckets: reducedBuckets,
	})
	reducedQ := prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "prediction_reduced_q",
		Help:    "Reduced Q (q / q_limit) of successful predicts whose model computes it; above 1: a feature the calibration never saw.",
		Buckets: reducedBuckets,
	})
	confidence := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "prediction_confidence",
		Help:    "Confidence of each predicted concentration (probability that it lies within the tolerance of the laboratory value), by analyte.",
		Buckets: confidenceBuckets,
	}, []string{"analyte"})
	outside := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "predictions_outside_domain_total",
		Help: "Successful predicts outside the calibration domain: reduced T2 above 1 or reduced Q above 1.",
	})
	r := &ChannelRecorder{
		reducedT2:     reducedT2,
		reducedQ:      reducedQ,
		outsideDomain: outside,
	}
	for i, t := range channelTypes {
		r.durations[i] = durations.WithLabelValues(t.String()).(prometheus.Histogram)
		for j, code := range channelCodes {
			r.requests[i][j] = requests.WithLabelValues(t.String(), code)
		}
	}
	for a := range inference.NumAnalytes {
		r.confidence[a] = confidence.WithLabelValues(inference.Analyte(a).String())
		r.last[a].Store(nanBits)
	}
	reg.MustRegister(requests, durations, reducedT2, reducedQ, confidence, outside, newPredictionsView(r), newLastView(r))
	return r
}

// Answered records one request of type t answered with code ("" when it
// succeeded) after took.
func (r *ChannelRecorder) Answered(t codec.MessageType, code contract.Code, took time.Duration) {
	ti := int(t)
	if ti >= numChannelTypes {
		ti = int(codec.TypeUnknown)
	}
	ci := channelCodeIndex(code)
	r.requests[ti][ci].Inc()
	r.durations[ti].Observe(took.Seconds())
}

// Predicted records the diagnostics and confidence of a successful predict.
func (r *ChannelRecorder) Predicted(p *inference.Prediction) {
	d := &p.Diagnostics
	outside := false
	if d.HasT2 && finite(d.ReducedT2) {
		r.reducedT2.Observe(d.ReducedT2)
		outside = d.ReducedT2 > 1
	}
	if d.HasQLim && finite(d.ReducedQ) {
		r.reducedQ.Observe(d.ReducedQ)
		outside = outside || d.ReducedQ > 1
	}
	if outside {
		r.outsideDomain.Inc()
	}
	for a := range inference.NumAnalytes {
		if p.Confidence.Valid[a] && finite(p.Confidence.Value[a]) {
			r.confidence[a].Observe(p.Confidence.Value[a])
		}
		// An analyte the model does not predict has no last value, rather
		// than one left by a previous model.
		bits := nanBits
		if v := p.Concentrations.Value[a]; p.Concentrations.Valid[a] && finite(v) {
			bits = math.Float64bits(v)
		}
		r.last[a].Store(bits)
	}
}

// finite reports whether v is neither NaN nor infinite: one such value
// would turn a histogram's sum into NaN or Inf for the process's life.
func finite(v float64) bool { return v-v == 0 }

// predictionsView reports the predict series of the per-type metrics
// under the names operators look for first: ramanserve_predictions_total
// and ramanserve_prediction_duration_seconds.
type predictionsView struct {
	r           *ChannelRecorder
	predictions *prometheus.Desc
	duration    *prometheus.Desc
}

func newPredictionsView(r *ChannelRecorder) *predictionsView {
	return &predictionsView{
		r: r,
		predictions: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "predictions_total"),
			`Predict requests answered, by code ("OK" or the error code of the reply).`,
			[]string{"code"}, nil),
		duration: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "prediction_duration_seconds"),
			"Server-side time of a predict, from its frames to its encoded reply (decode, validate, preprocess, predict, diagnostics, encode).",
			nil, nil),
	}
}

func (v *predictionsView) Describe(ch chan<- *prometheus.Desc) {
	ch <- v.predictions
	ch <- v.duration
}

func (v *predictionsView) Collect(ch chan<- prometheus.Metric) {
	predict := int(codec.TypePredict)
	var m dto.Metric
	for j, code := range channelCodes {
		m.Reset()
		if err := v.r.requests[predict][j].Write(&m); err != nil {
			ch <- prometheus.NewInvalidMetric(v.predictions, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(v.predictions, prometheus.CounterValue, m.GetCounter().GetValue(), code)
	}
	m.Reset()
	if err := v.r.durations[predict].Write(&m); err != nil {
		ch <- prometheus.NewInvalidMetric(v.duration, err)
		return
	}
	h := m.GetHistogram()
	buckets := make(map[float64]uint64, len(h.GetBucket()))
	for _, b := range h.GetBucket() {
		buckets[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	ch <- prometheus.MustNewConstHistogram(v.duration, h.GetSampleCount(), h.GetSampleSum(), buckets)
}

// lastView reports ramanserve_last_predicted_concentration from the bits
// Predicted stores.
type lastView struct {
	r    *ChannelRecorder
	desc *prometheus.Desc
}

func newLastView(r *ChannelRecorder) *lastView {
	return &lastView{r: r, desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", "last_predicted_concentration"),
		"The concentration (g/L) of the last successful predict, by analyte; absent before the first, and for an analyte the last predict's model does not predict.",
		[]string{"analyte"}, nil)}
}

func (v *lastView) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

func (v *lastView) Collect(ch chan<- prometheus.Metric) {
	for a := range inference.NumAnalytes {
		if c := math.Float64frombits(v.r.last[a].Load()); finite(c) {
			ch <- prometheus.MustNewConstMetric(v.desc, prometheus.GaugeValue, c, inference.Analyte(a).String())
		}
	}
}
