package codec

import (
	"time"

	"ramanserve/inference"
	"ramanserve/server/codec/wire"
	"ramanserve/server/contract"
)

// ReplyMeta is what every reply envelope carries besides its type and body.
type ReplyMeta struct {
	// ID is the reply's own fresh id.
	ID UUID
	// CorrelationID is the request's id; empty when the request id could
	// not be recovered (the reply then carries correlation_id "").
	CorrelationID []byte
	// TS is the reply time in seconds since the Unix epoch.
	TS float64
}

// Unix converts a time to the envelope's ts: seconds since the Unix epoch
// as a float64 (microsecond resolution survives the conversion).
func Unix(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// appendEnvelopeHead writes the envelope map header and every field up to
// and including the key "body"; the caller appends the body value, then
// appendErrorField. Key order is fixed: v, type, id, correlation_id, ts,
// body, error.
func appendEnvelopeHead(dst []byte, typ string, m *ReplyMeta) []byte {
	dst = wire.AppendMapHeader(dst, 7)
	dst = wire.AppendString(dst, "v")
	dst = wire.AppendInt(dst, ProtocolVersion)
	dst = wire.AppendString(dst, "type")
	dst = wire.AppendString(dst, typ)
	dst = wire.AppendString(dst, "id")
	dst = wire.AppendStrHeader(dst, 36)
	dst = m.ID.AppendText(dst)
	dst = wire.AppendString(dst, "correlation_id")
	dst = wire.AppendStringBytes(dst, m.CorrelationID)
	dst = wire.AppendString(dst, "ts")
	dst = wire.AppendFloat64(dst, m.TS)
	return wire.AppendString(dst, "body")
}

func appendNoError(dst []byte) []byte {
	return wire.AppendNil(wire.AppendString(dst, "error"))
}

// Pong is the body of a pong reply.
type Pong struct {
	ServerVersion   string
	ProtocolVersion int
	// ModelVersion is the active model's version, "" when none is loaded.
	ModelVersion  string
	UptimeSeconds float64
}

// AppendPong appends a complete pong reply.
func AppendPong(dst []byte, m ReplyMeta, p *Pong) []byte {
	dst = appendEnvelopeHead(dst, TypeNamePong, &m)
	dst = wire.AppendMapHeader(dst, 4)
	dst = wire.AppendString(dst, "server_version")
	dst = wire.AppendString(dst, p.ServerVersion)
	dst = wire.AppendString(dst, "protocol_version")
	dst = wire.AppendInt(dst, int64(p.ProtocolVersion))
	dst = wire.AppendString(dst, "model_version")
	dst = wire.AppendString(dst, p.ModelVersion)
	dst = wire.AppendString(dst, "uptime_seconds")
	dst = wire.AppendFloat64(dst, p.UptimeSeconds)
	return appendNoError(dst)
}

// PredictResult is what a predict_reply reports.
type PredictResult struct {
	ModelVersion string
	// InferenceMS is the time spent in the model, in milliseconds.
	InferenceMS float64
	Prediction  *inference.Prediction
	// Contributions, when not nil, adds body.contributions (the request
	// asked for them). nil writes the reply byte for byte as a request
	// without options gets it.
	Contributions *inference.Contributions
}

// AppendPredictReply appends a complete predict_reply. Analytes the model
// does not predict are left out of concentrations and confidence; the
// diagnostics map holds only the statistics the model computed.
func AppendPredictReply(dst []byte, m ReplyMeta, r *PredictResult) []byte {
	dst = appendEnvelopeHead(dst, TypeNamePredictReply, &m)
	fields := 5
	if r.Contributions != nil {
		fields++
	}
	dst = wire.AppendMapHeader(dst, fields)
	dst = wire.AppendString(dst, "concentrations")
	dst = appendBreakdown(dst, &r.Prediction.Concentrations)
	dst = wire.AppendString(dst, "confidence")
	dst = appendBreakdown(dst, &r.Prediction.Confidence)
	dst = wire.AppendString(dst, "model_version")
	dst = wire.AppendString(dst, r.ModelVersion)
	dst = wire.AppendString(dst, "inference_ms")
	dst = wire.AppendFloat64(dst, r.InferenceMS)
	dst = wire.AppendString(dst, "diagnostics")
	dst = appendDiagnostics(dst, &r.Prediction.Diagnostics)
	if r.Contributions != nil {
		dst = wire.AppendString(dst, "contributions")
		dst = appendContributions(dst, r.Contributions)
	}
	return appendNoError(dst)
}

// appendContributions writes {q, t2}, each present when the model
// computes the statistic, as diagnostics q and t2 are.
func appendContributions(dst []byte, c *inference.Contributions) []byte {
	n := 0
	if c.HasQ {
		n++
	}
	if c.HasT2 {
		n++
	}
	dst = wire.AppendMapHeader(dst, n)
	if c.HasQ {
		dst = appendContributionSummary(wire.AppendString(dst, DiagQ), &c.Q)
	}
	if c.HasT2 {
		dst = appendContributionSummary(wire.AppendString(dst, DiagT2), &c.T2)
	}
	return dst
}

// appendContributionSummary writes {total, top: [{wavenumber, value}],
// regions: [{region: [low, high], value}]}.
func appendContributionSummary(dst []byte, s *inference.ContributionSummary) []byte {
	dst = wire.AppendMapHeader(dst, 3)
	dst = wire.AppendFloat64(wire.AppendString(dst, "total"), s.Total)
	dst = wire.AppendArrayHeader(wire.AppendString(dst, "top"), len(s.Top))
	for _, v := range s.Top {
		dst = wire.AppendMapHeader(dst, 2)
		dst = wire.AppendFloat64(wire.AppendString(dst, "wavenumber"), v.Wavenumber)
		dst = wire.AppendFloat64(wire.AppendString(dst, "value"), v.Value)
	}
	dst = wire.AppendArrayHeader(wire.AppendString(dst, "regions"), len(s.Regions))
	for _, r := range s.Regions {
		dst = wire.AppendMapHeader(dst, 2)
		dst = wire.AppendArrayHeader(wire.AppendString(dst, "region"), 2)
		dst = wire.AppendFloat64(wire.AppendFloat64(dst, r.Region[0]), r.Region[1])
		dst = wire.AppendFloat64(wire.AppendString(dst, "value"), r.Value)
	}
	return dst
}

// appendBreakdown writes {EPA, DHA, DPA} with the valid entries only.
func appendBreakdown(dst []byte, b *inference.Breakdown) []byte {
	n := 0
	for _, ok := range b.Valid {
		if ok {
			n++
		}
	}
	dst = wire.AppendMapHeader(dst, n)
	for a := inference.Analyte(0); a < inference.NumAnalytes; a++ {
		if b.Valid[a] {
			dst = wire.AppendString(dst, a.String())
			dst = wire.AppendFloat64(dst, b.Value[a])
		}
	}
	return dst
}

// Diagnostics keys of predict_reply.body.diagnostics.
const (
	DiagT2        = "t2"
	DiagT2Limit   = "t2_limit"
	DiagT2Reduced = "t2_reduced"
	DiagLeverage  = "leverage"
	DiagQ         = "q"
	DiagQLimit    = "q_limit"
	DiagQReduced  = "q_reduced"
)

// appendDiagnostics writes the statistics the model computed: the T2 group
// (t2, t2_limit, t2_reduced, leverage) when HasT2, q when HasQ, and
// q_limit, q_reduced when HasQLim.
func appendDiagnostics(dst []byte, d *inference.Diagnostics) []byte {
	n := 0
	if d.HasT2 {
		n += 4
	}
	if d.HasQ {
		n++
		if d.HasQLim {
			n += 2
		}
	}
	dst = wire.AppendMapHeader(dst, n)
	if d.HasT2 {
		dst = wire.AppendFloat64(wire.AppendString(dst, DiagT2), d.T2)
		dst = wire.AppendFloat64(wire.AppendString(dst, DiagT2Limit), d.T2Limit)
		dst = wire.AppendFloat64(wire.AppendString(dst, DiagT2Reduced), d.ReducedT2)
		dst = wire.AppendFloat64(wire.AppendString(dst, DiagLeverage), d.Leverage)
	}
	if d.HasQ {
		dst = wire.AppendFloat64(wire.AppendString(dst, DiagQ), d.Q)
		if d.HasQLim {
			dst = wire.AppendFloat64(wire.AppendString(dst, DiagQLimit), d.QLimit)
			dst = wire.AppendFloat64(wire.AppendString(dst, DiagQReduced), d.ReducedQ)
		}
	}
	return dst
}

// AppendModelInfoReply appends a complete model_info_reply carrying the
// fields of the HTTP ModelInfo. Optional fields are left out when unknown:
// latent_components and trained_samples when 0, rmse and r2 when no analyte
// has a value, wavenumber_range and wavenumber_count when the model has no
// axis. trained_at is RFC 3339 in UTC. body.wavenumbers, the axis itself,
// is added only when the request asked for it (req.Wavenumbers) and the
// model has one.
func AppendModelInfoReply(dst []byte, m ReplyMeta, meta *inference.Metadata, req *ModelInfoBody) []byte {
	dst = appendEnvelopeHead(dst, TypeNameModelInfoReply, &m)
	n := 3
	hasRMSE, hasR2 := anyValid(&meta.RMSE), anyValid(&meta.R2)
	lo, hi, hasAxis := meta.WavenumberRange()
	withAxis := hasAxis && req != nil && req.Wavenumbers
	for _, present := range []bool{meta.LatentComponents > 0, meta.TrainedSamples > 0, hasRMSE, hasR2, hasAxis, hasAxis, withAxis} {
		if present {
			n++
		}
	}
	dst = wire.AppendMapHeader(dst, n)
	dst = wire.AppendString(dst, "active_version")
	dst = wire.AppendString(dst, meta.Version)
	dst = wire.AppendString(dst, "algorithm")
	dst = wire.AppendString(dst, meta.Algorithm)
	if meta.LatentComponents > 0 {
		dst = wire.AppendString(dst, "latent_components")
		dst = wire.AppendInt(dst, int64(meta.LatentComponents))
	}
	dst = wire.AppendString(dst, "trained_at")
	var stamp [64]byte
	dst = wire.AppendStringBytes(dst, meta.TrainedAt.UTC().AppendFormat(stamp[:0], time.RFC3339Nano)) // as GET /model/info writes it
	if meta.TrainedSamples > 0 {
		dst = wire.AppendString(dst, "trained_samples")
		dst = wire.AppendInt(dst, int64(meta.TrainedSamples))
	}
	if hasRMSE {
		dst = wire.AppendString(dst, "rmse")
		dst = appendBreakdown(dst, &meta.RMSE)
	}
	if hasR2 {
		dst = wire.AppendString(dst, "r2")
		dst = appendBreakdown(dst, &meta.R2)
	}
	if hasAxis {
		dst = wire.AppendString(dst, "wavenumber_range")
		dst = wire.AppendArrayHeader(dst, 2)
		dst = wire.AppendFloat64(dst, lo)
		dst = wire.AppendFloat64(dst, hi)
		dst = wire.AppendString(dst, "wavenumber_count")
		dst = wire.AppendInt(dst, int64(len(meta.Wavenumbers)))
	}
	if withAxis {
		dst = wire.AppendString(dst, "wavenumbers")
		dst = wire.AppendArrayHeader(dst, len(meta.Wavenumbers))
		for _, w := range meta.Wavenumbers {
			dst = wire.AppendFloat64(dst, w)
		}
	}
	return appendNoError(dst)
}

func anyValid(b *inference.Breakdown) bool {
	return b.Valid[0] || b.Valid[1] || b.Valid[2]
}

// AppendErrorReply appends a complete failure reply to a request of type
// reqType: the reply type ReplyTypeFor(reqType) ("error" only for
// TypeUnknown), an empty body map and the error object {code, message,
// retryable}, retryable read from the contract's one table.
func AppendErrorReply(dst []byte, m ReplyMeta, reqType MessageType, e *contract.Error) []byte {
	dst = appendEnvelopeHead(dst, ReplyTypeFor(reqType), &m)
	dst = wire.AppendMapHeader(dst, 0)
	dst = wire.AppendString(dst, "error")
	dst = wire.AppendMapHeader(dst, 3)
	dst = wire.AppendString(dst, "code")
	dst = wire.AppendString(dst, string(e.Code))
	dst = wire.AppendString(dst, "message")
	dst = wire.AppendString(dst, e.Message)
	dst = wire.AppendString(dst, "retryable")
	return wire.AppendBool(dst, e.Retryable())
}
