package inference

import "errors"

// Sentinel errors of the domain. Callers wrap them with context
// (fmt.Errorf("...: %w", ErrX)); package server maps them to contract codes
// in one place.
var (
	// ErrModelNotLoaded: no model is active.
	ErrModelNotLoaded = errors.New("no model is loaded")
	// ErrInvalidSpectrum: the spectrum is malformed (missing field, wrong
	// length, NaN/Inf, non-increasing axis).
	ErrInvalidSpectrum = errors.New("invalid spectrum")
	// ErrSpectrumOutOfRange: the spectrum is well formed but the model
	// cannot be applied to it (axis mismatch, saturated intensities).
	ErrSpectrumOutOfRange = errors.New("spectrum out of range")
	// ErrModelCorrupted: the model file could not be read or is invalid.
	ErrModelCorrupted = errors.New("model corrupted")
	// ErrUnsafeModel: a pickle asked for a global outside the allowlist.
	ErrUnsafeModel = errors.New("model file refers to a disallowed class")
	// ErrModelUnsupported: a pickle that is safe to read asks for a form
	// the server cannot reproduce exactly (an allowlisted function with an
	// argument outside the documented ones).
	ErrModelUnsupported = errors.New("model file uses an unsupported form")
	// ErrModelTargets: the model's targets cannot be mapped to EPA/DHA/DPA.
	ErrModelTargets = errors.New("model targets unknown")
)
