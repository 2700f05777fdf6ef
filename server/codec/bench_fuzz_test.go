package codec

import (
	"errors"
	"testing"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/server/codec/wire"
	"ramanserve/server/contract"
)

func BenchmarkDecodePredict2048(b *testing.B) {
	data := pack(b, predictEnvelope("0b7f3c9e-1f6a-4a53-9d0e-4f4f3b1f2a10", predictBody(axis(2048), intensities(2048))))
	var req Request
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeRequest(data, &req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendPredictReply(b *testing.B) {
	var p inference.Prediction
	for a := inference.Analyte(0); a < inference.NumAnalytes; a++ {
		p.Concentrations.Set(a, 1.25)
		p.Confidence.Set(a, 0.9)
	}
	p.Diagnostics = inference.Diagnostics{HasT2: true, HasQ: true, HasQLim: true}
	g := NewIDGenerator()
	res := PredictResult{ModelVersion: "v20240501-1", InferenceMS: 0.02, Prediction: &p}
	buf := make([]byte, 0, 1024)
	corr := []byte("0b7f3c9e-1f6a-4a53-9d0e-4f4f3b1f2a10")
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPredictReply(buf[:0], ReplyMeta{ID: g.Next(), CorrelationID: corr, TS: 1.7e9}, &res)
	}
}

// FuzzDecodeRequest checks that no input panics the decoder, that every
// failure is a classified *contract.Error, that what it allocates is bounded by the
// input size, and that a success is internally consistent.
func FuzzDecodeRequest(f *testing.F) {
	f.Add(pack(f, predictEnvelope("abc", predictBody([]float64{1, 2, 3}, []any{1, 2.5, float32(3)}))))
	f.Add(pack(f, ordered{"body", predictBody([]int{1}, []int{2}), "v", 1, "type", "predict", "id", "x"}))
	f.Add(pack(f, ordered{"v", 1, "type", "ping", "id", "p", "ts", 1.0, "body", nil}))
	f.Add(pack(f, ordered{"v", 2, "type", "model_info", "id", []byte("p"), "x", ordered{"y", []any{nil, true, "s"}}}))
	f.Add(pack(f, predictEnvelope("abc", predictBody([]any{1, nil}, []any{"a", map[string]int{}}))))
	f.Add(client.AppendPredictRequest(nil, "id", 1, &client.Spectrum{Wavenumbers: []float64{1}, Intensities: []float64{2}}, &client.ScanContext{Port: "p"}))
	f.Add(pack(f, predictEnvelope("o", append(predictBody([]float64{1}, []float64{2}), "options", ordered{"contributions", 10}))))
	f.Add(pack(f, predictEnvelope("o", ordered{"options", ordered{"x", nil, "contributions", 64.0}, "spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{2}}})))
	f.Add(pack(f, predictEnvelope("o", append(predictBody([]float64{1}, []float64{2}), "options", ordered{"contributions", 65, "contributions", -1}))))
	f.Add(pack(f, ordered{"v", 1, "type", "model_info", "id", "m", "body", ordered{"include", []string{"x", "wavenumbers"}}}))
	f.Add(pack(f, ordered{"body", ordered{"include", []any{"wavenumbers", 1}}, "v", 1, "type", "model_info", "id", "m"}))
	f.Add(pack(f, ordered{"v", 1, "type", "model_info", "id", "m", "body", ordered{"include", raw{wire.CodeArray32, 0, 0, 0, 16}}}))
	f.Add([]byte{wire.CodeArray32, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x81, 0xa1, 'v', wire.CodeExt32, 0xff, 0xff, 0xff, 0xff, 1})

	f.Fuzz(func(t *testing.T, data []byte) {
		var req Request
		err := DecodeRequest(data, &req)
		s := req.Predict.Spectrum
		// Every element occupies at least one input byte, so decoded arrays
		// can never exceed the input length.
		if cap(s.Wavenumbers) > len(data) || cap(s.Intensities) > len(data) {
			t.Fatalf("allocated %d/%d elements for %d input bytes", cap(s.Wavenumbers), cap(s.Intensities), len(data))
		}
		if len(req.ID) > MaxIDLength {
			t.Fatalf("id of %d bytes accepted", len(req.ID))
		}
		if err != nil {
			var e *contract.Error
			if !errors.As(err, &e) {
				t.Fatalf("unclassified error %T %v", err, err)
			}
			switch e.Code {
			case contract.MalformedMessage, contract.UnsupportedVersion, contract.UnknownType, contract.InvalidSpectrum, contract.InvalidRequest:
			default:
				t.Fatalf("unexpected code %s", e.Code)
			}
			return
		}
		if req.Version != ProtocolVersion || req.Type == TypeUnknown || len(req.ID) == 0 {
			t.Fatalf("accepted v=%d type=%v id=%q", req.Version, req.Type, req.ID)
		}
		if o := req.Predict.Options; o.Contributions < 0 || o.Contributions > inference.MaxTopContributions || (!o.HasContributions && o.Contributions != 0) {
			t.Fatalf("accepted options %+v", o)
		}
		if req.Type != TypeModelInfo && req.ModelInfo.Wavenumbers {
			t.Fatalf("a %v request asks for the axis", req.Type)
		}
		if req.Type == TypePredict {
			if len(s.Intensities) == 0 || len(s.Wavenumbers) != len(s.Intensities) {
				t.Fatalf("accepted spectrum %d/%d", len(s.Wavenumbers), len(s.Intensities))
			}
			for i := range s.Intensities {
				if x, w := s.Intensities[i], s.Wavenumbers[i]; x-x != 0 || w-w != 0 {
					t.Fatalf("accepted non-finite value at %d", i)
				}
			}
		}
		// Decoding is deterministic: a reused Request gives the same answer.
		var again Request
		again.Predict.Spectrum.Wavenumbers = make([]float64, 3, 100)
		if err2 := DecodeRequest(data, &again); err2 != nil || string(again.ID) != string(req.ID) || again.Type != req.Type || again.Predict.Options != req.Predict.Options || again.ModelInfo != req.ModelInfo {
			t.Fatalf("second decode differs: %v", err2)
		}
	})
}
