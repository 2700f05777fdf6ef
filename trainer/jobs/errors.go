package jobs

import "errors"

// Errors of the job queue; server/contract maps them to contract codes.
var (
	// ErrNoLoggedSpectra: re-scoring needs spectra in the prediction log,
	// and the server does not log them (-log-spectra) or none lies in the
	// range asked for.
	ErrNoLoggedSpectra = errors.New("no logged spectra to re-score")
)
