// Package channel answers the prediction channel's requests (ping, predict,
// model_info; api/messages.md). It sits between the ZMTP transport
// (server/zmtp), which hands it one request's frames, and the models
// (package inference), and uses server/codec for the MessagePack envelope.
//
// Every request gets exactly one reply, whatever it contains: decoding
// errors, model errors and even panics become a failure reply. A failure
// reply has the request's own reply type (pong, predict_reply,
// model_info_reply) with error set and an empty body, as the interface
// document describes; type "error" is left for requests whose type is
// unknown or could not be read (codec.ReplyTypeFor, codec.Request.Type).
package channel

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"

	"ramanserve/inference"
	"ramanserve/server/codec"
	"ramanserve/server/contract"
	"ramanserve/server/zmtp"
	"ramanserve/service/live"
)

// Models gives the active model; nil when none is loaded. The registry
// implements it with an atomic pointer, so reading it is one load.
type Models interface {
	Active() inference.Model
}

// Recorder observes the requests a Handler answers (the server's
// metrics). Its methods run on the hot path, once or twice per request:
// they must not block, and should neither allocate nor look anything up.
type Recorder interface {
	// Answered: a request of type t was answered with code ("" when it
	// succeeded), took after Handle received its frames.
	Answered(t codec.MessageType, code contract.Code, took time.Duration)
	// Predicted: a predict succeeded with p (before its reply is encoded;
	// p must not be kept).
	Predicted(p *inference.Prediction)
}

// PredictionLog receives every prediction the channel answers, after its
// reply is encoded (the prediction log and the shadow scorer, package
// evidence). Logged runs on the hot path: it must not block.
// spec, p, sc and ct (the reply's contributions, nil when it carried
// none) are valid only during the call.
type PredictionLog interface {
	Logged(at time.Time, m inference.Model, spec *inference.Spectrum, p *inference.Prediction, sc *inference.ScanContext, ct *inference.Contributions)
}

// LiveFeed receives every predict's outcome, failures included, for the
// publishers of live values (package live; the OPC UA server). Offer runs
// on the hot path: it must not block, and o is valid only during the call.
type LiveFeed interface {
	Offer(source string, o *live.Outcome)
}

// noRecorder is the Recorder of a Handler built without one.
type noRecorder struct{}

func (noRecorder) Answered(codec.MessageType, contract.Code, time.Duration) {}
func (noRecorder) Predicted(*inference.Prediction)                          {}

// Options configure a Handler.
type Options struct {
	Models        Models
	ServerVersion string
	Started       time.Time
	Now           func() time.Time
	Logger        *slog.Logger
	Recorder      Recorder      // nil: nothing is recorded
	Log           PredictionLog // nil: predictions are not logged
	Live          LiveFeed      // nil: outcomes are not published
}

// Handler serves the prediction channel. It is safe for concurrent use.
type Handler struct {
	opts    Options
	log     *slog.Logger
	ids     *codec.IDGenerator
	pool    sync.Pool // *scratch
	strings interner  // batch ids and ports of logged predictions
}

// scratch is the per-request state, pooled so that a warmed-up predict
// decodes, predicts and encodes without allocating.
type scratch struct {
	req     codec.Request
	spec    inference.Spectrum
	pred    inference.Prediction
	scan    inference.ScanContext
	explain inference.Contributions // filled when the request asks for contributions
	live    live.Outcome            // the outcome handed to Options.Live
}

// New returns a Handler.
func New(opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Started.IsZero() {
		opts.Started = opts.Now()
	}
	if opts.Recorder == nil {
		opts.Recorder = noRecorder{}
	}
	h := &Handler{opts: opts, log: opts.Logger, ids: codec.NewIDGenerator()}
	h.strings.seed = maphash.MakeSeed()
	h.pool.New = func() any { return new(scratch) }
	return h
}

// Handle implements zmtp.Handler: it appends exactly one reply to dst.
func (h *Handler) Handle(ctx context.Context, req zmtp.Request, dst []byte) []byte {
	began := time.Now()
	out, reqType, code := h.answer(req, dst)
	h.opts.Recorder.Answered(reqType, code, time.Since(began))
	return out
}

