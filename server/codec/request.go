package codec

import (
	"encoding/binary"
	"errors"
	"math"
	"unicode/utf8"

	"ramanserve/inference"
	"ramanserve/server/codec/wire"
	"ramanserve/server/contract"
)

// Limits of the request decoder.
const (
	// ProtocolVersion is the only envelope version (field v) this codec speaks.
	ProtocolVersion = wire.ProtocolVersion
	// MaxPoints caps spectrum.wavenumbers and spectrum.intensities. The
	// announced length is checked against it before anything is allocated.
	MaxPoints = 65536
	// MaxIDLength caps the request id. A longer id is MALFORMED_MESSAGE and
	// is not echoed back.
	MaxIDLength = 256
)

// MessageType identifies a request type.
type MessageType uint8

// Request types. TypeUnknown is what an unrecognised type string decodes to.
const (
	TypeUnknown MessageType = iota
	TypePing
	TypePredict
	TypeModelInfo
)

// Wire names of request and reply types.
const (
	TypeNamePing           = wire.TypePing
	TypeNamePredict        = wire.TypePredict
	TypeNameModelInfo      = wire.TypeModelInfo
	TypeNamePong           = wire.TypePong
	TypeNamePredictReply   = wire.TypePredictReply
	TypeNameModelInfoReply = wire.TypeModelInfoReply
	TypeNameError          = wire.TypeError
)

// ReplyTypeFor names the reply type of a request type; failures are
// answered with it too (error set, body empty), as the interface document
// says. Only TypeUnknown gets "error": a type name other than ping, predict
// and model_info, and a request whose type could not be read reliably
// (DecodeRequest leaves Type unknown for those; see Request.Type).
func ReplyTypeFor(t MessageType) string {
	switch t {
	case TypePing:
		return TypeNamePong
	case TypePredict:
		return TypeNamePredictReply
	case TypeModelInfo:
		return TypeNameModelInfoReply
	}
	return TypeNameError
}

// String returns the wire name of a request type.
func (t MessageType) String() string {
	switch t {
	case TypePing:
		return TypeNamePing
	case TypePredict:
		return TypeNamePredict
	case TypeModelInfo:
		return TypeNameModelInfo
	}
	return "unknown"
}

func lookupType(name []byte) MessageType {
	switch string(name) {
	case TypeNamePing:
		return TypePing
	case TypeNamePredict:
		return TypePredict
	case TypeNameModelInfo:
		return TypeModelInfo
	}
	return TypeUnknown
}

// Request is a decoded request envelope. It is meant to be reused: Decode
// resets it and refills its slices in place, so a warmed-up Request decodes
// a 2048-point predict without allocating. Byte slices are owned by the
// Request (copied out of the input) and stay valid until the next decode.
type Request struct {
	Version int64
	// Type is the request type, set as soon as the envelope's type field is
	// read, so that a failure is answered with the request's own reply type
	// (ReplyTypeFor). It is TypeUnknown when the type cannot be trusted:
	// the field is missing, not text, names no request type or is repeated,
	// or the frame is not one complete, well-formed MessagePack map (empty,
	// not a map, truncated, invalid or trailing bytes).
	Type MessageType
	// ID is the request id, set only when the envelope's id field is a
	// non-empty text value of at most MaxIDLength bytes. It is set even when
	// decoding fails later, so that error replies can carry it as
	// correlation_id; nil means it could not be recovered.
	ID    []byte
	TS    float64
	HasTS bool
	// Predict is filled for TypePredict only.
	Predict PredictBody
	// ModelInfo is filled for TypeModelInfo only.
	ModelInfo ModelInfoBody

	idBuf []byte // storage behind ID, kept across Reset
}

// ModelInfoBody is the optional body of a model_info request: which
// optional fields the reply should add.
type ModelInfoBody struct {
	// Wavenumbers: body.include names "wavenumbers", so the reply carries
	// the model's axis.
	Wavenumbers bool
}

// MaxInclude caps the names in a model_info request's body.include. There
// is one name today; the cap leaves room for more while bounding what a
// request can make the decoder walk.
const MaxInclude = 16

// PredictBody is the body of a predict request.
type PredictBody struct {
	Spectrum SpectrumBody
	Context  ContextBody
	Options  PredictOptions
}

