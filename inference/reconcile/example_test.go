package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ramanserve/inference/reconcile"
)

// spectraLog is a PredictionLog over a few spectra of one batch, each
// predicted by an active model v7 and a shadow v8.
type spectraLog []reconcile.Prediction

func (l spectraLog) HasBatch(_ context.Context, batchID string) (bool, error) {
	for _, p := range l {
		if p.BatchID == batchID {
			return true, nil
		}
	}
	return false, nil
}

func (l spectraLog) FindByScanSeq(_ context.Context, batchID string, seq int64) ([]reconcile.Prediction, error) {
	var out []reconcile.Prediction
	for _, p := range l {
		if p.BatchID == batchID && p.HasScanSeq && p.ScanSeq == seq {
			out = append(out, p)
		}
	}
	return out, nil
}

// Nearest returns every spectrum within the window (a superset of what
// the interface asks for; the Reconciler picks the nearest).
func (l spectraLog) Nearest(_ context.Context, batchID string, t time.Time, window time.Duration) ([]reconcile.Prediction, error) {
	var out []reconcile.Prediction
	for _, p := range l {
		if d := p.Time.Sub(t); p.BatchID == batchID && d >= -window && d <= window {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l spectraLog) Predictions(_ context.Context, ids []int64) ([]reconcile.Prediction, error) {
	var out []reconcile.Prediction
	for _, p := range l {
		for _, id := range ids {
			if p.SpectrumID == id {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// The lab posts a CSV file of HPLC results; the performance of the
// active model, and of the shadow on the same spectra, follows.
func Example() {
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	var log spectraLog
	for i, epa := range []float64{180, 184, 176, 190} {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		for _, m := range []struct {
			version string
			role    reconcile.Role
			bias    float64
		}{{"v7", reconcile.RoleActive, 1.5}, {"v8", reconcile.RoleShadow, -0.25}} {
			var v reconcile.Values
			v.Set(reconcile.EPA, epa+m.bias)
			log = append(log, reconcile.Prediction{SpectrumID: int64(i + 1), Time: at, BatchID: "B-17",
				ScanSeq: int64(100 + i), HasScanSeq: true, ModelVersion: m.version, Role: m.role, Predicted: v})
		}
	}

	records, err := reconcile.ParseCSV(strings.NewReader(`lab_sample_id,batch_id,scan_seq,sampled_at,EPA
HPLC-1,B-17,100,,180
HPLC-2,B-17,,2026-11-23T08:00:35Z,184
HPLC-3,B-17,102,,176
HPLC-4,B-17,,2026-11-23T08:09:00Z,190
HPLC-5,B-99,7,,181
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, err := reconcile.New(log, &reconcile.MemoryStore{}, reconcile.Options{MatchWindow: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	posted, err := rec.Post(context.Background(), records)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("matched:", posted.Matched)
	for _, u := range posted.Unmatched {
		fmt.Printf("unmatched: record %d (%s): %s\n", u.Index, u.LabSampleID, u.Reason)
	}

	rep, err := rec.Performance(context.Background(), "v7", time.Time{}, time.Time{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, vs := range append([]reconcile.VersionStats{rep.Version}, rep.Others...) {
		epa := vs.Analytes[reconcile.EPA]
		fmt.Printf("%s %v: EPA n %d, RMSEP %.2f, bias %+.2f, slope %.2f\n", vs.Version, vs.Roles, epa.N, *epa.RMSEP, *epa.Bias, *epa.Slope)
	}
	// Output:
	// matched: 3
	// unmatched: record 3 (HPLC-4): none_within_window
	// unmatched: record 4 (HPLC-5): unknown_batch
	// v7 [active]: EPA n 3, RMSEP 1.50, bias +1.50, slope 1.00
	// v8 [shadow]: EPA n 3, RMSEP 0.25, bias -0.25, slope 1.00
}
