package jobs

import "errors"

// Errors of the job queue; server/contract maps them to contract codes.
var (
	// ErrQueueFull: a training runs and the bounded queue is full.
	ErrQueueFull = errors.New("training queue full")
	// ErrJobNotFound: no job with this id exists.
	ErrJobNotFound = errors.New("training job not found")
	// ErrJobFinished: the job already ended (done or failed); it cannot
	// be cancelled.
	ErrJobFinished = errors.New("training job already finished")
	// ErrCancelled: the job was cancelled by a client (its error code).
	ErrCancelled = errors.New("training job cancelled")
	// ErrInvalidCursor: a job list cursor this server did not issue, or
	// a damaged one.
	ErrInvalidCursor = errors.New("invalid cursor")
	// ErrJobNotDone: the job is queued, running or failed, so it has no
	// model (its report was asked for).
	ErrJobNotDone = errors.New("training job not done")
	// ErrInterrupted: the job was queued or running when the process died.
	ErrInterrupted = errors.New("training interrupted by a restart")
	// ErrNoLoggedSpectra: re-scoring needs spectra in the prediction log,
	// and the server does not log them (-log-spectra) or none lies in the
	// range asked for.
	ErrNoLoggedSpectra = errors.New("no logged spectra to re-score")
)
