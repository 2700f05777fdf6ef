package codec

import "fmt"

// Code is a machine-readable error code of the prediction channel, carried in
// the reply's error object.
type Code string

// Error codes of the prediction channel. The exact condition of each is
// listed in api/messages.md.
const (
	// CodeMalformedMessage: the frame is not one MessagePack map, is
	// truncated, has trailing bytes, repeats an envelope key, or an envelope
	// field (v, id, type, ts, body) is missing or has the wrong type; also a
	// request with other than exactly one body frame.
	CodeMalformedMessage Code = "MALFORMED_MESSAGE"
	// CodeUnsupportedVersion: v is an integer other than 1.
	CodeUnsupportedVersion Code = "UNSUPPORTED_VERSION"
	// CodeUnknownType: type is not ping, predict or model_info.
	CodeUnknownType Code = "UNKNOWN_TYPE"
	// CodeInvalidSpectrum: the predict body is unusable (missing or
	// wrong-typed field, non-numeric or non-finite element, empty or
	// unequal arrays, too many points) or the model rejects the spectrum as
	// malformed.
	CodeInvalidSpectrum Code = "INVALID_SPECTRUM"
	// CodeSpectrumOutOfRange: the spectrum is well formed but the model
	// cannot be applied to it (axis mismatch, saturation).
	CodeSpectrumOutOfRange Code = "SPECTRUM_OUT_OF_RANGE"
	// CodeModelNotLoaded: predict or model_info while no model is active.
	CodeModelNotLoaded Code = "MODEL_NOT_LOADED"
	// CodeMessageTooLarge: the transport refused a message above the
	// configured maximum size; its content was never read.
	CodeMessageTooLarge Code = "MESSAGE_TOO_LARGE"
	// CodeInternalError: a fault inside the server (for example a model
	// that panicked). The only retryable code.
	CodeInternalError Code = "INTERNAL_ERROR"
)

// Retryable reports whether a client may usefully send the same request
// again. Every code except INTERNAL_ERROR is deterministic: the same request
// gets the same answer.
func (c Code) Retryable() bool { return c == CodeInternalError }

// Error is the reply's error object {code, message, retryable}. Decoding
// functions return it (as error) to classify what went wrong.
type Error struct {
	Code      Code
	Message   string
	Retryable bool
}

// Error implements error.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// NewError builds an Error whose Retryable flag follows the code.
func NewError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code.Retryable()}
}
