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

	// ErrModelNotFound: the requested version is not in the registry.
	ErrModelNotFound = errors.New("model not found")
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
	// ErrLoadInProgress: another load is running.
	ErrLoadInProgress = errors.New("another model load is in progress")
	// ErrPathNotAllowed: a file load path is relative, not .joblib, or
	// outside every allowed root.
	ErrPathNotAllowed = errors.New("path not allowed")
	// ErrVersionExists: a file load names a version already in the registry.
	ErrVersionExists = errors.New("version already exists")
	// ErrModelStatusMismatch: a load names a version that exists with
	// another status than its source (staged vs archived).
	ErrModelStatusMismatch = errors.New("model has another status")
	// ErrModelActive: the version is the active one and cannot be deleted.
	ErrModelActive = errors.New("model is active")
	// ErrModelBusy: the version cannot be deleted while a re-scoring job
	// for it is queued or running (or being queued): the job holds the
	// model and writes records that name the version.
	ErrModelBusy = errors.New("model is in use by a re-scoring job")
	// ErrReservedVersion: the version name is one of the names the
	// management routes use (load, list, info, shadow).
	ErrReservedVersion = errors.New("version name is reserved")
	// ErrShadowIsActive: the version asked for as the shadow is the active
	// model; a model cannot shadow itself.
	ErrShadowIsActive = errors.New("the version is the active model")
	// ErrNoLoggedSpectra: re-scoring needs spectra in the prediction log,
	// and the server does not log them (-log-spectra) or none lies in the
	// range asked for.
	ErrNoLoggedSpectra = errors.New("no logged spectra to re-score")
	// ErrRegistry: the registry on disk could not be read or written.
	ErrRegistry = errors.New("registry I/O failure")
)
