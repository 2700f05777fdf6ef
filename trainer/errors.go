package trainer

import "errors"

// Sentinel errors of training. Package server maps them to contract codes:
// ErrInvalidCSV -> 400 INVALID_CSV, ErrCSVTooLarge -> 413 PAYLOAD_TOO_LARGE,
// ErrTrainingDiverged -> job error TRAINING_DIVERGED, ErrQueueFull -> 429
// TRAINING_QUEUE_FULL, ErrJobNotFound -> 404 JOB_NOT_FOUND.
var (
	// ErrInvalidCSV: the training CSV is malformed. The wrapping error
	// (a *CSVError) names the line and column.
	ErrInvalidCSV = errors.New("invalid CSV")
	// ErrCSVTooLarge: the upload exceeds the configured byte or row limit.
	ErrCSVTooLarge = errors.New("training CSV too large")
	// ErrTrainingDiverged: the fit produced non-finite numbers, or the
	// chosen model predicts no better than the mean (CV R2 <= 0 for some
	// analyte). See Train for the exact rule.
	ErrTrainingDiverged = errors.New("training diverged")
	// ErrInvalidOptions: the training options or data shape are unusable
	// (for example more folds than samples).
	ErrInvalidOptions = errors.New("invalid training options")
	// ErrQueueFull: a training runs and the bounded queue is full.
	ErrQueueFull = errors.New("training queue full")
	// ErrJobNotFound: no job with this id exists.
	ErrJobNotFound = errors.New("training job not found")
	// ErrInterrupted: the job was queued or running when the process died.
	ErrInterrupted = errors.New("training interrupted by a restart")
)