// PredictOptions is body.options: what the client asks the reply to carry
// beyond the prediction. The zero value asks for nothing, and the reply is
// then exactly what it was before options existed.
type PredictOptions struct {
	// Contributions is K, how many variables to list by their
	// contribution to T2 and Q (0 to inference.MaxTopContributions); set
	// only when HasContributions. K = 0 still asks for the totals and the
	// region sums.
	Contributions    int
	HasContributions bool
}

// SpectrumBody is body.spectrum. Wavenumbers and Intensities are required;
// the other fields are optional (Has* false when absent or nil).
type SpectrumBody struct {
	Wavenumbers []float64
	Intensities []float64

	Channel          float64
	IntegrationMS    float64
	ScanSeq          float64
	HasChannel       bool
	HasIntegrationMS bool
	HasScanSeq       bool
}

// ContextBody is body.context, optional as a whole and field by field. The
// server does not use it; it only checks the field types.
type ContextBody struct {
	BatchID        []byte
	Port           []byte
	ColumnIndex    float64
	HasBatchID     bool
	HasPort        bool
	HasColumnIndex bool
}

// Reset clears r, keeping the capacity of its slices.
func (r *Request) Reset() {
	*r = Request{
		idBuf: r.idBuf[:0],
		Predict: PredictBody{
			Spectrum: SpectrumBody{
				Wavenumbers: r.Predict.Spectrum.Wavenumbers[:0],
				Intensities: r.Predict.Spectrum.Intensities[:0],
			},
			Context: ContextBody{
				BatchID: r.Predict.Context.BatchID[:0],
				Port:    r.Predict.Context.Port[:0],
			},
		},
	}
}

// Envelope keys, as bits of a set, to detect duplicates.
type fieldSet uint8

const (
	fieldV fieldSet = 1 << iota
	fieldType
	fieldID
	fieldTS
	fieldBody
)

// DecodeRequest decodes one request frame into req. It returns nil or an
// *contract.Error whose Code is MALFORMED_MESSAGE, UNSUPPORTED_VERSION, UNKNOWN_TYPE,
// INVALID_SPECTRUM or INVALID_REQUEST (body.options; see verdict for the
// precedence). Whatever the
// outcome, req.ID holds the request id if it could be read.
//
// Keys may come in any order. When type precedes body (as every known
// client sends them) a predict body is decoded in a single pass; otherwise
// body is skipped first and decoded once its type is known.
func DecodeRequest(data []byte, req *Request) error {
	req.Reset()
	d := envelopeDecoder{r: wire.Reader{Buf: data}, req: req}
	err := d.decode()
	if err != nil && (!d.wellFormed || d.typeRepeated) {
		req.Type = TypeUnknown
	}
	return err
}

type envelopeDecoder struct {
	r   wire.Reader
	req *Request

	seen   fieldSet
	dupKey []byte
	// typeRepeated: the type key came more than once, so which one the
	// client meant is unknown.
	typeRepeated bool
	// wellFormed: the frame was one complete MessagePack map.
	wellFormed bool
	versionOK  bool
	// versionHuge: v is an unsigned integer above math.MaxInt64.
	versionHuge bool
	problem     [5]string // per envelope field, the reason it is unusable
	typeName    []byte

	bodyStart, bodyEnd int  // span of a skipped non-nil body map
	bodyDone           bool // predict body decoded in place
	bodyErr            error
}

const (
	problemV = iota
	problemID
	problemType
	problemTS
	problemBody
)

func (d *envelopeDecoder) decode() error {
	r := &d.r
	d.bodyStart, d.bodyEnd = -1, -1
	if len(r.Buf) == 0 {
		return contract.Errorf(contract.MalformedMessage, "message is empty")
	}
	n, err := r.ReadMapLen()
	if err != nil {
		var wt wire.WrongTypeError
		if errors.As(err, &wt) {
			return contract.Errorf(contract.MalformedMessage, "message is a MessagePack %s, not a map", wire.KindName(wt.Code))
		}
		return d.structural(err)
	}
	for i := 0; i < n; i++ {
		if err := d.field(); err != nil {
			return d.structural(err)
		}
	}
	if r.Pos != len(r.Buf) {
		return contract.Errorf(contract.MalformedMessage, "%d trailing bytes after the envelope map", len(r.Buf)-r.Pos)
	}
	d.wellFormed = true
	return d.verdict()
}

// structural reports a message that is not well-formed MessagePack.
func (d *envelopeDecoder) structural(err error) error {
	return contract.Errorf(contract.MalformedMessage, "not a valid MessagePack envelope: %v", err)
}

