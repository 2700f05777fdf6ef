package reconcile

import (
	"context"
	"time"
)

// Role is the part a model version played when it predicted on a
// spectrum.
type Role string

// The roles a logged prediction can have.
const (
	// RoleActive: the model that answered the rig.
	RoleActive Role = "active"
	// RoleShadow: the shadow model, scored beside the active one.
	RoleShadow Role = "shadow"
	// RoleRescored: a model scored later on the logged spectrum.
	RoleRescored Role = "rescored"
)

// roleRank orders roles when one version has several predictions on one
// spectrum: the live ones first.
func roleRank(r Role) int {
	switch r {
	case RoleActive:
		return 0
	case RoleShadow:
		return 1
	case RoleRescored:
		return 2
	}
	return 3
}

// Prediction is the part of one logged prediction that reconciliation
// reads.
type Prediction struct {
	// SpectrumID identifies the logged predict request (one spectrum of
	// the rig). The active, shadow and rescored predictions made on the
	// same spectrum share it.
	SpectrumID int64
	// Time is when the spectrum's predict was logged.
	Time time.Time
	// BatchID, ScanSeq and HasScanSeq are the spectrum's context.
	BatchID    string
	ScanSeq    int64
	HasScanSeq bool
	// ModelVersion and Role say which model predicted, and as what.
	ModelVersion string
	Role         Role
	// Predicted holds the model's concentrations, in g/L, for the
	// analytes among its targets.
	Predicted Values
}

// PredictionLog is what reconciliation reads from the prediction log.
// Every method returns all the predictions (every version and role)
// of the spectra it selects, in any order; an empty result is not an
// error. Implementations must be safe for concurrent use.
type PredictionLog interface {
	// HasBatch reports whether any spectrum of batchID is logged.
	HasBatch(ctx context.Context, batchID string) (bool, error)
	// FindByScanSeq returns the predictions of the spectra of batchID
	// whose scan_seq is seq (normally one spectrum).
	FindByScanSeq(ctx context.Context, batchID string, seq int64) ([]Prediction, error)
	// Nearest returns the predictions of at most two spectra of batchID:
	// the latest logged at or before t, and the earliest logged after t,
	// each only if its time is within window of t, bounds included
	// (|time - t| <= window). Of spectra logged at the same instant, the
	// one with the lowest SpectrumID is the candidate.
	Nearest(ctx context.Context, batchID string, t time.Time, window time.Duration) ([]Prediction, error)
	// Predictions returns the predictions of the spectra with the given
	// ids (ids unknown to the log are skipped).
	Predictions(ctx context.Context, spectrumIDs []int64) ([]Prediction, error)
}
