package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/server/codec"
	"ramanserve/server/contract"
	"ramanserve/trainer/jobs"
)

// gathered returns the families of m by name.
func gathered(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// series finds the series of family name whose labels include want.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no series %s%v", name, want)
	return nil
}

func counterOf(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	return series(t, fams, name, labels).GetCounter().GetValue()
}

func histCount(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) uint64 {
	t.Helper()
	return series(t, fams, name, labels).GetHistogram().GetSampleCount()
}

func gaugeOf(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	return series(t, fams, name, labels).GetGauge().GetValue()
}

// prediction is a successful prediction with every diagnostic.
func prediction(reducedT2, reducedQ float64) *inference.Prediction {
	p := &inference.Prediction{}
	p.Diagnostics = inference.Diagnostics{HasT2: true, ReducedT2: reducedT2, HasQ: true, HasQLim: true, ReducedQ: reducedQ}
	for a := range inference.NumAnalytes {
		p.Confidence.Set(inference.Analyte(a), 0.9)
	}
	return p
}

func TestChannelRecorder(t *testing.T) {
	m := New(Sources{})
	r := m.Channel()
	r.Answered(codec.TypePredict, "", 40*time.Microsecond)
	r.Answered(codec.TypePredict, "", 60*time.Microsecond)
	r.Answered(codec.TypePredict, contract.InvalidSpectrum, time.Microsecond)
	r.Answered(codec.TypePing, "", time.Microsecond)
	r.Answered(codec.TypeUnknown, contract.MalformedMessage, time.Microsecond)
	r.Answered(codec.MessageType(200), contract.Code("NOT_A_CODE"), time.Microsecond)
	r.Predicted(prediction(0.5, 0.5))
	r.Predicted(prediction(1.5, 0.5)) // outside by T2
	r.Predicted(prediction(0.5, 1.01))
	r.Predicted(prediction(1, 1)) // on the limits: inside
	one := prediction(0.2, math.NaN())
	one.Confidence = inference.Breakdown{}
	one.Confidence.Set(inference.DHA, 0.3)
	r.Predicted(one)
	imported := &inference.Prediction{Diagnostics: inference.Diagnostics{HasT2: true, ReducedT2: 4, HasQ: true}} // no Q limit
	r.Predicted(imported)

	f := gathered(t, m)
	checks := []struct {
		name   string
		labels map[string]string
		got    float64
		want   float64
	}{
		{"predictions OK", nil, counterOf(t, f, "ramanserve_predictions_total", map[string]string{"code": "OK"}), 2},
		{"predictions INVALID_SPECTRUM", nil, counterOf(t, f, "ramanserve_predictions_total", map[string]string{"code": "INVALID_SPECTRUM"}), 1},
		{"predictions MODEL_NOT_LOADED", nil, counterOf(t, f, "ramanserve_predictions_total", map[string]string{"code": "MODEL_NOT_LOADED"}), 0},
		{"prediction duration", nil, float64(histCount(t, f, "ramanserve_prediction_duration_seconds", nil)), 3},
		{"channel predict OK", nil, counterOf(t, f, "ramanserve_channel_requests_total", map[string]string{"type": "predict", "code": "OK"}), 2},
		{"channel ping OK", nil, counterOf(t, f, "ramanserve_channel_requests_total", map[string]string{"type": "ping", "code": "OK"}), 1},
		{"channel unknown MALFORMED", nil, counterOf(t, f, "ramanserve_channel_requests_total", map[string]string{"type": "unknown", "code": "MALFORMED_MESSAGE"}), 1},
		{"channel out-of-range type, unlisted code", nil, counterOf(t, f, "ramanserve_channel_requests_total", map[string]string{"type": "unknown", "code": "OTHER"}), 1},
		{"ping duration", nil, float64(histCount(t, f, "ramanserve_channel_request_duration_seconds", map[string]string{"type": "ping"})), 1},
		{"predict duration", nil, float64(histCount(t, f, "ramanserve_channel_request_duration_seconds", map[string]string{"type": "predict"})), 3},
		{"reduced T2", nil, float64(histCount(t, f, "ramanserve_prediction_reduced_t2", nil)), 6},
		{"reduced Q (finite, with a limit)", nil, float64(histCount(t, f, "ramanserve_prediction_reduced_q", nil)), 4},
		{"outside the domain", nil, counterOf(t, f, "ramanserve_predictions_outside_domain_total", nil), 3},
		{"confidence EPA", nil, float64(histCount(t, f, "ramanserve_prediction_confidence", map[string]string{"analyte": "EPA"})), 4},
		{"confidence DHA", nil, float64(histCount(t, f, "ramanserve_prediction_confidence", map[string]string{"analyte": "DHA"})), 5},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s := series(t, f, "ramanserve_prediction_reduced_q", nil).GetHistogram().GetSampleSum(); math.IsNaN(s) {
		t.Error("a NaN reached the reduced Q histogram")
	}
	if got := series(t, f, "ramanserve_prediction_duration_seconds", nil).GetHistogram().GetSampleSum(); math.Abs(got-101e-6) > 1e-9 {
		t.Errorf("prediction duration sum = %v s, want 101 us", got)
	}
}

// TestChannelSeriesAreFixed: every series of the prediction channel
// exists from the start, and recording any type and code, made up ones
// included, adds none.
func TestChannelSeriesAreFixed(t *testing.T) {
	m := New(Sources{})
	names := []string{"ramanserve_channel_requests_total", "ramanserve_channel_request_duration_seconds", "ramanserve_predictions_total", "ramanserve_prediction_confidence"}
	before, err := testutil.GatherAndCount(m.Registry(), names...)
	if err != nil {
		t.Fatal(err)
	}
	want := numChannelTypes*numChannelCodes + numChannelTypes + numChannelCodes + inference.NumAnalytes
	if before != want {
		t.Fatalf("%d series at start, want %d", before, want)
	}
	for i := range 1000 {
		m.Channel().Answered(codec.MessageType(i%256), contract.Code(fmt.Sprintf("CODE_%d", i)), time.Microsecond)
	}
	after, err := testutil.GatherAndCount(m.Registry(), names...)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("%d series after made-up types and codes, want %d", after, before)
	}
}

