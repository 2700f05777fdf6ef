package reconcile_test

import (
	"context"
	"slices"
	"time"

	"ramanserve/inference/reconcile"
)

// memoryLog is a PredictionLog over a slice, written from the interface's
// contract, for the tests.
type memoryLog struct {
	preds []reconcile.Prediction
}

func (l *memoryLog) add(p ...reconcile.Prediction) { l.preds = append(l.preds, p...) }

func (l *memoryLog) HasBatch(ctx context.Context, batchID string) (bool, error) {
	return slices.ContainsFunc(l.preds, func(p reconcile.Prediction) bool { return p.BatchID == batchID }), ctx.Err()
}

func (l *memoryLog) FindByScanSeq(ctx context.Context, batchID string, seq int64) ([]reconcile.Prediction, error) {
	var out []reconcile.Prediction
	for _, p := range l.preds {
		if p.BatchID == batchID && p.HasScanSeq && p.ScanSeq == seq {
			out = append(out, p)
		}
	}
	return out, ctx.Err()
}

func (l *memoryLog) Nearest(ctx context.Context, batchID string, t time.Time, window time.Duration) ([]reconcile.Prediction, error) {
	var before, after *reconcile.Prediction
	for i := range l.preds {
		p := &l.preds[i]
		if p.BatchID != batchID {
			continue
		}
		if !p.Time.After(t) {
			if before == nil || p.Time.After(before.Time) || (p.Time.Equal(before.Time) && p.SpectrumID < before.SpectrumID) {
				before = p
			}
		} else if after == nil || p.Time.Before(after.Time) || (p.Time.Equal(after.Time) && p.SpectrumID < after.SpectrumID) {
			after = p
		}
	}
	var ids []int64
	if before != nil && t.Sub(before.Time) <= window {
		ids = append(ids, before.SpectrumID)
	}
	if after != nil && after.Time.Sub(t) <= window {
		ids = append(ids, after.SpectrumID)
	}
	return l.Predictions(ctx, ids)
}

func (l *memoryLog) Predictions(ctx context.Context, ids []int64) ([]reconcile.Prediction, error) {
	var out []reconcile.Prediction
	for _, p := range l.preds {
		if slices.Contains(ids, p.SpectrumID) {
			out = append(out, p)
		}
	}
	return out, ctx.Err()
}

// values builds Values from EPA, DHA, DPA; a negative argument is absent.
func values(epa, dha, dpa float64) reconcile.Values {
	var v reconcile.Values
	for i, x := range []float64{epa, dha, dpa} {
		if x >= 0 {
			v.Set(reconcile.Analytes[i], x)
		}
	}
	return v
}