// field decodes one key/value pair of the envelope. It returns only
// structural errors; problems with a field's type are noted for verdict.
func (d *envelopeDecoder) field() error {
	r := &d.r
	key, err := r.ReadText()
	if err != nil {
		if _, ok := err.(wire.WrongTypeError); !ok {
			return err
		}
		// A non-text key cannot be one of ours: skip it and its value.
		if err := r.SkipDepth(1); err != nil {
			return err
		}
		return r.SkipDepth(1)
	}
	var bit fieldSet
	switch string(key) {
	case "v":
		bit = fieldV
	case "type":
		bit = fieldType
	case "id":
		bit = fieldID
	case "ts":
		bit = fieldTS
	case "body":
		bit = fieldBody
	default:
		return r.SkipDepth(1) // unknown envelope keys are ignored
	}
	if d.seen&bit != 0 {
		d.typeRepeated = d.typeRepeated || bit == fieldType
		if d.dupKey == nil {
			d.dupKey = key
		}
		return r.SkipDepth(1)
	}
	d.seen |= bit

	switch bit {
	case fieldV:
		v, inRange, err := r.ReadInt()
		if err != nil {
			return d.noteWrongType(err, problemV, "v must be an integer")
		}
		d.versionOK = true
		d.req.Version = v
		d.versionHuge = !inRange
	case fieldID:
		id, err := r.ReadText()
		if err != nil {
			return d.noteWrongType(err, problemID, "id must be a string")
		}
		switch {
		case len(id) == 0:
			d.problem[problemID] = "id must not be empty"
		case len(id) > MaxIDLength:
			d.problem[problemID] = "id is longer than 256 bytes"
		case !utf8.Valid(id):
			// It comes back as correlation_id, a str: invalid UTF-8 there
			// would make the reply undecodable for clients using raw=False.
			d.problem[problemID] = "id is not valid UTF-8"
		default:
			d.req.idBuf = append(d.req.idBuf[:0], id...)
			d.req.ID = d.req.idBuf
		}
	case fieldType:
		name, err := r.ReadText()
		if err != nil {
			return d.noteWrongType(err, problemType, "type must be a string")
		}
		d.typeName = name
		d.req.Type = lookupType(name)
	case fieldTS:
		if r.SkipNil() {
			return nil // a nil ts counts as absent
		}
		ts, err := r.ReadNumber()
		if err != nil {
			return d.noteWrongType(err, problemTS, "ts must be a number")
		}
		d.req.TS, d.req.HasTS = ts, true
	case fieldBody:
		return d.body()
	}
	return nil
}

// noteWrongType records a wrong-typed envelope field and skips its value;
// structural errors pass through.
func (d *envelopeDecoder) noteWrongType(err error, which int, msg string) error {
	wt, ok := err.(wire.WrongTypeError)
	if !ok {
		return err
	}
	d.problem[which] = msg + ", got " + wire.KindName(wt.Code)
	return d.r.SkipDepth(1)
}

func (d *envelopeDecoder) body() error {
	r := &d.r
	start := r.Pos
	if r.SkipNil() {
		return nil // a nil body counts as an empty one
	}
	c, err := r.Peek()
	if err != nil {
		return err
	}
	if !(c >= wire.CodeFixMapLow && c <= wire.CodeFixMapHigh) && c != wire.CodeMap16 && c != wire.CodeMap32 {
		d.problem[problemBody] = "body must be a map, got " + wire.KindName(c)
		return r.SkipDepth(1)
	}
	if d.seen&fieldType != 0 && d.req.Type == TypeModelInfo {
		// As for predict below: decode in place, and on a content error
		// skip the body so that id is still read.
		d.bodyDone = true
		if d.bodyErr = decodeModelInfoBody(r, &d.req.ModelInfo); d.bodyErr != nil {
			r.Pos = start
			return r.SkipDepth(1)
		}
		return nil
	}
	if d.seen&fieldType != 0 && d.req.Type == TypePredict {
		// Fast path: decode in place. On a content error, rewind and skip
		// the body so the rest of the envelope (notably id) is still read.
		d.bodyDone = true
		if d.bodyErr = decodePredictBody(r, &d.req.Predict); d.bodyErr != nil {
			r.Pos = start
			return r.SkipDepth(1)
		}
		return nil
	}
	if err := r.SkipDepth(1); err != nil {
		return err
	}
	d.bodyStart, d.bodyEnd = start, r.Pos
	return nil
}