func TestHTTPRecorderBoundsLabels(t *testing.T) {
	m := New(Sources{})
	h := m.HTTP()
	h.Request("/model/{version}", "GET", 200, time.Millisecond)
	h.Request("/model/{version}", "GET", 404, time.Millisecond)
	for i := range 500 {
		// An attacker's methods; unmatched paths arrive with route "".
		h.Request("", fmt.Sprintf("X-%d", i), 405, time.Millisecond)
	}
	h.Request("", "GET", 0, time.Millisecond)
	f := gathered(t, m)
	if got := counterOf(t, f, "ramanserve_http_requests_total", map[string]string{"route": "/model/{version}", "method": "GET", "status": "200"}); got != 1 {
		t.Errorf("GET /model/{version} 200 = %v, want 1", got)
	}
	if got := counterOf(t, f, "ramanserve_http_requests_total", map[string]string{"route": "unmatched", "method": "other", "status": "405"}); got != 500 {
		t.Errorf("unmatched other 405 = %v, want 500", got)
	}
	if got := counterOf(t, f, "ramanserve_http_requests_total", map[string]string{"route": "unmatched", "method": "GET", "status": "aborted"}); got != 1 {
		t.Errorf("aborted = %v, want 1", got)
	}
	if n := len(f["ramanserve_http_requests_total"].GetMetric()); n != 4 {
		t.Errorf("%d request series, want 4", n)
	}
	if n := len(f["ramanserve_http_request_duration_seconds"].GetMetric()); n != 3 {
		t.Errorf("%d duration series, want 3", n)
	}
}

func TestModelLoads(t *testing.T) {
	m := New(Sources{})
	m.ModelLoad(nil)
	m.ModelLoad(fmt.Errorf("load: %w", registry.ErrModelNotFound))
	m.ModelLoad(registry.ErrLoadInProgress)
	m.ModelLoad(errors.New("something else"))
	f := gathered(t, m)
	for result, want := range map[string]float64{"OK": 1, "MODEL_NOT_FOUND": 1, "LOAD_IN_PROGRESS": 1, "INTERNAL_ERROR": 1} {
		if got := counterOf(t, f, "ramanserve_model_loads_total", map[string]string{"result": result}); got != want {
			t.Errorf("loads %s = %v, want %v", result, got, want)
		}
	}
}

type fixedModels struct{ m inference.Model }

func (s *fixedModels) Active() inference.Model { return s.m }

type namedModel struct {
	inference.Model
	meta inference.Metadata
}

func (m *namedModel) Metadata() *inference.Metadata { return &m.meta }

type jobCounts map[jobs.Status]int

func (c jobCounts) CountByStatus() map[jobs.Status]int { return c }

type conns int

func (c conns) OpenConnections() int { return int(c) }

