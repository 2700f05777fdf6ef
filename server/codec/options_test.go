package codec

import (
	"errors"
	"math"
	"strings"
	"testing"

	"ramanserve/inference"
	"ramanserve/server/contract"

	"github.com/vmihailenco/msgpack/v5"
)

func withOptions(options any) []byte {
	body := append(predictBody([]float64{1, 2, 3}, []float64{4, 5, 6}), "options", options)
	b, err := msgpack.Marshal(predictEnvelope("abc", body))
	if err != nil {
		panic(err)
	}
	return b
}

// TestDecodePredictOptions: body.options.contributions is K from 0 to 64,
// given as any int or an integral float; nil counts as absent; unknown
// option keys are ignored as everywhere in the envelope.
func TestDecodePredictOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options any
		k       int
		has     bool
	}{
		{"no options key", nil, 0, false},
		{"empty options", ordered{}, 0, false},
		{"nil contributions", ordered{"contributions", nil}, 0, false},
		{"zero", ordered{"contributions", 0}, 0, true},
		{"ten", ordered{"contributions", 10}, 10, true},
		{"the most", ordered{"contributions", 64}, 64, true},
		{"uint16 form", ordered{"contributions", uint16(12)}, 12, true},
		{"integral float", ordered{"contributions", 10.0}, 10, true},
		{"float32", ordered{"contributions", float32(3)}, 3, true},
		{"unknown option beside", ordered{"explain_more", "x", "contributions", 5}, 5, true},
		{"non-text key", ordered{7, 8, "contributions", 1}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var data []byte
			if tc.options == nil {
				data = pack(t, predictEnvelope("abc", predictBody([]float64{1, 2, 3}, []float64{4, 5, 6})))
			} else {
				data = withOptions(tc.options)
			}
			var req Request
			if err := DecodeRequest(data, &req); err != nil {
				t.Fatal(err)
			}
			if o := req.Predict.Options; o.Contributions != tc.k || o.HasContributions != tc.has {
				t.Fatalf("options %+v, want K=%d has=%v", o, tc.k, tc.has)
			}
		})
	}
	// nil options, spelled out.
	var req Request
	if err := DecodeRequest(pack(t, predictEnvelope("abc", append(predictBody([]int{1}, []int{2}), "options", nil))), &req); err != nil || req.Predict.Options.HasContributions {
		t.Fatalf("nil options: %v %+v", err, req.Predict.Options)
	}
	// A reused Request forgets the options of the previous one.
	if err := DecodeRequest(withOptions(ordered{"contributions", 9}), &req); err != nil {
		t.Fatal(err)
	}
	if err := DecodeRequest(pack(t, predictEnvelope("abc", predictBody([]int{1}, []int{2}))), &req); err != nil || req.Predict.Options != (PredictOptions{}) {
		t.Fatalf("reuse kept %+v (%v)", req.Predict.Options, err)
	}
}

// TestDecodePredictOptionsErrors: a K out of range or of the wrong type,
// options of the wrong type and repeated keys are INVALID_REQUEST, with
// the id kept; of a bad spectrum and bad options the first in the bytes
// is reported.
func TestDecodePredictOptionsErrors(t *testing.T) {
	badSpectrumFirst := pack(t, predictEnvelope("abc", ordered{
		"spectrum", ordered{"wavenumbers", []float64{1}, "intensities", []any{"x"}},
		"options", ordered{"contributions", 65}}))
	optionsFirst := pack(t, predictEnvelope("abc", ordered{
		"options", ordered{"contributions", 65},
		"spectrum", ordered{"wavenumbers", []float64{1}, "intensities", []any{"x"}}}))
	for _, tc := range []struct {
		name    string
		data    []byte
		code    contract.Code
		message string
	}{
		{"65", withOptions(ordered{"contributions", 65}), contract.InvalidRequest, "from 0 to 64, got 65"},
		{"negative", withOptions(ordered{"contributions", -1}), contract.InvalidRequest, "got -1"},
		{"fraction", withOptions(ordered{"contributions", 2.5}), contract.InvalidRequest, "got 2.5"},
		{"NaN", withOptions(ordered{"contributions", math.NaN()}), contract.InvalidRequest, "got NaN"},
		{"huge unsigned", withOptions(ordered{"contributions", uint64(math.MaxUint64)}), contract.InvalidRequest, "from 0 to 64"},
		{"string", withOptions(ordered{"contributions", "10"}), contract.InvalidRequest, "must be an integer, got string"},
		{"bool", withOptions(ordered{"contributions", true}), contract.InvalidRequest, "must be an integer, got boolean"},
		{"options a list", withOptions([]int{10}), contract.InvalidRequest, "body.options must be a map, got array"},
		{"options a number", withOptions(10), contract.InvalidRequest, "body.options must be a map"},
		{"repeated contributions", withOptions(ordered{"contributions", 1, "contributions", 2}), contract.InvalidRequest, "duplicate key body.options.contributions"},
		{"repeated options", pack(t, predictEnvelope("abc", append(predictBody([]int{1}, []int{2}), "options", ordered{}, "options", ordered{}))), contract.InvalidRequest, "duplicate key body.options"},
		{"bad spectrum met first", badSpectrumFirst, contract.InvalidSpectrum, "intensities[0] is string"},
		{"bad options met first", optionsFirst, contract.InvalidRequest, "got 65"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			err := DecodeRequest(tc.data, &req)
			var e *contract.Error
			if !errors.As(err, &e) {
				t.Fatalf("want %s, got %v", tc.code, err)
			}
			if e.Code != tc.code || !strings.Contains(e.Message, tc.message) || e.Retryable() {
				t.Errorf("got %s %q (retryable %v), want %s containing %q", e.Code, e.Message, e.Retryable(), tc.code, tc.message)
			}
			if string(req.ID) != "abc" || req.Type != TypePredict {
				t.Errorf("id %q type %v: the reply could not be correlated", req.ID, req.Type)
			}
		})
	}
}

