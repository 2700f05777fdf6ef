package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/membudget"
)

// TestOptionsSurviveARestartAndShapeTheResult: a job queued with options
// when the server stops trains with them after the restart (they are in
// its record), and its result reports the selection, the CV curve, the
// outliers and the rows used; the prepared copy an exclusion makes is
// charged while the job lives and given back after.
func TestOptionsSurviveARestartAndShapeTheResult(t *testing.T) {
	dir := t.TempDir()
	pub := &publisher{block: make(chan struct{})}
	budget := membudget.New(1 << 30)
	m, err := start(dir, jobs.Options{QueueSize: 2, Publish: pub.publish, Budget: budget,
		Train: trainer.Options{Seed: 1, MaxComponents: 8}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := m.Reserve(context.Background())
	running, err := m.SubmitReserved(context.Background(), r, chargedDataset(t, r, 1, 60), jobs.Meta{Operator: "op"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, m, running.ID, jobs.Running)

	r, _ = m.Reserve(context.Background())
	ds := chargedDataset(t, r, 2, 60)
	opts := jobs.TrainingOptions{Components: 3, Folds: 4, ExcludeScanIDs: []string{ds.ScanID(3), ds.ScanID(9)}}
	before := budget.Used()
	queued, err := m.SubmitReserved(context.Background(), r, ds, jobs.Meta{Operator: "op", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	want, err := trainer.CheckOptions(ds, trainer.Options{ExcludeScanIDs: opts.ExcludeScanIDs, Folds: 4, Components: 3})
	if err != nil || want <= 0 || budget.Used()-before != want {
		t.Errorf("submitting with exclusions charged %d bytes, want the prepared copy's %d", budget.Used()-before, want)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec := readRecord(t, dir, queued.ID); rec.Meta.Options.Components != 3 || len(rec.Meta.Options.ExcludeScanIDs) != 2 {
		t.Fatalf("options not in the record: %+v", rec.Meta.Options)
	}

	pub2 := &publisher{}
	m2 := open(t, dir, jobs.Options{QueueSize: 2, Publish: pub2.publish, Budget: budget})
	done := wait(t, m2, queued.ID)
	if done.Status != jobs.Done {
		t.Fatalf("re-queued job: %+v %+v", done, done.Error)
	}
	res := done.Result
	if res.Components != 3 || res.Selection == nil || res.Selection.Rule != "fixed" || res.Selection.Folds != 4 ||
		len(res.CVCurve) != 3 || res.RowsUsed != 58 || res.Limits == nil || !(res.Limits.T2 > 0) || res.Limits.StudentizedResidual != 3 {
		t.Fatalf("result %+v", res)
	}
	if !res.Selection.RMSECV.Valid[0] || res.Selection.RMSECV != res.CVCurve[2].RMSECV {
		t.Errorf("selection RMSECV %+v, curve at 3 %+v", res.Selection.RMSECV, res.CVCurve[2].RMSECV)
	}
	if len(res.Outliers) != res.OutliersTotal {
		t.Errorf("%d outliers listed of %d", len(res.Outliers), res.OutliersTotal)
	}
	for k, o := range res.Outliers {
		if len(o.Reasons) == 0 || (k > 0 && max(o.ReducedT2, o.ReducedQ) > max(res.Outliers[k-1].ReducedT2, res.Outliers[k-1].ReducedQ)+3) {
			t.Errorf("outlier %d: %+v", k, o)
		}
	}
	if len(pub2.calls) != 1 || pub2.calls[0].RowsUsed != 58 || pub2.calls[0].Rows != 60 || len(pub2.calls[0].Options.ExcludeScanIDs) != 2 {
		t.Errorf("lineage %+v", pub2.calls)
	}
	deadline := time.Now().Add(5 * time.Second)
	for budget.Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if budget.Used() != 0 {
		t.Errorf("budget used %d after the jobs ended", budget.Used())
	}
}

// TestSubmitRefusesOptionsThatCannotApply: the options are checked
// against the data set before the job is queued; nothing is recorded or
// kept.
func TestSubmitRefusesOptionsThatCannotApply(t *testing.T) {
	budget := membudget.New(1 << 30)
	m := open(t, t.TempDir(), jobs.Options{QueueSize: 2, Publish: (&publisher{}).publish, Budget: budget})
	cases := []struct {
		opts jobs.TrainingOptions
		want string
	}{
		{jobs.TrainingOptions{ExcludeScanIDs: []string{"no-such-scan"}}, "exclude_scan_ids[0]"},
		{jobs.TrainingOptions{Folds: 19}, "cv_folds"},
		{jobs.TrainingOptions{Folds: 21}, "cv_folds"},
		{jobs.TrainingOptions{Segments: "blocks"}, "cv_segments"},
		{jobs.TrainingOptions{Rule: "randomization", MaxComponents: 1}, "component_rule"},
		{jobs.TrainingOptions{Components: 30}, "components"},
		{jobs.TrainingOptions{Wavenumbers: []float64{1, 2, 3}}, "wavenumbers"},
	}
	for _, tc := range cases {
		r, err := m.Reserve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.SubmitReserved(context.Background(), r, chargedDataset(t, r, 4, 20), jobs.Meta{Operator: "op", Options: tc.opts})
		if !errors.Is(err, trainer.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions naming %s", tc.opts, err, tc.want)
		}
		r.Release()
	}
	if budget.Used() != 0 {
		t.Errorf("budget used %d", budget.Used())
	}
	if page, err := m.List("", 10, ""); err != nil || len(page.Jobs) != 0 {
		t.Errorf("jobs recorded: %+v %v", page, err)
	}
}
