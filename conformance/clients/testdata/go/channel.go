package main

// Compiled only in the skip-prune build, where oapi-codegen keeps the
// schemas no HTTP path references: the channel messages are usable Go
// types, and a reply's body is picked by its type.

import (
	"encoding/json"

	"smoke/ramanapi"
)

// predictRequest is a predict message as a Go client would build it.
func predictRequest(id string, wn, in []float64) (ramanapi.ChannelRequest, error) {
	var req ramanapi.ChannelRequest
	err := req.FromPredictRequest(ramanapi.PredictRequest{
		V:    ramanapi.ProtocolVersion(1),
		Type: ramanapi.PredictRequestType("predict"),
		Id:   id,
		Body: ramanapi.PredictRequestBody{Spectrum: ramanapi.Spectrum{Wavenumbers: wn, Intensities: in}},
	})
	return req, err
}

// concentrations reads a predict reply's concentrations, decoded from
// JSON (the same shape as the MessagePack map).
func concentrations(raw []byte) (*ramanapi.ComponentValues, error) {
	var rep ramanapi.ChannelReply
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, err
	}
	pr, err := rep.AsPredictReply()
	if err != nil || pr.Error != nil {
		return nil, err
	}
	body, err := pr.Body.AsPredictReplyBody()
	if err != nil {
		return nil, err
	}
	return &body.Concentrations, nil
}
