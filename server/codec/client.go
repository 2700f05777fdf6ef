package codec

import (
	"errors"
	"fmt"
	"time"

	"ramanserve/inference"
)

// This file is the client half of the codec: encoding requests and decoding
// replies. Clients are not the server's hot path, so decoding favours
// strictness and clear errors over zero allocation.

// Spectrum is the body.spectrum of a predict request as a client sends it.
type Spectrum struct {
	Wavenumbers   []float64
	Intensities   []float64
	Channel       int64
	IntegrationMS float64
	ScanSeq       int64
}

// ScanContext is the body.context of a predict request.
type ScanContext struct {
	BatchID     string
	Port        string
	ColumnIndex int64
}

func appendRequestHead(dst []byte, typ, id string, ts float64) []byte {
	dst = appendMapHeader(dst, 5)
	dst = appendString(dst, "v")
	dst = appendInt(dst, ProtocolVersion)
	dst = appendString(dst, "type")
	dst = appendString(dst, typ)
	dst = appendString(dst, "id")
	dst = appendString(dst, id)
	dst = appendString(dst, "ts")
	dst = appendFloat64(dst, ts)
	return appendString(dst, "body")
}

// AppendPingRequest appends a ping request with an empty body.
func AppendPingRequest(dst []byte, id string, ts float64) []byte {
	return appendMapHeader(appendRequestHead(dst, TypeNamePing, id, ts), 0)
}

// AppendModelInfoRequest appends a model_info request with an empty body.
func AppendModelInfoRequest(dst []byte, id string, ts float64) []byte {
	return appendMapHeader(appendRequestHead(dst, TypeNameModelInfo, id, ts), 0)
}

// AppendPredictRequest appends a predict request. Arrays are written as
// float64, channel, scan_seq and column_index as integers. A nil c leaves
// the optional context out.
func AppendPredictRequest(dst []byte, id string, ts float64, s *Spectrum, c *ScanContext) []byte {
	dst = appendRequestHead(dst, TypeNamePredict, id, ts)
	if c == nil {
		dst = appendMapHeader(dst, 1)
	} else {
		dst = appendMapHeader(dst, 2)
	}
	dst = appendString(dst, "spectrum")
	dst = appendMapHeader(dst, 5)
	dst = appendString(dst, "wavenumbers")
	dst = appendFloatArray(dst, s.Wavenumbers)
	dst = appendString(dst, "intensities")
	dst = appendFloatArray(dst, s.Intensities)
	dst = appendString(dst, "channel")
	dst = appendInt(dst, s.Channel)
	dst = appendString(dst, "integration_ms")
	dst = appendFloat64(dst, s.IntegrationMS)
	dst = appendString(dst, "scan_seq")
	dst = appendInt(dst, s.ScanSeq)
	if c == nil {
		return dst
	}
	dst = appendString(dst, "context")
	dst = appendMapHeader(dst, 3)
	dst = appendString(dst, "batch_id")
	dst = appendString(dst, c.BatchID)
	dst = appendString(dst, "port")
	dst = appendString(dst, c.Port)
	dst = appendString(dst, "column_index")
	return appendInt(dst, c.ColumnIndex)
}

func appendFloatArray(dst []byte, v []float64) []byte {
	dst = appendArrayHeader(dst, len(v))
	for _, x := range v {
		dst = appendFloat64(dst, x)
	}
	return dst
}

// Reply is a decoded reply envelope. Body is the raw MessagePack of the
// body map, to be decoded with the Decode*Reply function of Type.
type Reply struct {
	Version       int64
	Type          string
	ID            string
	CorrelationID string
	TS            float64
	// Error is nil on success.
	Error *Error
	Body  []byte
}

// ErrBadReply wraps every reply that does not follow the envelope contract.
var ErrBadReply = errors.New("reply does not follow the envelope contract")

func badReply(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadReply, fmt.Sprintf(format, args...))
}

