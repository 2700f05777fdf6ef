package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

// The lab posts a CSV file of HPLC results for batch B-17, whose four
// spectra were predicted by the active model v7 (1.5 g/L high) and the
// shadow v8 (0.25 g/L low); the performance of both follows.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "reconcile-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	log, err := logFourSpectra(ctx, dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close(ctx)

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
	posted, err := rec.Post(ctx, records)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("matched:", posted.Matched)
	for _, u := range posted.Unmatched {
		fmt.Printf("unmatched: record %d (%s): %s\n", u.Index, u.LabSampleID, u.Reason)
	}

	rep, err := rec.Performance(ctx, "v7", time.Time{}, time.Time{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, vs := range append([]reconcile.VersionStats{rep.Version}, rep.Others...) {
		epa := vs.Analytes[inference.EPA]
		fmt.Printf("%s %v: EPA n %d, RMSEP %.2f, bias %+.2f, slope %.2f\n", vs.Version, vs.Roles, epa.N, *epa.RMSEP, *epa.Bias, *epa.Slope)
	}
	// Output:
	// matched: 3
	// unmatched: record 3 (HPLC-4): none_within_window
	// unmatched: record 4 (HPLC-5): unknown_batch
	// v7 [active]: EPA n 3, RMSEP 1.50, bias +1.50, slope 1.00
	// v8 [shadow]: EPA n 3, RMSEP 0.25, bias -0.25, slope 1.00
}

// logFourSpectra opens a prediction log in dir holding four spectra of
// batch B-17, 30 s apart, each predicted by v7 (active) and v8 (shadow).
func logFourSpectra(ctx context.Context, dir string) (*predlog.Writer, error) {
	log, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		return nil, err
	}
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	for i, epa := range []float64{180, 184, 176, 190} {
		id := predlog.NewPredictionID()
		for _, m := range []struct {
			version string
			role    predlog.Role
			bias    float64
		}{{"v7", predlog.RoleActive, 1.5}, {"v8", predlog.RoleShadow, -0.25}} {
			r := &predlog.Record{PredictionID: id, Time: t0.Add(time.Duration(i) * 30 * time.Second),
				ModelVersion: m.version, Role: m.role,
				ScanContext: inference.ScanContext{BatchID: "B-17", HasBatchID: true, ScanSeq: float64(100 + i), HasScanSeq: true}}
			r.Concentrations.Set(inference.EPA, epa+m.bias)
			log.Record(r)
		}
	}
	// Close commits what is queued; opening again reads it all.
	if err := log.Close(ctx); err != nil {
		return nil, err
	}
	return sqlitelog.OpenLog(ctx, dir, predlog.Options{})
}
