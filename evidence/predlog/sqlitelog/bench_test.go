package sqlitelog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/platform/cputime"
)

// BenchmarkRecordDrop is Record with the queue full: the writer is stalled
// (another connection holds SQLite's write lock, and the queue holds one
// record), so every call counts a drop and returns.
func BenchmarkRecordDrop(b *testing.B) {
	dir := b.TempDir()
	l := openLog(b, dir, predlog.Options{QueueSize: 1})
	defer closeLog(b, l)
	conn, err := rawDB(b, dir).Conn(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		b.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	rec := testRecord(0, "B", false)
	waitFor(b, "the writer to stall", func() bool {
		l.Record(rec)
		return l.Stats().Queued == 1
	})
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record(rec)
		}
	})
}

// BenchmarkRecordWithWriter: Record at full rate while the writer commits.
// On a small machine the writer's CPU shares the cores with the caller, so
// ns/op here is the whole cost of logging one record (insert, index
// updates, commit share), spread over the callers; its allocations are the
// writer's (database/sql boxes every argument), not Record's.
func BenchmarkRecordWithWriter(b *testing.B) {
	l := openLog(b, b.TempDir(), predlog.Options{})
	defer closeLog(b, l)
	rec := testRecord(0, "B", false)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		recordAll(l, rec)
	}
}

// BenchmarkThroughput is the writer's sustained rate, records/s from the
// first Record to the last commit, with and without spectra (2048 points,
// on every active record; each spectrum also has its shadow record). It
// also reports the database's size per million records.
func BenchmarkThroughput(b *testing.B) {
	for _, spectra := range []bool{false, true} {
		name := "no-spectra"
		if spectra {
			name = "spectra"
		}
		b.Run(name, func(b *testing.B) {
			const n = 20000
			recs := make([]*predlog.Record, n)
			for i := 0; i < n; i += 2 {
				recs[i] = testRecord(i, "B", spectra)
				s := *recs[i]
				s.Role, s.ModelVersion, s.Spectrum, s.Wavenumbers = predlog.RoleShadow, "v2", nil, nil
				recs[i+1] = &s
			}
			var total time.Duration
			var size int64
			for range b.N {
				dir := b.TempDir()
				l := openLog(b, dir, predlog.Options{})
				start := time.Now()
				recordAll(l, recs...)
				closeLog(b, l)
				total += time.Since(start)
				st, err := os.Stat(filepath.Join(dir, sqlitelog.DatabaseFileName))
				if err != nil {
					b.Fatal(err)
				}
				size = st.Size()
				if l.Stats().Committed != n {
					b.Fatalf("committed %d of %d", l.Stats().Committed, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/total.Seconds(), "records/s")
			b.ReportMetric(float64(size)/n*1e6/(1<<20), "MiB/Mrecords")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkPage reads a page of 1000 records of one batch.
func BenchmarkPage(b *testing.B) {
	l := openLog(b, b.TempDir(), predlog.Options{})
	defer closeLog(b, l)
	for i := range 20000 {
		recordAll(l, testRecord(i, []string{"A", "B"}[i%2], false))
	}
	waitFor(b, "the commit", func() bool { return l.Stats().Committed == 20000 })
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := l.Page(ctx, predlog.Filter{BatchID: "A", HasBatchID: true, Limit: 1000}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRetentionSoak is the soak at the package level: a
// million records (an active and a shadow record per spectrum, no spectra)
// through a 64 MiB bound. It reports the peak size of the database and its
// WAL, sampled every millisecond, against the bound, and the rate.
func BenchmarkRetentionSoak(b *testing.B) {
	const n, bound = 1_000_000, 64 << 20
	for range b.N {
		dir := b.TempDir()
		l := openLog(b, dir, predlog.Options{MaxBytes: bound})
		peak := samplePeakSize(dir)
		start := time.Now()
		for i := 0; i < n; i += 2 {
			a := testRecord(i, "soak", false)
			s := *a
			s.Role, s.ModelVersion = predlog.RoleShadow, "v2"
			recordAll(l, a, &s)
		}
		closeLog(b, l)
		elapsed := time.Since(start)
		maxSeen := peak()
		if maxSeen > bound {
			b.Fatalf("database + WAL reached %d bytes, over the bound of %d", maxSeen, bound)
		}
		b.ReportMetric(float64(maxSeen)/(1<<20), "peak-MiB")
		b.ReportMetric(float64(bound)/(1<<20), "bound-MiB")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "records/s")
		b.ReportMetric(float64(l.Stats().Deleted), "deleted")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppend is the store's own cost of a record: Store.Append of
// batches of 1 and of predlog.DefaultBatchMax records (no spectra, as the
// server logs by default; under full load the writer's batches are that
// size), without the log's queue and writer. Beside ns/record it
// reports the process's CPU per record (user + system, from getrusage),
// which a busy machine inflates less than the wall clock.
func BenchmarkAppend(b *testing.B) {
	for _, n := range []int{1, predlog.DefaultBatchMax} {
		b.Run(fmt.Sprintf("batch-%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, err := sqlitelog.Open(ctx, b.TempDir(), sqlitelog.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(ctx)
			recs := make([]*predlog.Record, n)
			for i := range recs {
				recs[i] = testRecord(i, "B", false)
			}
			b.ReportAllocs()
			cpu := cputime.Process()
			b.ResetTimer()
			for range b.N {
				if err := s.Append(ctx, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			records := float64(b.N * n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
			b.ReportMetric(float64((cputime.Process()-cpu).Nanoseconds())/records, "cpu-ns/record")
		})
	}
}