func sampleContributions(k, regions int) *inference.Contributions {
	c := &inference.Contributions{HasT2: true, HasQ: true}
	for i, s := range []*inference.ContributionSummary{&c.Q, &c.T2} {
		s.Total = float64(10 * (i + 1))
		for j := range k {
			s.Top = append(s.Top, inference.VariableContribution{Wavenumber: 1000 + float64(j), Value: float64(k - j)})
		}
		for r := range regions {
			s.Regions = append(s.Regions, inference.RegionContribution{Region: [2]float64{float64(100 * r), float64(100*r + 50)}, Value: s.Total / float64(regions)})
		}
	}
	return c
}

// TestAppendPredictReplyContributions: body.contributions as the reference
// decoder reads it: q and t2, each {total, top, regions}, every number a
// float64; top beyond 15 entries is an array16.
func TestAppendPredictReplyContributions(t *testing.T) {
	p := goldenPredictions()["full"]
	for _, k := range []int{0, 10, 64} {
		c := sampleContributions(k, 2)
		data := AppendPredictReply(nil, testMeta, &PredictResult{ModelVersion: "v7", InferenceMS: 0.125, Prediction: p, Contributions: c})
		body, e := checkEnvelope(t, unpack(t, data), "predict_reply")
		if e != nil {
			t.Fatalf("error = %#v", e)
		}
		if len(body) != 6 {
			t.Fatalf("K=%d: body has %d keys, want 6", k, len(body))
		}
		got, ok := body["contributions"].(map[string]any)
		if !ok || len(got) != 2 {
			t.Fatalf("K=%d: contributions = %#v", k, body["contributions"])
		}
		for stat, want := range map[string]*inference.ContributionSummary{"q": &c.Q, "t2": &c.T2} {
			s := got[stat].(map[string]any)
			if len(s) != 3 || s["total"] != want.Total {
				t.Fatalf("K=%d %s: %#v", k, stat, s)
			}
			top := s["top"].([]any)
			if len(top) != k {
				t.Fatalf("K=%d %s: %d top entries", k, stat, len(top))
			}
			for j, v := range top {
				m := v.(map[string]any)
				if len(m) != 2 || m["wavenumber"] != want.Top[j].Wavenumber || m["value"] != want.Top[j].Value {
					t.Fatalf("K=%d %s top %d: %#v", k, stat, j, m)
				}
			}
			regions := s["regions"].([]any)
			for r, v := range regions {
				m := v.(map[string]any)
				bounds := m["region"].([]any)
				if len(m) != 2 || bounds[0] != want.Regions[r].Region[0] || bounds[1] != want.Regions[r].Region[1] || m["value"] != want.Regions[r].Value {
					t.Fatalf("K=%d %s region %d: %#v", k, stat, r, m)
				}
			}
		}
	}
	// A model with Q only reports q only.
	c := sampleContributions(3, 1)
	c.HasT2 = false
	body, _ := checkEnvelope(t, unpack(t, AppendPredictReply(nil, testMeta, &PredictResult{Prediction: p, Contributions: c})), "predict_reply")
	if got := body["contributions"].(map[string]any); len(got) != 1 || got["q"] == nil {
		t.Fatalf("Q only: %#v", got)
	}
}

// BenchmarkAppendPredictReplyContributions is BenchmarkAppendPredictReply
// with K = 10 and one region: the encoding's share of an explained
// prediction.
func BenchmarkAppendPredictReplyContributions(b *testing.B) {
	p := goldenPredictions()["full"]
	res := PredictResult{ModelVersion: "v20240501-1", InferenceMS: 0.02, Prediction: p, Contributions: sampleContributions(10, 1)}
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPredictReply(buf[:0], testMeta, &res)
	}
}
