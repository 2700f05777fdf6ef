package codec

import (
	"bytes"
	"os"
	"testing"

	"ramanserve/inference"
)

// goldenPredictions are the replies whose bytes testdata holds, as the
// server wrote them before predict options existed.
func goldenPredictions() map[string]*inference.Prediction {
	full := &inference.Prediction{}
	full.Concentrations.Set(inference.EPA, 412.31)
	full.Concentrations.Set(inference.DHA, 268.04)
	full.Concentrations.Set(inference.DPA, 41.77)
	full.Confidence.Set(inference.EPA, 0.93)
	full.Confidence.Set(inference.DHA, 0.91)
	full.Confidence.Set(inference.DPA, 0.88)
	full.Diagnostics = inference.Diagnostics{HasT2: true, T2: 3.1, T2Limit: 17.2, ReducedT2: 3.1 / 17.2, Leverage: 0.0026,
		HasQ: true, Q: 0.0021, HasQLim: true, QLimit: 0.0047, ReducedQ: 0.0021 / 0.0047}
	qOnly := &inference.Prediction{}
	qOnly.Concentrations.Set(inference.DHA, 3)
	qOnly.Diagnostics = inference.Diagnostics{HasQ: true, Q: 2}
	return map[string]*inference.Prediction{"full": full, "q_only": qOnly}
}

// TestPredictReplyWithoutOptionsIsUnchanged: a predict that asks for no
// contributions gets, byte for byte, the reply of the server before
// options existed (testdata/predict_reply_*.msgpack were written by it).
func TestPredictReplyWithoutOptionsIsUnchanged(t *testing.T) {
	for name, p := range goldenPredictions() {
		want, err := os.ReadFile("testdata/predict_reply_" + name + ".msgpack")
		if err != nil {
			t.Fatal(err)
		}
		got := AppendPredictReply(nil, testMeta, &PredictResult{ModelVersion: "pls-20261122-101500", InferenceMS: 0.021, Prediction: p})
		if !bytes.Equal(got, want) {
			t.Errorf("%s: reply changed:\n got % x\nwant % x", name, got, want)
		}
	}
}