// answer appends the reply to req and returns, for the recorder, the
// request's type and the reply's error code ("" for success).
func (h *Handler) answer(req zmtp.Request, dst []byte) (out []byte, reqType codec.MessageType, code contract.Code) {
	start := len(dst)
	now := h.opts.Now()
	meta := codec.ReplyMeta{ID: h.ids.Next(), TS: codec.Unix(now)}
	sc := h.pool.Get().(*scratch)
	defer h.pool.Put(sc)
	// reqType stays unknown until the request decodes far enough to name
	// its type: what the transport refused, or a frame that is not one
	// well-formed map, is answered with type "error".
	reqType = codec.TypeUnknown
	defer func() {
		// A bug must cost one request, not the connection or the process.
		if r := recover(); r != nil {
			h.log.Error("prediction request panicked", "panic", r, "request_id", string(meta.CorrelationID))
			code = contract.InternalError
			out = codec.AppendErrorReply(dst[:start], meta, reqType, contract.Errorf(code, "internal error while handling the request"))
		}
	}()
	fail := func(t codec.MessageType, err *contract.Error) ([]byte, codec.MessageType, contract.Code) {
		return codec.AppendErrorReply(dst, meta, t, err), reqType, err.Code
	}

	if err := transportError(req); err != nil {
		return fail(reqType, err)
	}
	err := codec.DecodeRequest(req.Frames[0], &sc.req)
	meta.CorrelationID = sc.req.ID
	reqType = sc.req.Type
	if err != nil {
		ce := asChannelError(err)
		if reqType == codec.TypePredict && h.opts.Live != nil {
			// What did not decode names no port that can be trusted: the
			// failure goes to the channel's values only.
			sc.live = live.Outcome{Source: now, Replied: time.Now(), Failed: true, ErrorCode: string(ce.Code)}
			h.opts.Live.Offer("", &sc.live)
		}
		return fail(reqType, ce)
	}
	switch reqType {
	case codec.TypePing:
		version := ""
		if m := h.opts.Models.Active(); m != nil {
			version = m.Metadata().Version
		}
		return codec.AppendPong(dst, meta, &codec.Pong{
			ServerVersion:   h.opts.ServerVersion,
			ProtocolVersion: codec.ProtocolVersion,
			ModelVersion:    version,
			UptimeSeconds:   h.opts.Now().Sub(h.opts.Started).Seconds(),
		}), reqType, ""
	case codec.TypeModelInfo:
		m := h.opts.Models.Active()
		if m == nil {
			return fail(reqType, errNoModel)
		}
		return codec.AppendModelInfoReply(dst, meta, m.Metadata(), &sc.req.ModelInfo), reqType, ""
	case codec.TypePredict:
		out, code, version := h.predict(dst, meta, now, sc)
		if code != "" {
			h.offerFailure(sc, now, version, code)
		}
		return out, reqType, code
	}
	return fail(codec.TypeUnknown, contract.Errorf(contract.UnknownType, "unknown message type"))
}

// transportError is the failure of a request whose content was never
// read: refused by the transport, or other than one body frame.
func transportError(req zmtp.Request) *contract.Error {
	switch {
	case errors.Is(req.Err, zmtp.ErrPartialBytesExhausted):
		return contract.Errorf(contract.ServerBusy,
			"the server's buffer for large messages is in use; send the request again shortly")
	case errors.Is(req.Err, zmtp.ErrMessageTooLarge):
		return contract.Errorf(contract.MessageTooLarge, "%v", req.Err)
	case req.Err != nil:
		return contract.Errorf(contract.MalformedMessage, "%v", req.Err)
	case len(req.Frames) != 1:
		return contract.Errorf(contract.MalformedMessage,
			"a request is exactly one body frame after the envelope, got %d", len(req.Frames))
	}
	return nil
}

var errNoModel = contract.Errorf(contract.ModelNotLoaded, "no model is loaded; load one with POST /model/load")

// predict reads the active model once, so a hot swap never splits the
// call: it runs to the end on the model it started with, and the reply
// names that model. It returns the reply's error code, "" for success.
// A successful prediction is logged, received at now, once its reply is
// encoded, and handed to the live feed. A failure returns the model that
// refused it ("" when none is loaded).
func (h *Handler) predict(dst []byte, meta codec.ReplyMeta, now time.Time, sc *scratch) ([]byte, contract.Code, string) {
	m := h.opts.Models.Active()
	if m == nil {
		return codec.AppendErrorReply(dst, meta, codec.TypePredict, errNoModel), errNoModel.Code, ""
	}
	explainer, refused := explainerFor(m, &sc.req.Predict.Options)
	if refused != nil {
		return codec.AppendErrorReply(dst, meta, codec.TypePredict, refused), refused.Code, m.Metadata().Version
	}
	sc.spec = inference.Spectrum{
		Wavenumbers: sc.req.Predict.Spectrum.Wavenumbers,
		Intensities: sc.req.Predict.Spectrum.Intensities,
	}
	began := time.Now()
	var err error
	var contributions *inference.Contributions
	if explainer != nil {
		contributions = &sc.explain
		err = explainer.PredictWithContributions(&sc.spec, &sc.pred, sc.req.Predict.Options.Contributions, contributions)
	} else {
		err = m.Predict(&sc.spec, &sc.pred)
	}
	if err != nil {
		ce := asChannelError(err)
		if ce.Code == contract.InternalError {
			h.log.Error("model failed", "model", m.Metadata().Version, "err", err, "request_id", string(meta.CorrelationID))
		}
		return codec.AppendErrorReply(dst, meta, codec.TypePredict, ce), ce.Code, m.Metadata().Version
	}
	h.opts.Recorder.Predicted(&sc.pred)
	version := m.Metadata().Version
	out := codec.AppendPredictReply(dst, meta, &codec.PredictResult{
		ModelVersion:  version,
		InferenceMS:   float64(time.Since(began).Nanoseconds()) / 1e6,
		Prediction:    &sc.pred,
		Contributions: contributions,
	})
	if h.opts.Log != nil || h.opts.Live != nil {
		h.fillScanContext(&sc.scan, &sc.req.Predict)
	}
	if h.opts.Log != nil {
		h.opts.Log.Logged(now, m, &sc.spec, &sc.pred, &sc.scan, contributions)
	}
	if h.opts.Live != nil {
		sc.live = live.Outcome{
			Source:       live.SourceTime(now, sc.req.TS, sc.req.HasTS),
			Replied:      time.Now(),
			ModelVersion: version,
			Prediction:   sc.pred,
		}
		h.opts.Live.Offer(liveSource(&sc.scan), &sc.live)
	}
	return out, "", ""
}

