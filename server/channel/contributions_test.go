package channel_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/platform/cputime"
	"ramanserve/server/channel"
	"ramanserve/server/contract"
	"ramanserve/server/zmtp"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// predictWithOptions packs a 2048-point predict whose body carries
// options (nil: no options key).
func predictWithOptions(t testing.TB, id string, options map[string]any) []byte {
	t.Helper()
	body := map[string]any{"spectrum": map[string]any{
		"wavenumbers": synth.Axis(),
		"intensities": synth.New(synth.Config{Seed: 5}).Next().Intensities,
	}}
	if options != nil {
		body["options"] = options
	}
	b, err := msgpack.Marshal(map[string]any{"v": 1, "type": "predict", "id": id, "ts": 1.5, "body": body})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replyBody decodes a reply with the reference decoder and returns its
// body and error.
func replyBody(t *testing.T, reply []byte) (map[string]any, map[string]any) {
	t.Helper()
	var m map[string]any
	if err := msgpack.Unmarshal(reply, &m); err != nil {
		t.Fatal(err)
	}
	body, _ := m["body"].(map[string]any)
	e, _ := m["error"].(map[string]any)
	return body, e
}

// TestPredictContributions: with options.contributions the reply adds
// contributions {q, t2} whose totals are the diagnostics' q and t2, whose
// regions add up to them and whose top lists have K entries; without,
// the body has its five keys.
func TestPredictContributions(t *testing.T) {
	h := channel.New(channel.Options{Models: activeModel{trainedModel(t, "pls-c")}, ServerVersion: "devel"})
	for _, k := range []int{0, 10, 64} {
		body, e := replyBody(t, h.Handle(context.Background(), zmtp.Request{Frames: [][]byte{predictWithOptions(t, "a", map[string]any{"contributions": k})}}, nil))
		if e != nil {
			t.Fatalf("K=%d: %v", k, e)
		}
		diag := body["diagnostics"].(map[string]any)
		c := body["contributions"].(map[string]any)
		for _, stat := range []string{"q", "t2"} {
			s := c[stat].(map[string]any)
			if s["total"] != diag[stat] {
				t.Errorf("K=%d %s: total %v, diagnostics %v", k, stat, s["total"], diag[stat])
			}
			if top := s["top"].([]any); len(top) != k {
				t.Errorf("K=%d %s: %d top entries", k, stat, len(top))
			}
			var sum float64
			for _, r := range s["regions"].([]any) {
				sum += r.(map[string]any)["value"].(float64)
			}
			total := s["total"].(float64)
			if math.Abs(sum-total) > 1e-9*total {
				t.Errorf("K=%d %s: regions sum to %v, total %v", k, stat, sum, total)
			}
		}
	}
	for _, options := range []map[string]any{nil, {}, {"contributions": nil}} {
		body, e := replyBody(t, h.Handle(context.Background(), zmtp.Request{Frames: [][]byte{predictWithOptions(t, "b", options)}}, nil))
		if e != nil || len(body) != 5 || body["contributions"] != nil {
			t.Errorf("options %v: body %v, error %v", options, body, e)
		}
	}
}

// TestPredictContributionsRefused: K out of range, and contributions from
// a model that cannot give them, are INVALID_REQUEST in a predict_reply;
// no model loaded is still MODEL_NOT_LOADED.
func TestPredictContributionsRefused(t *testing.T) {
	loaded := activeModel{trainedModel(t, "pls-c")}
	bare := &fakeModel{meta: inference.Metadata{Version: "fake-1"}}
	for _, tc := range []struct {
		name    string
		models  channel.Models
		options map[string]any
		code    contract.Code
		message string
	}{
		{"K 65", loaded, map[string]any{"contributions": 65}, contract.InvalidRequest, "from 0 to 64"},
		{"K -3", loaded, map[string]any{"contributions": -3}, contract.InvalidRequest, "from 0 to 64"},
		{"K a string", loaded, map[string]any{"contributions": "ten"}, contract.InvalidRequest, "must be an integer"},
		{"options a list", loaded, map[string]any{"contributions": []int{1}}, contract.InvalidRequest, "must be an integer"},
		{"a model without contributions", activeModel{bare}, map[string]any{"contributions": 10}, contract.InvalidRequest, "fake-1"},
		{"a PLS model without diagnostics", activeModel{withoutDiagnostics(t)}, map[string]any{"contributions": 10}, contract.InvalidRequest, "neither T2 nor Q"},
		{"no model", activeModel{nil}, map[string]any{"contributions": 10}, contract.ModelNotLoaded, "no model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := channel.New(channel.Options{Models: tc.models, ServerVersion: "devel"})
			rep := handle(h, predictWithOptions(t, "r-1", tc.options))
			if rep.Type != "predict_reply" || rep.CorrelationID != "r-1" || rep.Error == nil {
				t.Fatalf("reply %+v", rep)
			}
			if rep.Error.Code != string(tc.code) || !strings.Contains(rep.Error.Message, tc.message) || rep.Error.Retryable {
				t.Fatalf("error %+v, want %s containing %q", rep.Error, tc.code, tc.message)
			}
		})
	}
}

