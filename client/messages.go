package client

import (
	"errors"
	"fmt"
	"time"

	"ramanserve/server/codec/wire"
)

// This file encodes requests and decodes replies of the prediction channel
// (api/messages.md) on the primitives of package wire, which the server's
// codec shares. A client is not the server's hot path, so decoding favours
// strictness and clear errors over zero allocation.

// Indexes of the analytes in Breakdown's arrays.
const (
	EPA = iota
	DHA
	DPA
)

// AnalyteNames returns the analytes' wire names, in the order of
// Breakdown's arrays.
func AnalyteNames() [3]string { return [3]string{"EPA", "DHA", "DPA"} }

// Breakdown is one number per analyte; Valid says which the server sent
// (an analyte the model does not predict is left out of the reply).
type Breakdown struct {
	Value [3]float64
	Valid [3]bool
}

// Get returns the value of the named analyte and whether the server sent it.
func (b *Breakdown) Get(analyte string) (float64, bool) {
	for i, a := range AnalyteNames() {
		if a == analyte {
			return b.Value[i], b.Valid[i]
		}
	}
	return 0, false
}

// Pong is the body of a pong reply.
type Pong struct {
	ServerVersion   string
	ProtocolVersion int
	// ModelVersion is the active model's version, "" when none is loaded.
	ModelVersion  string
	UptimeSeconds float64
}

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
	dst = wire.AppendMapHeader(dst, 5)
	dst = wire.AppendString(dst, "v")
	dst = wire.AppendInt(dst, wire.ProtocolVersion)
	dst = wire.AppendString(dst, "type")
	dst = wire.AppendString(dst, typ)
	dst = wire.AppendString(dst, "id")
	dst = wire.AppendString(dst, id)
	dst = wire.AppendString(dst, "ts")
	dst = wire.AppendFloat64(dst, ts)
	return wire.AppendString(dst, "body")
}

// AppendPingRequest appends a ping request with an empty body.
func AppendPingRequest(dst []byte, id string, ts float64) []byte {
	return wire.AppendMapHeader(appendRequestHead(dst, wire.TypePing, id, ts), 0)
}

// AppendModelInfoRequest appends a model_info request with an empty body.
func AppendModelInfoRequest(dst []byte, id string, ts float64) []byte {
	return wire.AppendMapHeader(appendRequestHead(dst, wire.TypeModelInfo, id, ts), 0)
}

// AppendModelInfoAxisRequest appends a model_info request whose body
// asks for the model's axis too (body.include ["wavenumbers"]).
func AppendModelInfoAxisRequest(dst []byte, id string, ts float64) []byte {
	dst = wire.AppendMapHeader(appendRequestHead(dst, wire.TypeModelInfo, id, ts), 1)
	dst = wire.AppendString(dst, "include")
	return wire.AppendString(wire.AppendArrayHeader(dst, 1), "wavenumbers")
}

// AppendPredictRequest appends a predict request. Arrays are written as
// float64, channel, scan_seq and column_index as integers. A nil c leaves
// the optional context out.
func AppendPredictRequest(dst []byte, id string, ts float64, s *Spectrum, c *ScanContext) []byte {
	return AppendPredictRequestWithOptions(dst, id, ts, s, c, nil)
}