// mapEntries calls fn for every text key of the map at r.pos, with r
// positioned on the value; fn must consume the value. Non-text keys are
// skipped with their values.
func mapEntries(r *reader, what string, fn func(key string) error) error {
	n, err := r.readMapLen()
	if err != nil {
		return badReply("%s: %v", what, err)
	}
	for i := 0; i < n; i++ {
		key, err := r.readText()
		if err != nil {
			if _, ok := err.(wrongTypeError); !ok {
				return badReply("%s: %v", what, err)
			}
			if err := r.skip(); err != nil {
				return badReply("%s: %v", what, err)
			}
			if err := r.skip(); err != nil {
				return badReply("%s: %v", what, err)
			}
			continue
		}
		if err := fn(string(key)); err != nil {
			if !errors.Is(err, ErrBadReply) {
				err = badReply("%s.%s: %v", what, key, err)
			}
			return err
		}
	}
	return nil
}

func fieldErr(field string, err error) error {
	return badReply("%s: %v", field, err)
}

func textField(r *reader, field string) (string, error) {
	b, err := r.readText()
	if err != nil {
		return "", fieldErr(field, err)
	}
	return string(b), nil
}

func numberField(r *reader, field string) (float64, error) {
	v, err := r.readNumber()
	if err != nil {
		return 0, fieldErr(field, err)
	}
	return v, nil
}

func intField(r *reader, field string) (int64, error) {
	v, ok, err := r.readInt()
	if err != nil {
		return 0, fieldErr(field, err)
	}
	if !ok {
		return 0, badReply("%s: integer out of range", field)
	}
	return v, nil
}

