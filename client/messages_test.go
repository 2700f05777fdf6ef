package client_test

import (
	"errors"
	"testing"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/server/codec"
	"ramanserve/server/contract"
)

// FuzzDecodeReply checks that the reply decoders never panic and that
// every refusal wraps ErrBadReply. The seeds are the server's own replies.
func FuzzDecodeReply(f *testing.F) {
	meta := codec.ReplyMeta{ID: codec.NewIDGenerator().Next(), CorrelationID: []byte("c"), TS: 1}
	var p inference.Prediction
	p.Concentrations.Set(inference.EPA, 1)
	f.Add(codec.AppendPredictReply(nil, meta, &codec.PredictResult{ModelVersion: "v", Prediction: &p}))
	f.Add(codec.AppendPredictReply(nil, meta, &codec.PredictResult{ModelVersion: "v", Prediction: &p, Contributions: sampleContributions()}))
	f.Add(codec.AppendErrorReply(nil, meta, codec.TypePredict, contract.Errorf(contract.InternalError, "x")))
	f.Add(codec.AppendErrorReply(nil, meta, codec.TypeUnknown, contract.Errorf(contract.UnknownType, "x")))
	f.Add(codec.AppendPong(nil, meta, &codec.Pong{ServerVersion: "s"}))
	f.Add(codec.AppendModelInfoReply(nil, meta, &inference.Metadata{Version: "v", Wavenumbers: []float64{1, 2}}, nil))
	f.Add(codec.AppendModelInfoReply(nil, meta, &inference.Metadata{Version: "v", Wavenumbers: []float64{1, 2}}, &codec.ModelInfoBody{Wavenumbers: true}))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := client.DecodeReply(data)
		if err != nil {
			if !errors.Is(err, client.ErrBadReply) {
				t.Fatalf("error not wrapping ErrBadReply: %v", err)
			}
			return
		}
		if rep.Body != nil {
			_, _ = client.DecodePong(rep.Body)
			_, _ = client.DecodePredictReply(rep.Body)
			_, _ = client.DecodeModelInfoReply(rep.Body)
		}
	})
}

func sampleContributions() *inference.Contributions {
	return &inference.Contributions{
		HasT2: true, T2: inference.ContributionSummary{Total: 3, Top: []inference.VariableContribution{{Wavenumber: 1650, Value: 2}},
			Regions: []inference.RegionContribution{{Region: [2]float64{600, 1800}, Value: 3}}},
		HasQ: true, Q: inference.ContributionSummary{Total: 0.5, Top: []inference.VariableContribution{{Wavenumber: 1655, Value: 0.25}, {Wavenumber: 1660, Value: 0.125}},
			Regions: []inference.RegionContribution{{Region: [2]float64{600, 1800}, Value: 0.5}}},
	}
}

// TestDecodePredictReplyContributions: the contributions the server's
// codec writes read back into the client's typed fields.
func TestDecodePredictReplyContributions(t *testing.T) {
	meta := codec.ReplyMeta{ID: codec.NewIDGenerator().Next(), CorrelationID: []byte("c"), TS: 1}
	var p inference.Prediction
	p.Concentrations.Set(inference.EPA, 1)
	rep, err := client.DecodeReply(codec.AppendPredictReply(nil, meta, &codec.PredictResult{ModelVersion: "v", Prediction: &p, Contributions: sampleContributions()}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.DecodePredictReply(rep.Body)
	if err != nil {
		t.Fatal(err)
	}
	c := got.Contributions
	if c == nil || c.T2 == nil || c.Q == nil || c.T2.Total != 3 || len(c.Q.Top) != 2 || c.Q.Top[1] != (client.VariableContribution{Wavenumber: 1660, Value: 0.125}) ||
		len(c.Q.Regions) != 1 || c.Q.Regions[0] != (client.RegionContribution{Region: [2]float64{600, 1800}, Value: 0.5}) {
		t.Fatalf("contributions read back as %+v", c)
	}
	plain, err := client.DecodeReply(codec.AppendPredictReply(nil, meta, &codec.PredictResult{ModelVersion: "v", Prediction: &p}))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := client.DecodePredictReply(plain.Body); err != nil || got.Contributions != nil {
		t.Fatalf("a reply without contributions reads %+v, %v", got, err)
	}
}