// AppendPredictRequestWithOptions is AppendPredictRequest with the body's
// options last; a nil o, or one that asks for nothing, writes none.
func AppendPredictRequestWithOptions(dst []byte, id string, ts float64, s *Spectrum, c *ScanContext, o *PredictOptions) []byte {
	dst = appendRequestHead(dst, wire.TypePredict, id, ts)
	entries := 1
	if c != nil {
		entries++
	}
	withOptions := o != nil && o.HasContributions
	if withOptions {
		entries++
	}
	dst = wire.AppendMapHeader(dst, entries)
	dst = wire.AppendString(dst, "spectrum")
	dst = wire.AppendMapHeader(dst, 5)
	dst = wire.AppendString(dst, "wavenumbers")
	dst = wire.AppendFloatArray(dst, s.Wavenumbers)
	dst = wire.AppendString(dst, "intensities")
	dst = wire.AppendFloatArray(dst, s.Intensities)
	dst = wire.AppendString(dst, "channel")
	dst = wire.AppendInt(dst, s.Channel)
	dst = wire.AppendString(dst, "integration_ms")
	dst = wire.AppendFloat64(dst, s.IntegrationMS)
	dst = wire.AppendString(dst, "scan_seq")
	dst = wire.AppendInt(dst, s.ScanSeq)
	if c != nil {
		dst = wire.AppendString(dst, "context")
		dst = wire.AppendMapHeader(dst, 3)
		dst = wire.AppendString(dst, "batch_id")
		dst = wire.AppendString(dst, c.BatchID)
		dst = wire.AppendString(dst, "port")
		dst = wire.AppendString(dst, c.Port)
		dst = wire.AppendString(dst, "column_index")
		dst = wire.AppendInt(dst, c.ColumnIndex)
	}
	if withOptions {
		dst = wire.AppendString(dst, "options")
		dst = wire.AppendMapHeader(dst, 1)
		dst = wire.AppendString(dst, "contributions")
		dst = wire.AppendInt(dst, int64(o.Contributions))
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

// mapEntries calls fn for every text key of the map at r.Pos, with r
// positioned on the value; fn must consume the value. Non-text keys are
// skipped with their values.
func mapEntries(r *wire.Reader, what string, fn func(key string) error) error {
	n, err := r.ReadMapLen()
	if err != nil {
		return badReply("%s: %v", what, err)
	}
	for i := 0; i < n; i++ {
		key, err := r.ReadText()
		if err != nil {
			if _, ok := err.(wire.WrongTypeError); !ok {
				return badReply("%s: %v", what, err)
			}
			if err := r.Skip(); err != nil {
				return badReply("%s: %v", what, err)
			}
			if err := r.Skip(); err != nil {
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

func textField(r *wire.Reader, field string) (string, error) {
	b, err := r.ReadText()
	if err != nil {
		return "", fieldErr(field, err)
	}
	return string(b), nil
}

func numberField(r *wire.Reader, field string) (float64, error) {
	v, err := r.ReadNumber()
	if err != nil {
		return 0, fieldErr(field, err)
	}
	return v, nil
}

func intField(r *wire.Reader, field string) (int64, error) {
	v, ok, err := r.ReadInt()
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
	r := wire.Reader{Buf: data}
	rep := &Reply{}
	var seenV, seenType, seenID, seenCorr, seenTS, seenBody, seenErr bool
	err := mapEntries(&r, "envelope", func(key string) (err error) {
		switch key {
		case "v":
			seenV = true
			rep.Version, err = intField(&r, "v")
		case "type":
			seenType = true
			rep.Type, err = textField(&r, "type")
		case "id":
			seenID = true
			rep.ID, err = textField(&r, "id")
		case "correlation_id":
			seenCorr = true
			rep.CorrelationID, err = textField(&r, "correlation_id")
		case "ts":
			seenTS = true
			rep.TS, err = numberField(&r, "ts")
		case "body":
			seenBody = true
			start := r.Pos
			if err := r.Skip(); err != nil {
				return fieldErr("body", err)
			}
			rep.Body = data[start:r.Pos:r.Pos]
			if rep.Body[0] == wire.CodeNil {
				rep.Body = nil
			}
		case "error":
			seenErr = true
			if r.SkipNil() {
				return nil
			}
			rep.Error, err = decodeErrorObject(&r)
		default:
			err = r.Skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.Pos != len(data) {
		return nil, badReply("%d trailing bytes", len(data)-r.Pos)
	}
	if !seenV || !seenType || !seenID || !seenCorr || !seenTS || !seenBody || !seenErr {
		return nil, badReply("missing envelope field (have v=%t type=%t id=%t correlation_id=%t ts=%t body=%t error=%t)",
			seenV, seenType, seenID, seenCorr, seenTS, seenBody, seenErr)
	}
	if rep.Error == nil && rep.Type == wire.TypeError {
		return nil, badReply("reply of type error without an error object")
	}
	return rep, nil
}

func decodeErrorObject(r *wire.Reader) (*Error, error) {
	e := &Error{}
	var hasCode, hasMessage bool
	err := mapEntries(r, "error", func(key string) (err error) {
		switch key {
		case "code":
			hasCode = true
			var s string
			s, err = textField(r, "error.code")
			e.Code = s
		case "message":
			hasMessage = true
			e.Message, err = textField(r, "error.message")
		case "retryable":
			e.Retryable, err = r.ReadBool()
			if err != nil {
				err = fieldErr("error.retryable", err)
			}
		default:
			err = r.Skip()
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
	r := wire.Reader{Buf: body}
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
			err = r.Skip()
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
	Concentrations Breakdown
	Confidence     Breakdown
	ModelVersion   string
	InferenceMS    float64
	// Diagnostics holds the keys the server sent (t2, t2_limit, t2_reduced,
	// leverage, q, q_limit, q_reduced), only those it computed.
	Diagnostics map[string]float64
	// Contributions are set when the request asked for them
	// (PredictWithOptions); nil otherwise.
	Contributions *Contributions
}

// DecodePredictReply decodes the body of a predict_reply.
func DecodePredictReply(body []byte) (*PredictReply, error) {
	r := wire.Reader{Buf: body}
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
		case "contributions":
			p.Contributions, err = decodeContributions(&r, key)
		default:
			err = r.Skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func decodeBreakdown(r *wire.Reader, field string, b *Breakdown) error {
	return mapEntries(r, field, func(key string) error {
		v, err := numberField(r, field+"."+key)
		if err != nil {
			return err
		}
		for i, a := range AnalyteNames() {
			if a == key {
				b.Value[i], b.Valid[i] = v, true
			}
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
	RMSE               Breakdown
	R2                 Breakdown
	WavenumberRange    [2]float64
	HasWavenumberRange bool
	WavenumberCount    int
	// Wavenumbers is the model's axis, nil unless the request asked for
	// it (PredictionClient.ModelInfoWithAxis).
	Wavenumbers []float64
}

// DecodeModelInfoReply decodes the body of a model_info_reply.
func DecodeModelInfoReply(body []byte) (*ModelInfo, error) {
	r := wire.Reader{Buf: body}
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
			if n, err = r.ReadArrayLen(); err != nil || n != 2 {
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
		case "wavenumbers":
			var n int
			if n, err = r.ReadArrayLen(); err != nil {
				return badReply("wavenumbers must be an array of numbers")
			}
			// n is bounded by the reply's bytes (ReadArrayLen checks it).
			m.Wavenumbers = make([]float64, n)
			for i := range m.Wavenumbers {
				if m.Wavenumbers[i], err = numberField(&r, key); err != nil {
					return err
				}
			}
		default:
			err = r.Skip()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
