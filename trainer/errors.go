package trainer

import (
	"errors"
	"fmt"
)

// Sentinel errors of training; server/contract maps them to contract
// codes (ErrInvalidCSV -> 400 INVALID_CSV, ErrCSVTooLarge -> 413
// PAYLOAD_TOO_LARGE, ErrTrainingDiverged -> job error TRAINING_DIVERGED,
// ErrMemoryBusy -> 503 SERVER_BUSY). The job queue's are package jobs'.
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
	// ErrMemoryBudget: the training memory budget cannot hold the data
	// set. A *MemoryBudgetError carries it and also unwraps to
	// ErrCSVTooLarge (413 PAYLOAD_TOO_LARGE) when the data set alone is
	// larger than the whole budget, or to ErrMemoryBusy when other
	// uploads and jobs hold the room it needs.
	ErrMemoryBudget = errors.New("training memory budget exhausted")
	// ErrMemoryBusy: the training memory budget would hold the data set
	// so far, but other uploads and queued or running jobs hold the room
	// it needs now. Transient: the same upload may fit once they end.
	ErrMemoryBusy = errors.New("training memory budget in use by other uploads and jobs")
)

// MemoryBudgetError is a data set refused memory by its Charger. Its
// message names the budget when the charger can say it (Limit > 0).
// Whether a retry can help decides what it unwraps to: see NeverFits.
type MemoryBudgetError struct {
	Rows    int   // rows held when the charge was refused
	Charged int64 // bytes the data set had charged so far
	Need    int64 // the refused charge
	Limit   int64 // the budget's size, when known
}

// NeverFits reports whether the data set can never fit: its own charge
// plus the refused one is more than the whole budget, so no retry of the
// same upload succeeds. A budget of unknown size is taken as never fitting.
func (e *MemoryBudgetError) NeverFits() bool {
	return e.Limit <= 0 || e.Need > e.Limit-e.Charged
}

func (e *MemoryBudgetError) Error() string {
	budget := "the training memory budget"
	if e.Limit > 0 {
		budget = fmt.Sprintf("the training memory budget (-max-training-memory, %d bytes, shared by every upload and queued or running job)", e.Limit)
	}
	if e.NeverFits() {
		return fmt.Sprintf("%v: after %d rows the data set and its training copy hold %d bytes and need %d more, which by themselves cross %s; upload fewer rows",
			ErrCSVTooLarge, e.Rows, e.Charged, e.Need, budget)
	}
	return fmt.Sprintf("%v: after %d rows the data set and its training copy hold %d bytes and need %d more, which fit in %s but not while other uploads and jobs hold the rest; retry when they have finished",
		ErrMemoryBusy, e.Rows, e.Charged, e.Need, budget)
}

// Unwrap makes errors.Is true for ErrMemoryBudget and, as NeverFits says,
// for ErrCSVTooLarge (never fits) or ErrMemoryBusy (may fit later).
func (e *MemoryBudgetError) Unwrap() []error {
	if e.NeverFits() {
		return []error{ErrMemoryBudget, ErrCSVTooLarge}
	}
	return []error{ErrMemoryBudget, ErrMemoryBusy}
}