// verdict applies the error precedence once the whole envelope is read:
// duplicate key, v, id, type, ts, body shape (MALFORMED_MESSAGE or
// UNSUPPORTED_VERSION), then UNKNOWN_TYPE, then the predict body
// (INVALID_SPECTRUM).
func (d *envelopeDecoder) verdict() error {
	switch {
	case d.dupKey != nil:
		return contract.Errorf(contract.MalformedMessage, "duplicate envelope key %q", d.dupKey)
	case d.problem[problemV] != "":
		return contract.Errorf(contract.MalformedMessage, "%s", d.problem[problemV])
	case !d.versionOK:
		return contract.Errorf(contract.MalformedMessage, "missing envelope field v")
	case d.versionHuge:
		return contract.Errorf(contract.UnsupportedVersion, "unsupported protocol version (above 2^63); this server speaks v=%d", ProtocolVersion)
	case d.req.Version != ProtocolVersion:
		return contract.Errorf(contract.UnsupportedVersion, "unsupported protocol version v=%d; this server speaks v=%d", d.req.Version, ProtocolVersion)
	case d.problem[problemID] != "":
		return contract.Errorf(contract.MalformedMessage, "%s", d.problem[problemID])
	case d.seen&fieldID == 0:
		return contract.Errorf(contract.MalformedMessage, "missing envelope field id")
	case d.problem[problemType] != "":
		return contract.Errorf(contract.MalformedMessage, "%s", d.problem[problemType])
	case d.seen&fieldType == 0:
		return contract.Errorf(contract.MalformedMessage, "missing envelope field type")
	case d.problem[problemTS] != "":
		return contract.Errorf(contract.MalformedMessage, "%s", d.problem[problemTS])
	case d.problem[problemBody] != "":
		return contract.Errorf(contract.MalformedMessage, "%s", d.problem[problemBody])
	case d.req.Type == TypeUnknown:
		name := d.typeName
		if len(name) > 64 {
			name = name[:64]
		}
		return contract.Errorf(contract.UnknownType, "unknown message type %q; expected ping, predict or model_info", name)
	case d.req.Type == TypeModelInfo:
		return d.modelInfoVerdict()
	case d.req.Type != TypePredict:
		return nil
	}
	if !d.bodyDone {
		if d.bodyStart < 0 { // body absent or nil
			return invalid("body.spectrum is missing")
		}
		sub := wire.Reader{Buf: d.r.Buf[:d.bodyEnd], Pos: d.bodyStart}
		d.bodyErr = decodePredictBody(&sub, &d.req.Predict)
	}
	if d.bodyErr != nil {
		var e *contract.Error
		if errors.As(d.bodyErr, &e) {
			return e
		}
		return d.structural(d.bodyErr)
	}
	return d.req.Predict.validate()
}

// modelInfoVerdict decodes a model_info body that came before the type
// (or reports the one decoded in place): INVALID_REQUEST for a malformed
// include.
func (d *envelopeDecoder) modelInfoVerdict() error {
	if !d.bodyDone && d.bodyStart >= 0 {
		sub := wire.Reader{Buf: d.r.Buf[:d.bodyEnd], Pos: d.bodyStart}
		d.bodyErr = decodeModelInfoBody(&sub, &d.req.ModelInfo)
	}
	if d.bodyErr != nil {
		var e *contract.Error
		if errors.As(d.bodyErr, &e) {
			return e
		}
		return d.structural(d.bodyErr)
	}
	return nil
}

// ---- model_info body

// decodeModelInfoBody reads a model_info body map known to start at
// r.Pos. Unknown keys are ignored; include must be nil or an array of at
// most MaxInclude strings, else INVALID_REQUEST. Names it does not know
// are ignored, so that a newer client can ask an older server (the
// reply then lacks the field). Nothing is allocated: a name is compared
// where it lies in the frame.
func decodeModelInfoBody(r *wire.Reader, b *ModelInfoBody) error {
	n, err := r.ReadMapLen()
	if err != nil {
		return err
	}
	return decodeOneKnownKey(r, n, 2, "include", "body.include", func() error { return decodeInclude(r, b) })
}