// DecodeReply decodes a reply envelope. It requires every envelope field
// (v, type, id, correlation_id, ts, body, error) with its contract type; it
// does not judge v or correlation_id, which is the caller's business.
func DecodeReply(data []byte) (*Reply, error) {
	r := reader{buf: data}
	rep := &Reply{}
	var seen fieldSet
	var seenCorr, seenErr bool
	err := mapEntries(&r, "envelope", func(key string) (err error) {
		switch key {
		case "v":
			seen |= fieldV
			rep.Version, err = intField(&r, "v")
		case "type":
			seen |= fieldType
			rep.Type, err = textField(&r, "type")
		case "id":
			seen |= fieldID
			rep.ID, err = textField(&r, "id")
		case "correlation_id":
			seenCorr = true
			rep.CorrelationID, err = textField(&r, "correlation_id")
		case "ts":
			seen |= fieldTS
			rep.TS, err = numberField(&r, "ts")
		case "body":
			seen |= fieldBody
			start := r.pos
			if err := r.skip(); err != nil {
				return fieldErr("body", err)
			}
			rep.Body = data[start:r.pos:r.pos]
			if rep.Body[0] == codeNil {
				rep.Body = nil
			}
		case "error":
			seenErr = true
			if r.skipNil() {
				return nil
			}
			rep.Error, err = decodeErrorObject(&r)
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.pos != len(data) {
		return nil, badReply("%d trailing bytes", len(data)-r.pos)
	}
	if seen != fieldV|fieldType|fieldID|fieldTS|fieldBody || !seenCorr || !seenErr {
		return nil, badReply("missing envelope field (have v=%t type=%t id=%t correlation_id=%t ts=%t body=%t error=%t)",
			seen&fieldV != 0, seen&fieldType != 0, seen&fieldID != 0, seenCorr, seen&fieldTS != 0, seen&fieldBody != 0, seenErr)
	}
	if rep.Error == nil && rep.Type == TypeNameError {
		return nil, badReply("reply of type error without an error object")
	}
	return rep, nil
}

func decodeErrorObject(r *reader) (*Error, error) {
	e := &Error{}
	var hasCode, hasMessage bool
	err := mapEntries(r, "error", func(key string) (err error) {
		switch key {
		case "code":
			hasCode = true
			var s string
			s, err = textField(r, "error.code")
			e.Code = Code(s)
		case "message":
			hasMessage = true
			e.Message, err = textField(r, "error.message")
		case "retryable":
			e.Retryable, err = r.readBool()
			if err != nil {
				err = fieldErr("error.retryable", err)
			}
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !hasCode || !hasMessage {
		return nil, badReply("error object without code or message")
	}
	return e, nil
}

// DecodePong decodes the body of a pong reply.
func DecodePong(body []byte) (*Pong, error) {
	r := reader{buf: body}
	p := &Pong{}
	err := mapEntries(&r, "pong body", func(key string) (err error) {
		switch key {
		case "server_version":
			p.ServerVersion, err = textField(&r, key)
		case "protocol_version":
			var v int64
			v, err = intField(&r, key)
			p.ProtocolVersion = int(v)
		case "model_version":
			p.ModelVersion, err = textField(&r, key)
		case "uptime_seconds":
			p.UptimeSeconds, err = numberField(&r, key)
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// PredictReply is the body of a predict_reply.
type PredictReply struct {
	Concentrations inference.Breakdown
	Confidence     inference.Breakdown
	ModelVersion   string
	InferenceMS    float64
	// Diagnostics holds the keys the server sent (t2, t2_limit, t2_reduced,
	// leverage, q, q_limit, q_reduced), only those it computed.
	Diagnostics map[string]float64
}

// DecodePredictReply decodes the body of a predict_reply.
func DecodePredictReply(body []byte) (*PredictReply, error) {
	r := reader{buf: body}
	p := &PredictReply{Diagnostics: map[string]float64{}}
	err := mapEntries(&r, "predict_reply body", func(key string) (err error) {
		switch key {
		case "concentrations":
			err = decodeBreakdown(&r, key, &p.Concentrations)
		case "confidence":
			err = decodeBreakdown(&r, key, &p.Confidence)
		case "model_version":
			p.ModelVersion, err = textField(&r, key)
		case "inference_ms":
			p.InferenceMS, err = numberField(&r, key)
		case "diagnostics":
			err = mapEntries(&r, key, func(k string) error {
				v, err := numberField(&r, "diagnostics."+k)
				p.Diagnostics[k] = v
				return err
			})
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func decodeBreakdown(r *reader, field string, b *inference.Breakdown) error {
	return mapEntries(r, field, func(key string) error {
		v, err := numberField(r, field+"."+key)
		if err != nil {
			return err
		}
		if a, ok := inference.ParseAnalyte(key); ok {
			b.Set(a, v)
		}
		return nil
	})
}

// ModelInfo is the body of a model_info_reply. Zero values mean the server
// left the optional field out.
type ModelInfo struct {
	ActiveVersion      string
	Algorithm          string
	LatentComponents   int
	TrainedAt          time.Time
	TrainedSamples     int
	RMSE               inference.Breakdown
	R2                 inference.Breakdown
	WavenumberRange    [2]float64
	HasWavenumberRange bool
	WavenumberCount    int
}

// DecodeModelInfoReply decodes the body of a model_info_reply.
func DecodeModelInfoReply(body []byte) (*ModelInfo, error) {
	r := reader{buf: body}
	m := &ModelInfo{}
	err := mapEntries(&r, "model_info_reply body", func(key string) (err error) {
		var v int64
		switch key {
		case "active_version":
			m.ActiveVersion, err = textField(&r, key)
		case "algorithm":
			m.Algorithm, err = textField(&r, key)
		case "latent_components":
			v, err = intField(&r, key)
			m.LatentComponents = int(v)
		case "trained_at":
			var s string
			if s, err = textField(&r, key); err == nil {
				if m.TrainedAt, err = time.Parse(time.RFC3339, s); err != nil {
					err = fieldErr(key, err)
				}
			}
		case "trained_samples":
			v, err = intField(&r, key)
			m.TrainedSamples = int(v)
		case "rmse":
			err = decodeBreakdown(&r, key, &m.RMSE)
		case "r2":
			err = decodeBreakdown(&r, key, &m.R2)
		case "wavenumber_range":
			var n int
			if n, err = r.readArrayLen(); err != nil || n != 2 {
				return badReply("wavenumber_range must be an array of 2 numbers")
			}
			for i := range m.WavenumberRange {
				if m.WavenumberRange[i], err = numberField(&r, key); err != nil {
					return err
				}
			}
			m.HasWavenumberRange = true
		case "wavenumber_count":
			v, err = intField(&r, key)
			m.WavenumberCount = int(v)
		default:
			err = r.skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