// offerFailure hands a failed predict to the live feed: its values keep
// their last good value and turn Bad.
func (h *Handler) offerFailure(sc *scratch, now time.Time, version string, code contract.Code) {
	if h.opts.Live == nil {
		return
	}
	h.fillScanContext(&sc.scan, &sc.req.Predict)
	sc.live = live.Outcome{
		Source:       live.SourceTime(now, sc.req.TS, sc.req.HasTS),
		Replied:      time.Now(),
		ModelVersion: version,
		Failed:       true,
		ErrorCode:    string(code),
	}
	h.opts.Live.Offer(liveSource(&sc.scan), &sc.live)
}

func liveSource(sc *inference.ScanContext) string {
	return live.SourceName(sc.Port, sc.HasPort, sc.Channel, sc.HasChannel)
}

// explainerFor returns the model that answers a request for
// contributions: nil, nil when the request asks for none (the plain
// Predict, as before options existed); INVALID_REQUEST when the active
// model cannot explain its statistics (no T2 nor Q, no axis, or a kind of
// model without contributions). The request is well formed, and another
// model may answer it, so it is not INVALID_SPECTRUM.
func explainerFor(m inference.Model, o *codec.PredictOptions) (inference.ContributionModel, *contract.Error) {
	if !o.HasContributions {
		return nil, nil
	}
	cm, ok := m.(inference.ContributionModel)
	if !ok {
		return nil, contract.Errorf(contract.InvalidRequest, "the active model (%s) has no contributions to report", m.Metadata().Version)
	}
	if err := cm.CanExplain(); err != nil {
		return nil, contract.Errorf(contract.InvalidRequest, "the active model (%s) cannot give contributions: %v", m.Metadata().Version, err)
	}
	return cm, nil
}

// fillScanContext copies the request's context fields into sc. Batch ids
// and ports repeat for hours, so their strings come from the interner;
// they are cut to inference.MaxContextTextBytes first, so that no request
// can put more than that into the log.
func (h *Handler) fillScanContext(sc *inference.ScanContext, b *codec.PredictBody) {
	c, s := &b.Context, &b.Spectrum
	*sc = inference.ScanContext{
		ColumnIndex: c.ColumnIndex, HasColumnIndex: c.HasColumnIndex,
		ScanSeq: s.ScanSeq, HasScanSeq: s.HasScanSeq,
		Channel: s.Channel, HasChannel: s.HasChannel,
		IntegrationMS: s.IntegrationMS, HasIntegrationMS: s.HasIntegrationMS,
		HasBatchID: c.HasBatchID, HasPort: c.HasPort,
	}
	if c.HasBatchID {
		sc.BatchID = h.strings.get(inference.CutContextText(c.BatchID))
	}
	if c.HasPort {
		sc.Port = h.strings.get(inference.CutContextText(c.Port))
	}
}

// asChannelError turns any error into the reply's error object. Coded
// errors (the codec's) carry their code; model errors are mapped by the
// contract's single table (contract.Classify); anything else is
// INTERNAL_ERROR.
func asChannelError(err error) *contract.Error {
	var ce *contract.Error
	if errors.As(err, &ce) {
		return ce
	}
	code := contract.Classify(err).Code
	switch code {
	case contract.InvalidSpectrum, contract.SpectrumOutOfRange, contract.ModelNotLoaded:
		return &contract.Error{Code: code, Message: err.Error()}
	}
	return contract.Errorf(contract.InternalError, "internal error: %v", err)
}