// decodeOneKnownKey reads the n entries of a map at depth of which one
// key, name, is known: decode reads its value. The key given twice is
// INVALID_REQUEST naming field; other keys are skipped with their values.
func decodeOneKnownKey(r *wire.Reader, n, depth int, name, field string, decode func() error) error {
	seen := false
	for i := 0; i < n; i++ {
		key, skipped, err := nextKey(r, depth)
		if err != nil {
			return err
		}
		if skipped {
			continue
		}
		if string(key) != name {
			if err := r.SkipDepth(depth); err != nil {
				return err
			}
			continue
		}
		if seen {
			return invalidRequest("duplicate key %s", field)
		}
		seen = true
		if err := decode(); err != nil {
			return err
		}
	}
	return nil
}

func decodeInclude(r *wire.Reader, b *ModelInfoBody) error {
	if r.SkipNil() {
		return nil
	}
	n, hdr, err := r.ReadArrayHeader()
	if err != nil {
		if wt, ok := err.(wire.WrongTypeError); ok {
			return invalidRequest("body.include must be an array of strings, got %s", wire.KindName(wt.Code))
		}
		return err
	}
	if n > MaxInclude {
		return invalidRequest("body.include has %d names, at most %d", n, MaxInclude)
	}
	r.Pos += hdr
	for i := 0; i < int(n); i++ {
		name, err := r.ReadText()
		if err != nil {
			if wt, ok := err.(wire.WrongTypeError); ok {
				return invalidRequest("body.include[%d] is %s, not a string", i, wire.KindName(wt.Code))
			}
			return err
		}
		if string(name) == "wavenumbers" {
			b.Wavenumbers = true
		}
	}
	return nil
}

// ---- predict body

func invalid(format string, args ...any) *contract.Error {
	return contract.Errorf(contract.InvalidSpectrum, format, args...)
}

// decodePredictBody reads a body map known to start at r.Pos. It returns
// an *contract.Error (INVALID_SPECTRUM, or INVALID_REQUEST for
// body.options) for content problems and a plain error for structural
// ones. The first problem met in the bytes is the one reported.
func decodePredictBody(r *wire.Reader, b *PredictBody) error {
	n, err := r.ReadMapLen()
	if err != nil {
		return err
	}
	var seenSpectrum, seenContext, seenOptions bool
	for i := 0; i < n; i++ {
		key, skipped, err := nextKey(r, 2)
		if err != nil {
			return err
		}
		if skipped {
			continue
		}
		switch string(key) {
		case "spectrum":
			if seenSpectrum {
				return invalid("duplicate key body.spectrum")
			}
			seenSpectrum = true
			if err := decodeSpectrum(r, &b.Spectrum); err != nil {
				return err
			}
		case "context":
			if seenContext {
				return invalid("duplicate key body.context")
			}
			seenContext = true
			if err := decodeContext(r, &b.Context); err != nil {
				return err
			}
		case "options":
			if seenOptions {
				return invalidRequest("duplicate key body.options")
			}
			seenOptions = true
			if err := decodeOptions(r, &b.Options); err != nil {
				return err
			}
		default:
			if err := r.SkipDepth(2); err != nil {
				return err
			}
		}
	}
	if !seenSpectrum {
		return invalid("body.spectrum is missing")
	}
	return nil
}

// submap opens a nested map field. A nil value reports present=false.
func submap(r *wire.Reader, field string) (n int, present bool, err error) {
	if r.SkipNil() {
		return 0, false, nil
	}
	n, err = r.ReadMapLen()
	if err != nil {
		if wt, ok := err.(wire.WrongTypeError); ok {
			return 0, false, invalid("%s must be a map, got %s", field, wire.KindName(wt.Code))
		}
		return 0, false, err
	}
	return n, true, nil
}

