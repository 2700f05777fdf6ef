// Package client is the Go client of ramanserve, for both of its channels.
//
// The prediction channel (ZeroMQ + MessagePack, api/messages.md) is
// PredictionClient: Ping, Predict and ModelInfo on a REQ socket, with the
// Lazy Pirate retry of api/messages.md. With PredictionOptions.Curve it
// speaks CurveZMQ (RFC 26; api/messages.md section 1.1) over a REQ
// connection of its own, since go-zeromq/zmq4 has no CURVE; keys are
// ramanserve/server/zmtp/curve's. The encoders and decoders it uses
// (AppendPredictRequest, DecodeReply, ...) are exported for tools that need
// to send or read raw frames.
//
// The management channel (HTTP/JSON, api/openapi.yaml) is Management: the
// client oapi-codegen generates from the contract (package gen, every
// endpoint) plus StartTraining, which streams a training upload as
// multipart/form-data from an io.Reader.
//
// Error answers of both channels come back as *Error, carrying the
// contract's code and whether sending the same request again may help.
package client
