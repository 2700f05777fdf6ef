package app

import (
	"time"

	"ramanserve/evidence"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/shadow"
)

// EvidenceConfig configures the prediction log, shadow scoring and lab
// reconciliation. The log and the lab results live in the
// registry directory.
type EvidenceConfig struct {
	// LogOff keeps no prediction log (-prediction-log=false): nothing is
	// recorded, the shadow runs for its comparison only, and the routes
	// that read the log (predictions, lab results, performance, rescore)
	// answer 501 NOT_IMPLEMENTED, or 409 NO_LOGGED_SPECTRA.
	LogOff bool
	// LogSpectra stores each active prediction's spectrum (float32,
	// compressed) so that a model can be re-scored later (-log-spectra).
	LogSpectra bool
	// ExplainExceedances stores the contributions of a prediction whose
	// T2 or Q exceeds its limit, computed off the reply path
	// (-log-exceedance-contributions; evidence.Options).
	ExplainExceedances bool
	// IdlePriority runs the log's writer and the shadow scorer at idle CPU
	// priority (-evidence-idle-priority; package idlecpu).
	IdlePriority bool
	// Retention deletes logged predictions older than this; 0 keeps them
	// by age (-prediction-log-retention).
	Retention time.Duration
	// MaxBytes bounds the prediction log's files (-prediction-log-max-bytes).
	MaxBytes int64
	// MatchWindow is how far from a lab sample's sampled_at the nearest
	// logged prediction of its batch may be (-lab-match-window; 0: 60 s).
	MatchWindow time.Duration
}

// recordBytes is a generous size of one queued record without its
// spectrum: the struct, its strings and the allocator's rounding.
const recordBytes = 1 << 10

// MemoryBound is the most the evidence path holds in memory, whatever
// the clients send: the prediction log's queue and the batch being
// committed (each record with its float32 spectrum, at most
// evidence.MaxLoggedPoints, with -log-spectra), and the shadow's queue
// of spectra, and the exceedances waiting for their contributions (a
// float64 copy of spectrum and axis each, evidence.MaxPendingExplains at
// most). cmd/ramanserve adds it to the Go soft memory limit. With
// 2048-point spectra the log's part is about a quarter of the bound.
func (c EvidenceConfig) MemoryBound() int64 {
	perRecord := int64(recordBytes)
	if c.LogSpectra {
		perRecord += 4 * evidence.MaxLoggedPoints
	}
	records := int64(predlog.DefaultQueueSize + predlog.DefaultBatchMax)
	shadowQueue := int64(shadow.DefaultQueueSize) * shadow.DefaultMaxPoints * 16
	var explains int64
	if c.ExplainExceedances {
		explains = evidence.MaxPendingExplains * 16 * evidence.MaxLoggedPoints
	}
	return records*perRecord + shadowQueue + explains
}
