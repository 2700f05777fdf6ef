package server

import "time"

// EvidenceConfig configures the prediction log, shadow scoring and lab
// reconciliation (issue 13). The log and the lab results live in the
// registry directory.
type EvidenceConfig struct {
	// LogSpectra stores each active prediction's spectrum (float32,
	// compressed) so that a model can be re-scored later (-log-spectra).
	LogSpectra bool
	// Retention deletes logged predictions older than this; 0 keeps them
	// by age (-prediction-log-retention).
	Retention time.Duration
	// MaxBytes bounds the prediction log's files (-prediction-log-max-bytes).
	MaxBytes int64
	// MatchWindow is how far from a lab sample's sampled_at the nearest
	// logged prediction of its batch may be (-lab-match-window; 0: 60 s).
	MatchWindow time.Duration
}
