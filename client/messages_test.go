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
