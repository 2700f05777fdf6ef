package batches_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/labstore"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/evidence/predlog/sqlitelog"
	batchsvc "ramanserve/service/batches"
)

// newService is the service over a log holding the given batches (n
// spectra each) and a reference store, both embedded.
func newService(t *testing.T, n int, ids ...string) (*batchsvc.Service, *labstore.References, predlog.Store) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	log, err := sqlitelog.Open(ctx, dir, sqlitelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close(ctx) })
	lab, err := labstore.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	i := 0
	for _, id := range ids {
		var recs []*predlog.Record
		for range n {
			recs = append(recs, predlogtest.Record(i, id, false))
			i++
		}
		if err := log.Append(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	return batchsvc.New(log, lab.References()), lab.References(), log
}

// TestReportLeavesOutTheBatchItselfAndGoneReferences: the bands of a
// reference batch's page are made of the other references; a reference
// no longer in the log is left out of them (not an error).
func TestReportLeavesOutTheBatchItselfAndGoneReferences(t *testing.T) {
	ctx := context.Background()
	svc, refs, _ := newService(t, 10, "A", "B", "C")
	for _, id := range []string{"A", "B", "C"} {
		if _, _, err := svc.Mark(ctx, id, "op"); err != nil {
			t.Fatal(err)
		}
	}
	// Marked once, then gone from the log (retention): the store keeps
	// the mark.
	if _, _, err := refs.Mark(ctx, batches.Reference{BatchID: "gone", MarkedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Report(ctx, "A", batches.ByScanSeq)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Trajectory.Reference || rep.Bands == nil || len(rep.Bands.References) != 2 || rep.Bands.References[0] != "B" || len(rep.References) != 4 {
		t.Fatalf("report of A: reference %v, bands of %v, %d marks", rep.Trajectory.Reference, rep.Bands, len(rep.References))
	}
	if _, _, err := svc.Mark(ctx, "never-logged", "op"); !errors.Is(err, batches.ErrBatchNotFound) {
		t.Fatalf("marking a batch the log never saw: %v", err)
	}
	if _, err := svc.Report(ctx, "never-logged", batches.ByTime); !errors.Is(err, batches.ErrBatchNotFound) {
		t.Fatalf("the page of a batch the log never saw: %v", err)
	}
}

// TestTrajectoryIsBounded: a batch of more than batches.MaxPoints spectra
// is read up to the bound and said to be truncated.
func TestTrajectoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 10,001 records")
	}
	svc, _, _ := newService(t, batches.MaxPoints+1, "BIG")
	tr, err := svc.Trajectory(context.Background(), "BIG", batches.ByTime)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Points) != batches.MaxPoints || !tr.Truncated {
		t.Fatalf("%d points, truncated %v; want %d, truncated", len(tr.Points), tr.Truncated, batches.MaxPoints)
	}
}