// withoutDiagnostics is the documentation's model stripped of what T2 and
// Q need.
func withoutDiagnostics(t *testing.T) inference.Model {
	t.Helper()
	res, err := trainer.Train(context.Background(), synth.New(synth.Config{Seed: 4}).Dataset(60), trainer.Options{Seed: 1, MaxComponents: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Params
	p.Rotations, p.Loadings, p.ScoreVariance, p.CalibrationQ, p.HeldOutT2, p.HeldOutQ = nil, nil, nil, nil, nil, nil
	p.Meta.LatentComponents = 0
	m, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkPredict2048Contributions is BenchmarkPredict2048 asking for
// the top 10 contributions: the same request bytes (keys in the order the
// Go client writes them, which the decoder reads in one pass) with
// options {contributions: 10} added at the end of the body. The
// difference is what explaining a prediction costs server-side (goal: at
// most 15 us).
func BenchmarkPredict2048Contributions(b *testing.B) {
	h := channel.New(channel.Options{Models: models{benchModel(b)}, ServerVersion: "bench"})
	s := synth.New(synth.Config{Seed: 5}).Next()
	plain := client.AppendPredictRequest(nil, "6f1c5e0a-6b1e-4a44-9a6c-2f7f3a3b0c11", 1,
		&client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: 1},
		&client.ScanContext{BatchID: "B-1", Port: "P1", ColumnIndex: 2})
	req := appendOptionsToLastBody(b, plain, 10)
	frames := [][]byte{req}
	dst := make([]byte, 0, 8192)
	if body, e := replyBodyB(b, h.Handle(context.Background(), zmtp.Request{Frames: frames}, nil)); e != nil || body["contributions"] == nil {
		b.Fatalf("predict: %v %v", e, body)
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

// appendOptionsToLastBody adds options {contributions: k} to a request
// whose body map, of spectrum and context (fixmap of 2), ends the message.
func appendOptionsToLastBody(b *testing.B, req []byte, k int) []byte {
	head := []byte("\xa4body\x82")
	i := bytes.LastIndex(req, head)
	if i < 0 {
		b.Fatal("no body of two keys in the request")
	}
	out := bytes.Clone(req)
	out[i+len(head)-1] = 0x83
	out = append(out, "\xa7options\x81\xadcontributions"...)
	return append(out, byte(k))
}

func replyBodyB(b *testing.B, reply []byte) (map[string]any, any) {
	var m map[string]any
	if err := msgpack.Unmarshal(reply, &m); err != nil {
		b.Fatal(err)
	}
	body, _ := m["body"].(map[string]any)
	return body, m["error"]
}
