package channel_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/platform/cputime"
	"ramanserve/server/channel"
	"ramanserve/server/codec"
	"ramanserve/server/contract"
	"ramanserve/server/metrics"
	"ramanserve/server/zmtp"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// fakeModel is a test double for the model only; the codec is real.
type fakeModel struct {
	meta inference.Metadata
	err  error
	pan  bool
}

func (m *fakeModel) Metadata() *inference.Metadata { return &m.meta }
func (m *fakeModel) Targets() []inference.Analyte {
	return []inference.Analyte{inference.EPA, inference.DHA, inference.DPA}
}
func (m *fakeModel) Predict(s *inference.Spectrum, out *inference.Prediction) error {
	if m.pan {
		panic("model bug")
	}
	if m.err != nil {
		return m.err
	}
	*out = inference.Prediction{}
	out.Concentrations.Set(inference.EPA, s.Intensities[0])
	out.Concentrations.Set(inference.DHA, 2)
	out.Concentrations.Set(inference.DPA, 3)
	out.Confidence.Set(inference.EPA, 0.5)
	out.Confidence.Set(inference.DHA, 0.5)
	out.Confidence.Set(inference.DPA, 0.5)
	return nil
}

type models struct{ m inference.Model }

func (s models) Active() inference.Model { return s.m }

func handle(h *channel.Handler, frames ...[]byte) *client.Reply {
	out := h.Handle(context.Background(), zmtp.Request{Frames: frames}, nil)
	rep, err := client.DecodeReply(out)
	if err != nil {
		panic(fmt.Sprintf("reply does not decode: %v", err))
	}
	return rep
}

