package reconcile_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"ramanserve/evidence/labstore/pglab"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/pglog"
	"ramanserve/evidence/reconcile"
	"ramanserve/platform/cputime"
	"ramanserve/platform/pgtest"
)

// BenchmarkPerformanceAtScalePostgres is BenchmarkPerformanceAtScale on
// the fleet's stores (one throw-away database of `.ci/postgres run`):
// the same 45,000 matched lab results, the log's 86,626 records written
// by COPY. cpu-ms/op is this process's CPU, without the database's.
func BenchmarkPerformanceAtScalePostgres(b *testing.B) {
	ctx := context.Background()
	e := newEvidenceAtScale(39375, 3)
	url := pgtest.Database(b)
	log, err := pglog.New(pgtest.Open(b, url), pglog.Options{Replica: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for chunk := range slices.Chunk(e.records, 5000) {
		if err := log.Append(ctx, chunk); err != nil {
			b.Fatal(err)
		}
	}
	store := pglab.New(pgtest.Open(b, url))
	e.stored(b, store)
	rec, err := reconcile.New(predlog.Reader(log), store, reconcile.Options{})
	if err != nil {
		b.Fatal(err)
	}
	startCPU, n := cputime.Process(), 0
	for b.Loop() {
		if _, err := rec.Performance(ctx, "v1", time.Time{}, time.Time{}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64((cputime.Process()-startCPU).Milliseconds())/float64(n), "cpu-ms/op")
}