func decodeSpectrum(r *wire.Reader, s *SpectrumBody) error {
	n, present, err := submap(r, "body.spectrum")
	if err != nil {
		return err
	}
	if !present {
		return invalid("body.spectrum must be a map, got nil")
	}
	var seenW, seenI bool
	var seen keySet
	for i := 0; i < n; i++ {
		key, skipped, err := nextKey(r, 3)
		if err != nil {
			return err
		}
		if skipped {
			continue
		}
		switch string(key) {
		case "wavenumbers":
			if seenW {
				return invalid("duplicate key body.spectrum.wavenumbers")
			}
			seenW = true
			if s.Wavenumbers, err = decodeFloats(r, "body.spectrum.wavenumbers", s.Wavenumbers); err != nil {
				return err
			}
		case "intensities":
			if seenI {
				return invalid("duplicate key body.spectrum.intensities")
			}
			seenI = true
			if s.Intensities, err = decodeFloats(r, "body.spectrum.intensities", s.Intensities); err != nil {
				return err
			}
		case "channel":
			if err := seen.once(1, "body.spectrum.channel"); err != nil {
				return err
			}
			if s.Channel, s.HasChannel, err = optionalNumber(r, "body.spectrum.channel"); err != nil {
				return err
			}
		case "integration_ms":
			if err := seen.once(2, "body.spectrum.integration_ms"); err != nil {
				return err
			}
			if s.IntegrationMS, s.HasIntegrationMS, err = optionalNumber(r, "body.spectrum.integration_ms"); err != nil {
				return err
			}
		case "scan_seq":
			if err := seen.once(4, "body.spectrum.scan_seq"); err != nil {
				return err
			}
			if s.ScanSeq, s.HasScanSeq, err = optionalNumber(r, "body.spectrum.scan_seq"); err != nil {
				return err
			}
		default:
			if err := r.SkipDepth(3); err != nil {
				return err
			}
		}
	}
	if !seenW {
		return invalid("body.spectrum.wavenumbers is missing")
	}
	if !seenI {
		return invalid("body.spectrum.intensities is missing")
	}
	return nil
}

func decodeContext(r *wire.Reader, c *ContextBody) error {
	n, present, err := submap(r, "body.context")
	if err != nil || !present {
		return err
	}
	var seen keySet
	for i := 0; i < n; i++ {
		key, skipped, err := nextKey(r, 3)
		if err != nil {
			return err
		}
		if skipped {
			continue
		}
		switch string(key) {
		case "batch_id":
			if err := seen.once(1, "body.context.batch_id"); err != nil {
				return err
			}
			if c.BatchID, c.HasBatchID, err = optionalText(r, "body.context.batch_id", c.BatchID); err != nil {
				return err
			}
		case "port":
			if err := seen.once(2, "body.context.port"); err != nil {
				return err
			}
			if c.Port, c.HasPort, err = optionalText(r, "body.context.port", c.Port); err != nil {
				return err
			}
		case "column_index":
			if err := seen.once(4, "body.context.column_index"); err != nil {
				return err
			}
			if c.ColumnIndex, c.HasColumnIndex, err = optionalNumber(r, "body.context.column_index"); err != nil {
				return err
			}
		default:
			if err := r.SkipDepth(3); err != nil {
				return err
			}
		}
	}
	return nil
}

// invalidRequest reports a well-formed predict whose options ask for
// something the server does not give: not a bad spectrum, so not
// INVALID_SPECTRUM.
func invalidRequest(format string, args ...any) *contract.Error {
	return contract.Errorf(contract.InvalidRequest, format, args...)
}

// decodeOptions reads body.options (nil counts as absent). Unknown keys
// are ignored, as at every level of the envelope; a known key given twice
// or of the wrong type, and a value out of range, are INVALID_REQUEST.
func decodeOptions(r *wire.Reader, o *PredictOptions) error {
	if r.SkipNil() {
		return nil
	}
	n, err := r.ReadMapLen()
	if err != nil {
		if wt, ok := err.(wire.WrongTypeError); ok {
			return invalidRequest("body.options must be a map, got %s", wire.KindName(wt.Code))
		}
		return err
	}
	const field = "body.options.contributions"
	return decodeOneKnownKey(r, n, 3, "contributions", field, func() (err error) {
		o.Contributions, o.HasContributions, err = decodeTopCount(r, field)
		return err
	})
}

// decodeTopCount reads a count of 0 to inference.MaxTopContributions, as
// any MessagePack int or a float with an integral value (what a client
// going through JSON may send); nil counts as absent.
func decodeTopCount(r *wire.Reader, field string) (int, bool, error) {
	if r.SkipNil() {
		return 0, false, nil
	}
	v, err := r.ReadNumber()
	if err != nil {
		if wt, ok := err.(wire.WrongTypeError); ok {
			return 0, false, invalidRequest("%s must be an integer, got %s", field, wire.KindName(wt.Code))
		}
		return 0, false, err
	}
	if !(v >= 0 && v <= inference.MaxTopContributions) || v != math.Trunc(v) {
		return 0, false, invalidRequest("%s must be an integer from 0 to %d, got %v", field, inference.MaxTopContributions, v)
	}
	return int(v), true, nil
}