func TestHandler(t *testing.T) {
	wn := []float64{1, 2, 3}
	predict := client.AppendPredictRequest(nil, "req-1", 1, &client.Spectrum{Wavenumbers: wn, Intensities: []float64{7, 8, 9}}, nil)
	ping := client.AppendPingRequest(nil, "req-2", 1)
	info := client.AppendModelInfoRequest(nil, "req-3", 1)
	// Requests that fail in the codec, to see which reply type they get.
	envelope := func(kv ...any) []byte {
		m := map[string]any{"v": 1, "type": "ping", "id": "req-4", "ts": 1.0}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		b, err := msgpack.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	badSpectrum := client.AppendPredictRequest(nil, "req-1", 1, &client.Spectrum{Wavenumbers: wn, Intensities: []float64{7, 8}}, nil)
	// type twice: 0x85 map of 5 whose second entry repeats "type".
	typeTwice := append([]byte{0x85}, client.AppendPingRequest(nil, "req-4", 1)[1:]...)
	typeTwice = append(typeTwice[:len(typeTwice)-len("\xa4body\x80")], "\xa4type\xa4ping"...)
	good := &fakeModel{meta: inference.Metadata{Version: "m-1", Algorithm: "fake", TrainedAt: time.Unix(0, 0)}}
	cases := []struct {
		name        string
		model       inference.Model
		frames      [][]byte
		reqErr      error
		replyType   string
		code        contract.Code
		correlation string
	}{
		{"ping without model", nil, [][]byte{ping}, nil, "pong", "", "req-2"},
		{"ping with model", good, [][]byte{ping}, nil, "pong", "", "req-2"},
		{"predict", good, [][]byte{predict}, nil, "predict_reply", "", "req-1"},
		{"predict without model", nil, [][]byte{predict}, nil, "predict_reply", contract.ModelNotLoaded, "req-1"},
		{"model_info", good, [][]byte{info}, nil, "model_info_reply", "", "req-3"},
		{"model_info without model", nil, [][]byte{info}, nil, "model_info_reply", contract.ModelNotLoaded, "req-3"},
		{"invalid spectrum from the model", &fakeModel{err: fmt.Errorf("%w: wrong length", inference.ErrInvalidSpectrum)}, [][]byte{predict}, nil, "predict_reply", contract.InvalidSpectrum, "req-1"},
		{"invalid spectrum from the codec", good, [][]byte{badSpectrum}, nil, "predict_reply", contract.InvalidSpectrum, "req-1"},
		{"out of range from the model", &fakeModel{err: fmt.Errorf("%w: axis", inference.ErrSpectrumOutOfRange)}, [][]byte{predict}, nil, "predict_reply", contract.SpectrumOutOfRange, "req-1"},
		{"unexpected model error", &fakeModel{err: errors.New("disk on fire")}, [][]byte{predict}, nil, "predict_reply", contract.InternalError, "req-1"},
		{"model panics", &fakeModel{pan: true}, [][]byte{predict}, nil, "predict_reply", contract.InternalError, "req-1"},
		{"ping of another version", good, [][]byte{envelope("v", 2)}, nil, "pong", contract.UnsupportedVersion, "req-4"},
		{"ping without id", good, [][]byte{envelope("id", nil)}, nil, "pong", contract.MalformedMessage, ""},
		{"model_info asking for an unknown field", good, [][]byte{envelope("type", "model_info", "body", map[string]any{"include": []string{"future"}})}, nil, "model_info_reply", "", "req-4"},
		{"model_info with a bad include", good, [][]byte{envelope("type", "model_info", "body", map[string]any{"include": "wavenumbers"})}, nil, "model_info_reply", contract.InvalidRequest, "req-4"},
		{"model_info with a list body", good, [][]byte{envelope("type", "model_info", "body", []int{1})}, nil, "model_info_reply", contract.MalformedMessage, "req-4"},
		{"unknown type", good, [][]byte{envelope("type", "reboot")}, nil, "error", contract.UnknownType, "req-4"},
		{"type not text", good, [][]byte{envelope("type", 7)}, nil, "error", contract.MalformedMessage, "req-4"},
		{"type repeated", good, [][]byte{typeTwice}, nil, "error", contract.MalformedMessage, "req-4"},
		{"truncated predict", good, [][]byte{predict[:len(predict)-3]}, nil, "error", contract.MalformedMessage, "req-1"},
		{"trailing bytes after a ping", good, [][]byte{append(append([]byte(nil), ping...), 0xc0)}, nil, "error", contract.MalformedMessage, "req-2"},
		{"garbage", good, [][]byte{[]byte("\xc1")}, nil, "error", contract.MalformedMessage, ""},
		{"two body frames", good, [][]byte{ping, ping}, nil, "error", contract.MalformedMessage, ""},
		{"no body frame", good, nil, nil, "error", contract.MalformedMessage, ""},
		{"too large", good, nil, zmtp.ErrMessageTooLarge, "error", contract.MessageTooLarge, ""},
		{"large-message buffer in use", good, nil, zmtp.ErrPartialBytesExhausted, "error", contract.ServerBusy, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &lastRequest{}
			h := channel.New(channel.Options{Models: models{tc.model}, ServerVersion: "v-test", Recorder: rec})
			out := h.Handle(context.Background(), zmtp.Request{Frames: tc.frames, Err: tc.reqErr}, nil)
			rec.check(t, tc.replyType, tc.code)
			rep, err := client.DecodeReply(out)
			if err != nil {
				t.Fatalf("reply does not decode: %v", err)
			}
			var code contract.Code
			if rep.Error != nil {
				code = contract.Code(rep.Error.Code)
				if rep.Error.Retryable != (code == contract.ServerBusy) {
					t.Errorf("retryable = %v for %s", rep.Error.Retryable, code)
				}
				if rep.Error.Message == "" {
					t.Error("empty error message")
				}
				if len(rep.Body) != 1 || rep.Body[0] != 0x80 {
					t.Errorf("failure body % x, want an empty map", rep.Body)
				}
			}
			if rep.Type != tc.replyType || code != tc.code || rep.CorrelationID != tc.correlation || rep.Version != 1 || rep.ID == "" {
				t.Fatalf("got %s %s corr=%q v=%d, want %s %s corr=%q", rep.Type, code, rep.CorrelationID, rep.Version, tc.replyType, tc.code, tc.correlation)
			}
			switch {
			case rep.Error != nil:
			case rep.Type == "pong":
				p, err := client.DecodePong(rep.Body)
				if err != nil {
					t.Fatal(err)
				}
				want := ""
				if tc.model != nil {
					want = "m-1"
				}
				if p.ModelVersion != want || p.ProtocolVersion != 1 || p.ServerVersion != "v-test" || p.UptimeSeconds < 0 {
					t.Errorf("pong %+v", p)
				}
			case rep.Type == "predict_reply":
				p, err := client.DecodePredictReply(rep.Body)
				if err != nil {
					t.Fatal(err)
				}
				if p.ModelVersion != "m-1" || p.Concentrations.Value[0] != 7 || p.InferenceMS < 0 {
					t.Errorf("predict reply %+v", p)
				}
			case rep.Type == "model_info_reply":
				mi, err := client.DecodeModelInfoReply(rep.Body)
				if err != nil {
					t.Fatal(err)
				}
				if mi.ActiveVersion != "m-1" || mi.Algorithm != "fake" {
					t.Errorf("model info %+v", mi)
				}
			}
		})
	}
}

