package codec

import (
	"fmt"

	"ramanserve/server/contract"
)

// Code is a machine-readable error code, carried in the reply's error
// object. The codes are the contract's (package contract is the single
// source); these names are the ones the prediction channel uses.
type Code = contract.Code

// Error codes of the prediction channel. The exact condition of each is
// listed in api/messages.md.
const (
	// CodeMalformedMessage: the frame is not one MessagePack map, is
	// truncated, has trailing bytes, repeats an envelope key, or an envelope
	// field (v, id, type, ts, body) is missing or has the wrong type; also a
	// request with other than exactly one body frame.
	CodeMalformedMessage = contract.MalformedMessage
	// CodeUnsupportedVersion: v is an integer other than 1.
	CodeUnsupportedVersion = contract.UnsupportedVersion
	// CodeUnknownType: type is not ping, predict or model_info.
	CodeUnknownType = contract.UnknownType
	// CodeInvalidSpectrum: the predict body is unusable (missing or
	// wrong-typed field, non-numeric or non-finite element, empty or
	// unequal arrays, too many points) or the model rejects the spectrum as
	// malformed.
	CodeInvalidSpectrum = contract.InvalidSpectrum
	// CodeSpectrumOutOfRange: the spectrum is well formed but the model
	// cannot be applied to it (axis mismatch, saturation).
	CodeSpectrumOutOfRange = contract.SpectrumOutOfRange
	// CodeModelNotLoaded: predict or model_info while no model is active.
	CodeModelNotLoaded = contract.ModelNotLoaded
	// CodeMessageTooLarge: the transport refused a message above the
	// configured maximum size; its content was never read.
	CodeMessageTooLarge = contract.MessageTooLarge
	// CodeServerBusy: a message over 64 KiB arrived while the transport's
	// shared buffer for large messages was in use; its content was never
	// read. The same request may succeed a moment later.
	CodeServerBusy = contract.ServerBusy
	// CodeInternalError: a fault inside the server (for example a model
	// that panicked).
	CodeInternalError = contract.InternalError
)

// Retryable reports whether a channel client may usefully send the same
// request again. Every code but SERVER_BUSY and INTERNAL_ERROR is
// deterministic: the same request gets the same answer.
func Retryable(c Code) bool { return c == CodeInternalError || c == CodeServerBusy }

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
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: Retryable(code)}
}