// nextKey reads the next key of a map at depth. The envelope's keys are
// text: a key of another type is skipped together with its value
// (skipped), as an unknown key is.
func nextKey(r *wire.Reader, depth int) (key []byte, skipped bool, err error) {
	key, err = r.ReadText()
	if err == nil {
		return key, false, nil
	}
	if _, ok := err.(wire.WrongTypeError); !ok {
		return nil, false, err
	}
	if err := r.SkipDepth(depth); err != nil {
		return nil, false, err
	}
	if err := r.SkipDepth(depth); err != nil {
		return nil, false, err
	}
	return nil, true, nil
}

// keySet remembers which optional keys of one map were given, one bit
// each, so that a repeated key is refused like a repeated required one
// rather than silently overwritten.
type keySet uint8

// once records bit and fails, naming field, when it was set before.
func (k *keySet) once(bit keySet, field string) error {
	if *k&bit != 0 {
		return invalid("duplicate key %s", field)
	}
	*k |= bit
	return nil
}

func optionalNumber(r *wire.Reader, field string) (float64, bool, error) {
	if r.SkipNil() {
		return 0, false, nil
	}
	v, err := r.ReadNumber()
	if err != nil {
		if wt, ok := err.(wire.WrongTypeError); ok {
			return 0, false, invalid("%s must be a number, got %s", field, wire.KindName(wt.Code))
		}
		return 0, false, err
	}
	return v, true, nil
}

func optionalText(r *wire.Reader, field string, dst []byte) ([]byte, bool, error) {
	if r.SkipNil() {
		return dst[:0], false, nil
	}
	v, err := r.ReadText()
	if err != nil {
		if wt, ok := err.(wire.WrongTypeError); ok {
			return dst[:0], false, invalid("%s must be a string, got %s", field, wire.KindName(wt.Code))
		}
		return dst[:0], false, err
	}
	return append(dst[:0], v...), true, nil
}

// decodeFloats reads an array of numbers into dst (reusing its capacity).
// The announced length is checked against MaxPoints and against the bytes
// left before dst grows. Elements may be any MessagePack int or float;
// anything else, and NaN or infinity, is INVALID_SPECTRUM naming the index.
func decodeFloats(r *wire.Reader, field string, dst []float64) ([]float64, error) {
	n, hdr, err := r.ReadArrayHeader()
	if err != nil {
		if wt, ok := err.(wire.WrongTypeError); ok {
			return dst[:0], invalid("%s must be an array of numbers, got %s", field, wire.KindName(wt.Code))
		}
		return dst[:0], err
	}
	if n > MaxPoints {
		return dst[:0], invalid("%s has too many points (%d, at most %d)", field, n, MaxPoints)
	}
	if n > uint64(r.Remaining()-hdr) {
		return dst[:0], wire.ErrTruncated
	}
	r.Pos += hdr
	if uint64(cap(dst)) < n {
		dst = make([]float64, n)
	}
	dst = dst[:n]
	buf, pos := r.Buf, r.Pos
	for i := range dst {
		var v float64
		// float64 is what numpy and Python floats pack to: decode it inline;
		// every other form goes through readNumber.
		if pos+9 <= len(buf) && buf[pos] == wire.CodeFloat64 {
			v = math.Float64frombits(binary.BigEndian.Uint64(buf[pos+1 : pos+9]))
			pos += 9
		} else {
			r.Pos = pos
			v, err = r.ReadNumber()
			if err != nil {
				if wt, ok := err.(wire.WrongTypeError); ok {
					return dst[:0], invalid("%s[%d] is %s, not a number", field, i, wire.KindName(wt.Code))
				}
				return dst[:0], err
			}
			pos = r.Pos
		}
		if v-v != 0 { // NaN or ±Inf
			r.Pos = pos
			return dst[:0], invalid("%s[%d] is not finite (%v)", field, i, v)
		}
		dst[i] = v
	}
	r.Pos = pos
	return dst, nil
}

// validate checks what a predict needs beyond the types: non-empty arrays
// of equal length. Whether the axis matches the model is the model's call.
func (b *PredictBody) validate() error {
	s := &b.Spectrum
	switch {
	case len(s.Intensities) == 0:
		return invalid("body.spectrum.intensities is empty")
	case len(s.Wavenumbers) != len(s.Intensities):
		return invalid("body.spectrum.wavenumbers has %d points but body.spectrum.intensities has %d",
			len(s.Wavenumbers), len(s.Intensities))
	}
	return nil
}
