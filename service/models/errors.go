package models

import "errors"

// Errors of the models' use cases; server/contract maps them to contract
// codes.
var (
	// ErrModelBusy: the version cannot be deleted while a re-scoring job
	// for it is queued or running (or being queued): the job holds the
	// model and writes records that name the version.
	ErrModelBusy = errors.New("model is in use by a re-scoring job")
	// ErrExportFormat: an export names a format there is no writer for.
	ErrExportFormat = errors.New("unknown export format")
)
