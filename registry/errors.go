package registry

import "errors"

// Errors of the registry's rules. Callers wrap them with context
// (fmt.Errorf("...: %w", ErrX)); server/contract maps them to contract
// codes in one place.
var (
	// ErrModelNotFound: the requested version is not in the registry.
	ErrModelNotFound = errors.New("model not found")
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
	// ErrReservedVersion: the version name is one of the names the
	// management routes use (load, list, info, shadow).
	ErrReservedVersion = errors.New("version name is reserved")
	// ErrShadowIsActive: the version asked for as the shadow is the active
	// model; a model cannot shadow itself.
	ErrShadowIsActive = errors.New("the version is the active model")
	// ErrPreconditionFailed: a load's precondition (the registry's ETag,
	// or the version expected to be active) no longer holds; the message
	// names the active version.
	ErrPreconditionFailed = errors.New("precondition failed")
)
