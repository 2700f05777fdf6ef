package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ramanserve/evidence/predlog"
)

// Reason says, for machines, why a lab record was not matched.
type Reason string

// The reasons a lab record is left unmatched.
const (
	// ReasonUnknownBatch: no prediction of the record's batch_id is
	// logged (or none is left: retention may have deleted it).
	ReasonUnknownBatch Reason = "unknown_batch"
	// ReasonNoPredictionForScanSeq: the batch is logged, but no active
	// prediction of it has the record's scan_seq.
	ReasonNoPredictionForScanSeq Reason = "no_prediction_for_scan_seq"
	// ReasonNoneWithinWindow: the batch is logged, but no active
	// prediction of it was logged within the match window of the record's
	// sampled_at.
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
// reports on them. It reads the prediction log through predlog.Reader
// (its Nearest, ByScanSeq, ByPredictions and, to tell an unknown batch, a
// one-record Page) and keeps lab results in a LabStore.
type Reconciler struct {
	log    predlog.Reader
	store  LabStore
	window time.Duration
	// minPartIDs is the fewest spectra a part of a report's read holds
	// (readParts); tests lower it to read small reports in parts.
	minPartIDs int
}

// New returns a Reconciler reading log and keeping results in store.
func New(log predlog.Reader, store LabStore, opts Options) (*Reconciler, error) {
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
	return &Reconciler{log: log, store: store, window: window, minPartIDs: minPartIDs}, nil
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
// stored, and a corrected record replaces the first without counting
// twice. records are as ParseJSON and ParseCSV return them.
//
// A record is matched to the active prediction of its batch
//   - with its scan_seq, if it has one (predlog's ByScanSeq: the latest
//     such prediction if the rig reused the number), whether or not it
//     also has a sampled_at;
//   - else logged nearest its sampled_at, at most the match window before
//     or after it, both bounds included (predlog's Nearest: of two
//     predictions equally far before and after, the earlier).
func (r *Reconciler) Post(ctx context.Context, records []LabRecord) (PostResult, error) {
	var res PostResult
	results := make([]LabResult, len(records))
	batches := make(map[string]bool) // whether the log knows a batch, asked once per post
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

// match finds rec's spectrum, or the reason there is none.
func (r *Reconciler) match(ctx context.Context, rec LabRecord, batches map[string]bool) (LabResult, error) {
	res := LabResult{LabRecord: rec}
	var (
		active predlog.Record
		found  bool
		err    error
		reason Reason
	)
	if rec.HasScanSeq {
		// Exact: MaxScanSeq is 2^53.
		active, found, err = r.log.ByScanSeq(ctx, rec.BatchID, float64(rec.ScanSeq))
		reason = ReasonNoPredictionForScanSeq
	} else {
		active, found, err = r.log.Nearest(ctx, rec.BatchID, rec.SampledAt, r.window)
		reason = ReasonNoneWithinWindow
	}
	if err != nil {
		return res, err
	}
	if found {
		res.Matched, res.PredictionID, res.SpectrumTime = true, active.PredictionID, active.Time
		return res, nil
	}
	known, asked := batches[rec.BatchID]
	if !asked {
		if known, err = r.batchKnown(ctx, rec.BatchID); err != nil {
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

// batchKnown reports whether any prediction of batchID is logged.
func (r *Reconciler) batchKnown(ctx context.Context, batchID string) (bool, error) {
	page, err := r.log.Page(ctx, predlog.Filter{BatchID: batchID, HasBatchID: true, Limit: 1})
	if err != nil {
		return false, err
	}
	return len(page.Records) > 0, nil
}