// lastRequest is a channel.Recorder that keeps what it was told.
type lastRequest struct {
	answered, predicted int
	typ                 codec.MessageType
	code                contract.Code
	took                time.Duration
}

func (r *lastRequest) Answered(t codec.MessageType, code contract.Code, took time.Duration) {
	r.answered++
	r.typ, r.code, r.took = t, code, took
}

func (r *lastRequest) Predicted(p *inference.Prediction) {
	if p.Confidence.Valid[inference.EPA] {
		r.predicted++
	}
}

// check: the request was recorded once, with the code of its reply and
// the type it was read as (unknown when the reply type is "error"), and
// a successful predict's result once.
func (r *lastRequest) check(t *testing.T, replyType string, code contract.Code) {
	t.Helper()
	want := map[string]codec.MessageType{"pong": codec.TypePing, "predict_reply": codec.TypePredict, "model_info_reply": codec.TypeModelInfo, "error": codec.TypeUnknown}[replyType]
	if r.answered != 1 || r.typ != want || r.code != code || r.took <= 0 {
		t.Errorf("recorded %d requests, last %v %q in %v; want 1, %v %q", r.answered, r.typ, r.code, r.took, want, code)
	}
	wantPredicted := 0
	if replyType == "predict_reply" && code == "" {
		wantPredicted = 1
	}
	if r.predicted != wantPredicted {
		t.Errorf("recorded %d predictions, want %d", r.predicted, wantPredicted)
	}
}

// swappable is a model source whose model can change between calls.
type swappable struct {
	mu sync.Mutex
	m  inference.Model
}

