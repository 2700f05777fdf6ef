package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Reason says, for machines, why a lab record was not matched.
type Reason string

// The reasons a lab record is left unmatched.
const (
	// ReasonUnknownBatch: no spectrum of the record's batch_id is logged.
	ReasonUnknownBatch Reason = "unknown_batch"
	// ReasonNoPredictionForScanSeq: the batch is logged, but no spectrum
	// of it has the record's scan_seq.
	ReasonNoPredictionForScanSeq Reason = "no_prediction_for_scan_seq"
	// ReasonAmbiguousScanSeq: several spectra of the batch have the
	// record's scan_seq (a rig that restarted its count); rather than
	// guess, the record is left unmatched.
	ReasonAmbiguousScanSeq Reason = "ambiguous_scan_seq"
	// ReasonNoneWithinWindow: no spectrum of the batch was logged within
	// the match window of the record's sampled_at.
	ReasonNoneWithinWindow Reason = "none_within_window"
)

// DefaultMatchWindow is the match window when Options leaves it zero
// (the issue's -lab-match-window default).
const DefaultMatchWindow = 60 * time.Second

// MaxMatchWindow bounds Options.MatchWindow: a wider window would match
// a sample to a spectrum of another part of the batch.
const MaxMatchWindow = 24 * time.Hour

// Options configure a Reconciler.
type Options struct {
	// MatchWindow is how far from a record's sampled_at the nearest
	// spectrum may have been logged, bounds included; 0 means
	// DefaultMatchWindow.
	MatchWindow time.Duration
}

// Reconciler matches lab records to logged predictions, keeps them, and
// reports on them.
type Reconciler struct {
	log    PredictionLog
	store  LabStore
	window time.Duration
}

// New returns a Reconciler reading log and keeping results in store.
func New(log PredictionLog, store LabStore, opts Options) (*Reconciler, error) {
	if log == nil || store == nil {
		return nil, errors.New("reconcile: a prediction log and a lab store are required")
	}
	window := opts.MatchWindow
	if window == 0 {
		window = DefaultMatchWindow
	}
	if window < 0 || window > MaxMatchWindow {
		return nil, fmt.Errorf("reconcile: match window %v is not in (0, %v]", opts.MatchWindow, MaxMatchWindow)
	}
	return &Reconciler{log: log, store: store, window: window}, nil
}

// Unmatched names a record of a post that was not matched, and why.
type Unmatched struct {
	// Index is the record's position in the post, from 0.
	Index       int
	LabSampleID string
	Reason      Reason
}

// PostResult is the answer to a lab post.
type PostResult struct {
	// Matched is how many of the post's records were matched.
	Matched int
	// Replaced is how many records replaced a stored result with the
	// same lab_sample_id (matched or not).
	Replaced int
	// Unmatched lists the records left unmatched, in post order.
	Unmatched []Unmatched
}

// Post matches each record to a logged spectrum and stores them all,
// matched or not, each replacing any earlier result with its
// lab_sample_id: posting the same records twice leaves the same results
// stored. records are as ParseJSON and ParseCSV return them.
func (r *Reconciler) Post(ctx context.Context, records []LabRecord) (PostResult, error) {
	var res PostResult
	results := make([]LabResult, len(records))
	batches := make(map[string]bool) // HasBatch, asked once per batch
	for i, rec := range records {
		m, err := r.match(ctx, rec, batches)
		if err != nil {
			return PostResult{}, fmt.Errorf("reconcile: record %d: %w", i, err)
		}
		results[i] = m
		if m.Matched {
			res.Matched++
		} else {
			res.Unmatched = append(res.Unmatched, Unmatched{Index: i, LabSampleID: rec.LabSampleID, Reason: m.Reason})
		}
	}
	replaced, err := r.store.Upsert(ctx, results)
	if err != nil {
		return PostResult{}, fmt.Errorf("reconcile: store lab results: %w", err)
	}
	res.Replaced = replaced
	return res, nil
}

// match finds rec's spectrum: by scan_seq if the record has one, else the
// spectrum logged nearest its sampled_at within the window.
func (r *Reconciler) match(ctx context.Context, rec LabRecord, batches map[string]bool) (LabResult, error) {
	res := LabResult{LabRecord: rec}
	var (
		spectrum Prediction
		found    bool
		reason   Reason
		err      error
	)
	if rec.HasScanSeq {
		spectrum, found, reason, err = r.byScanSeq(ctx, rec)
	} else {
		spectrum, found, err = r.nearest(ctx, rec)
		reason = ReasonNoneWithinWindow
	}
	if err != nil {
		return res, err
	}
	if found {
		res.Matched, res.SpectrumID, res.SpectrumTime = true, spectrum.SpectrumID, spectrum.Time
		return res, nil
	}
	known, asked := batches[rec.BatchID]
	if !asked {
		if known, err = r.log.HasBatch(ctx, rec.BatchID); err != nil {
			return res, err
		}
		batches[rec.BatchID] = known
	}
	if !known {
		reason = ReasonUnknownBatch
	}
	res.Reason = reason
	return res, nil
}

// byScanSeq finds the one spectrum of the batch with the record's
// scan_seq.
func (r *Reconciler) byScanSeq(ctx context.Context, rec LabRecord) (Prediction, bool, Reason, error) {
	preds, err := r.log.FindByScanSeq(ctx, rec.BatchID, rec.ScanSeq)
	if err != nil {
		return Prediction{}, false, "", err
	}
	preds = slices.DeleteFunc(preds, func(p Prediction) bool {
		return p.BatchID != rec.BatchID || !p.HasScanSeq || p.ScanSeq != rec.ScanSeq
	})
	if len(preds) == 0 {
		return Prediction{}, false, ReasonNoPredictionForScanSeq, nil
	}
	for _, p := range preds[1:] {
		if p.SpectrumID != preds[0].SpectrumID {
			return Prediction{}, false, ReasonAmbiguousScanSeq, nil
		}
	}
	return preds[0], true, "", nil
}

// nearest picks, among the candidates the log returns, the spectrum
// logged nearest the record's sampled_at within the window (bounds
// included: a spectrum exactly one window away matches). On a tie
// between a spectrum before and one after, the earlier wins (it is
// the one logged before the sample was drawn, so of the material the
// sample came from); on a tie at one instant, the lowest SpectrumID.
func (r *Reconciler) nearest(ctx context.Context, rec LabRecord) (Prediction, bool, error) {
	preds, err := r.log.Nearest(ctx, rec.BatchID, rec.SampledAt, r.window)
	if err != nil {
		return Prediction{}, false, err
	}
	var (
		best     Prediction
		bestDist time.Duration
		found    bool
	)
	for _, p := range preds {
		if p.BatchID != rec.BatchID {
			continue
		}
		d := absDuration(p.Time.Sub(rec.SampledAt))
		if d > r.window {
			continue
		}
		if !found || d < bestDist ||
			(d == bestDist && (p.Time.Before(best.Time) || (p.Time.Equal(best.Time) && p.SpectrumID < best.SpectrumID))) {
			best, bestDist, found = p, d, true
		}
	}
	return best, found, nil
}

// absDuration is |d|, saturating at the most negative duration.
func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		if d == -d { // math.MinInt64
			return time.Duration(1<<63 - 1)
		}
		return -d
	}
	return d
}
