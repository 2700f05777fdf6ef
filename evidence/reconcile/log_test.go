package reconcile_test

import (
	"context"
	"testing"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/inference"
)

// loggedPredictions is a real prediction log (predlog over sqlitelog in a
// temporary directory) holding recs, every one committed: they are
// recorded, the log closed (which commits the queue) and opened again.
func loggedPredictions(t testing.TB, recs []*predlog.Record) *predlog.Writer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if !l.Record(r) {
			t.Fatalf("record %+v dropped", r)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.Committed != uint64(len(recs)) {
		t.Fatalf("%d records committed of %d", s.Committed, len(recs))
	}
	l, err = sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return l
}

// breakdown builds a Breakdown from EPA, DHA, DPA; a negative argument
// is absent.
func breakdown(epa, dha, dpa float64) inference.Breakdown {
	var b inference.Breakdown
	for a, x := range []float64{epa, dha, dpa} {
		if x >= 0 {
			b.Set(inference.Analyte(a), x)
		}
	}
	return b
}