func (s *swappable) Active() inference.Model {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

// TestPredictReadsTheModelOnce: a model swapped in while a predict runs
// does not change that predict's reply.
func TestPredictReadsTheModelOnce(t *testing.T) {
	src := &swappable{}
	swapper := &swapOnPredict{src: src, next: &fakeModel{meta: inference.Metadata{Version: "new"}}}
	swapper.meta.Version = "old"
	src.m = swapper
	h := channel.New(channel.Options{Models: src})
	req := client.AppendPredictRequest(nil, "r", 1, &client.Spectrum{Wavenumbers: []float64{1}, Intensities: []float64{5}}, nil)
	rep := handle(h, req)
	p, err := client.DecodePredictReply(rep.Body)
	if err != nil {
		t.Fatal(err)
	}
	if p.ModelVersion != "old" {
		t.Fatalf("reply names %s; the call started on old", p.ModelVersion)
	}
	if src.Active().Metadata().Version != "new" {
		t.Fatal("the swap did not happen")
	}
}

// swapOnPredict swaps the source's model in the middle of its own Predict.
type swapOnPredict struct {
	fakeModel
	src  *swappable
	next inference.Model
}

func (m *swapOnPredict) Predict(s *inference.Spectrum, out *inference.Prediction) error {
	m.src.mu.Lock()
	m.src.m = m.next
	m.src.mu.Unlock()
	return m.fakeModel.Predict(s, out)
}

// BenchmarkPredict2048 is the server-side cost of one predict: decode the
// request, validate the spectrum, predict with a trained PLS model,
// compute the diagnostics and confidence, encode the reply.
func BenchmarkPredict2048(b *testing.B) {
	benchPredict(b, benchModel(b))
}

// BenchmarkPredict2048Metrics is BenchmarkPredict2048 recording into the
// server's metrics (counts, latency histograms, reduced T2 and Q,
// confidence per analyte): the difference is the cost of metrics per
// predict (goal: at most 1 us).
func BenchmarkPredict2048Metrics(b *testing.B) {
	benchPredictRecorded(b, benchModel(b), metrics.New(metrics.Sources{}).Channel())
}

// benchModel is the PLS model both predict benchmarks measure, trained on
// a synthetic data set so the two runs compare like with like.
func benchModel(b *testing.B) inference.Model {
	b.Helper()
	ds := synth.New(synth.Config{Seed: 4}).Dataset(150)
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	res.Params.Meta.Version = "bench"
	model, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return model
}

// benchPredict measures the channel's handling of one predict request
// for a synthetic spectrum with model active.
func benchPredict(b *testing.B, model inference.Model) { benchPredictRecorded(b, model, nil) }

// benchPredictRecorded is benchPredict with rec recording (nil: none).
func benchPredictRecorded(b *testing.B, model inference.Model, rec channel.Recorder) {
	benchPredictWith(b, model, rec, nil)
}

// benchPredictWith is benchPredict with rec recording and log logging
// (nil: none).
func benchPredictWith(b *testing.B, model inference.Model, rec channel.Recorder, log channel.PredictionLog) {
	benchPredictOpts(b, model, rec, log, nil)
}

func benchPredictLive(b *testing.B, feed channel.LiveFeed) {
	benchPredictOpts(b, benchModel(b), nil, nil, feed)
}

func benchPredictOpts(b *testing.B, model inference.Model, rec channel.Recorder, log channel.PredictionLog, feed channel.LiveFeed) {
	opts := channel.Options{Models: models{model}, ServerVersion: "bench", Log: log, Live: feed}
	if rec != nil {
		opts.Recorder = rec
	}
	h := channel.New(opts)
	s := synth.New(synth.Config{Seed: 5}).Next()
	req := client.AppendPredictRequest(nil, "6f1c5e0a-6b1e-4a44-9a6c-2f7f3a3b0c11", 1,
		&client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: 1},
		&client.ScanContext{BatchID: "B-1", Port: "P1", ColumnIndex: 2})
	frames := [][]byte{req}
	dst := make([]byte, 0, 4096)
	if rep := handle(h, req); rep.Error != nil {
		b.Fatalf("predict: %v", rep.Error)
	}
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	for b.Loop() {
		dst = h.Handle(context.Background(), zmtp.Request{Frames: frames}, dst[:0])
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/predict")
	b.ReportMetric(float64(cputime.Process()-cpu0)/1e3/float64(b.N), "cpu-us/predict")
}

// TestHandlerModelInfoAxis: model_info gives the active model's axis when
// body.include asks for it, and only then.
func TestHandlerModelInfoAxis(t *testing.T) {
	wn := []float64{200, 200.5, 201}
	m := &fakeModel{meta: inference.Metadata{Version: "m-1", Algorithm: "fake", TrainedAt: time.Unix(0, 0), Wavenumbers: wn}}
	h := channel.New(channel.Options{Models: models{m}})
	for _, tc := range []struct {
		name string
		body any
		want []any
	}{
		{"asked", map[string]any{"include": []string{"wavenumbers"}}, []any{200.0, 200.5, 201.0}},
		{"not asked", map[string]any{}, nil},
		{"no body", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := map[string]any{"v": 1, "type": "model_info", "id": "i-1"}
			if tc.body != nil {
				req["body"] = tc.body
			}
			frame, err := msgpack.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			rep := handle(h, frame)
			if rep.Error != nil || rep.Type != "model_info_reply" {
				t.Fatalf("reply %s %+v", rep.Type, rep.Error)
			}
			var body map[string]any
			if err := msgpack.Unmarshal(rep.Body, &body); err != nil {
				t.Fatal(err)
			}
			got, present := body["wavenumbers"]
			if tc.want == nil {
				if present {
					t.Fatalf("wavenumbers %v sent unasked", got)
				}
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || body["wavenumber_count"] == nil {
				t.Fatalf("wavenumbers %v, want %v", got, tc.want)
			}
		})
	}
}