func TestStateAtScrapeTime(t *testing.T) {
	models := &fixedModels{}
	counts := jobCounts{jobs.Running: 1, jobs.Done: 3, "made-up": 7}
	m := New(Sources{Models: models, Jobs: counts, HTTPConns: conns(2), ChannelConns: conns(5)})
	f := gathered(t, m)
	if _, ok := f["ramanserve_active_model_info"]; ok {
		t.Error("active model info without a model")
	}
	if got := gaugeOf(t, f, "ramanserve_model_loaded", nil); got != 0 {
		t.Errorf("model_loaded = %v without a model", got)
	}
	models.m = &namedModel{meta: inference.Metadata{Version: "2026-11-23-a", Algorithm: "PLS2-NIPALS\xff"}}
	f = gathered(t, m)
	info := series(t, f, "ramanserve_active_model_info", map[string]string{"version": "2026-11-23-a", "algorithm": "PLS2-NIPALS\uFFFD"})
	if info.GetGauge().GetValue() != 1 {
		t.Errorf("active model info = %v", info.GetGauge().GetValue())
	}
	if got := gaugeOf(t, f, "ramanserve_model_loaded", nil); got != 1 {
		t.Errorf("model_loaded = %v with a model", got)
	}
	for status, want := range map[string]float64{"queued": 0, "running": 1, "done": 3, "failed": 0} {
		if got := gaugeOf(t, f, "ramanserve_training_jobs", map[string]string{"status": status}); got != want {
			t.Errorf("training jobs %s = %v, want %v", status, got, want)
		}
	}
	if n := len(f["ramanserve_training_jobs"].GetMetric()); n != 4 {
		t.Errorf("%d training job series, want the 4 statuses", n)
	}
	if got := gaugeOf(t, f, "ramanserve_open_connections", map[string]string{"channel": "http"}); got != 2 {
		t.Errorf("http connections = %v", got)
	}
	if got := gaugeOf(t, f, "ramanserve_open_connections", map[string]string{"channel": "zmq"}); got != 5 {
		t.Errorf("zmq connections = %v", got)
	}
	for _, name := range []string{"go_goroutines", "go_gc_duration_seconds", "process_cpu_seconds_total", "process_resident_memory_bytes",
		"go_sched_latencies_seconds", "go_sched_pauses_total_gc_seconds", "go_sync_mutex_wait_total_seconds_total"} {
		if _, ok := f[name]; !ok {
			t.Errorf("no %s: the Go runtime and process collectors are missing", name)
		}
	}
}

// TestLint: the metrics follow Prometheus's naming and help conventions
// (promtool's checks), with every source set and after recording.
func TestLint(t *testing.T) {
	m := New(Sources{Models: &fixedModels{&namedModel{meta: inference.Metadata{Version: "v1", Algorithm: "PLS2-NIPALS"}}},
		Jobs: jobCounts{}, HTTPConns: conns(1), ChannelConns: conns(1)})
	m.Channel().Answered(codec.TypePredict, "", time.Microsecond)
	m.Channel().Predicted(prediction(0.5, 0.5))
	m.HTTP().Request("/health", "GET", 200, time.Millisecond)
	m.ModelLoad(nil)
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, Namespace+"_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

// TestWriteText: the output parses as the text format, with HELP and
// TYPE for every family.
func TestWriteText(t *testing.T) {
	m := New(Sources{})
	m.Channel().Answered(codec.TypePredict, "", time.Microsecond)
	var buf bytes.Buffer
	if err := m.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("output does not parse: %v", err)
	}
	f := fams["ramanserve_predictions_total"]
	if f == nil || f.GetHelp() == "" || f.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("ramanserve_predictions_total: %v", f)
	}
	if !strings.Contains(buf.String(), `ramanserve_predictions_total{code="OK"} 1`+"\n") {
		t.Error("no predictions_total OK line")
	}
}

type storeState struct{ err error }

func (s storeState) Err() (error, time.Time) { return s.err, time.Time{} }

type fleetSize int

func (n fleetSize) ReplicasAlive() int { return int(n) }

// TestFleetMetrics: ramanserve_store_up and ramanserve_fleet_replicas
// read their sources at scrape time, and are absent without them.
func TestFleetMetrics(t *testing.T) {
	fams := gathered(t, New(Sources{Store: storeState{errors.New("down")}, Fleet: fleetSize(3)}))
	if got := gaugeOf(t, fams, "ramanserve_fleet_replicas", nil); got != 3 {
		t.Errorf("ramanserve_fleet_replicas: %v, want 3", got)
	}
	if got := gaugeOf(t, fams, "ramanserve_store_up", nil); got != 0 {
		t.Errorf("ramanserve_store_up with the store down: %v, want 0", got)
	}
	fams = gathered(t, New(Sources{}))
	for _, name := range []string{"ramanserve_fleet_replicas", "ramanserve_store_up"} {
		if fams[name] != nil {
			t.Errorf("%s without its source: present", name)
		}
	}
}
