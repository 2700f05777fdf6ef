package predlog_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/race"
)

// TestRetentionByAge: records older than the retention are deleted, in
// chunks, while newer ones stay.
func TestRetentionByAge(t *testing.T) {
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(t0.Add(-time.Hour).UnixNano()) // nothing is old yet
	l := openLog(t, dir, predlog.Options{
		Retention:      time.Hour,
		RetentionEvery: 10 * time.Millisecond,
		Now:            func() time.Time { return time.Unix(0, now.Load()) },
	})
	defer closeLog(t, l)
	const n = 5000 // records 1 ms apart: t0 .. t0+5 s
	for i := range n {
		recordAll(l, testRecord(i, "B", false))
	}
	waitFor(t, "the commit", func() bool { return l.Stats().Committed == n })
	if l.Stats().Deleted != 0 {
		t.Fatal("retention deleted records younger than the retention")
	}
	// Stats().SizeBytes is refreshed by the retention passes, and one
	// may not have run since the last commit (a busy machine delays the
	// writer's ticks): the full size is read from the database itself.
	db := rawDB(t, dir)
	full := databaseBytes(t, db)
	// An hour after t0+3.5 s: the 3500 records before it are too old.
	now.Store(t0.Add(time.Hour + 3500*time.Millisecond).UnixNano())
	waitFor(t, "age retention", func() bool { return l.Stats().Deleted == 3500 })
	if got := countRows(t, db, `WHERE scan_seq >= 3500`); got != 1500 {
		t.Fatalf("%d of the 1500 young records left, %d rows in all", got, countRows(t, db, ""))
	}
	if got := countRows(t, db, ""); got != 1500 {
		t.Fatalf("%d rows left, want 1500", got)
	}
	// Incremental vacuum gives the freed pages back: the file shrinks.
	waitFor(t, "the file to shrink", func() bool { return l.Stats().SizeBytes < full*3/5 })
	if got := databaseBytes(t, db); got >= full*3/5 {
		t.Fatalf("the log reports %d bytes, the database has %d of the %d before retention", l.Stats().SizeBytes, got, full)
	}
}

// TestRetentionBySize: through a stream of records many times the bound,
// the database file and its WAL stay under MaxBytes, and the newest
// records are kept.
func TestRetentionBySize(t *testing.T) {
	cases := []struct {
		name     string
		records  int
		spectra  bool
		maxBytes int64
	}{
		{"200k records", 200_000, false, 4 << 20},
		{"20k records with spectra", 20_000, true, 16 << 20},
	}
	if race.Enabled {
		// The writer is about thirty times slower under -race: a fifth of
		// the long stream, 40k records, still about 2.5 times the bound,
		// and a quarter of the stream with spectra through a quarter of
		// its bound. Without -race (make test-quick, make bench) the full
		// sizes run; make bench's RetentionSoak streams a million.
		cases[0].records /= 5
		cases[1].records, cases[1].maxBytes = cases[1].records/4, cases[1].maxBytes/4
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, maxBytes := c.records, c.maxBytes
			if testing.Short() {
				n, maxBytes = n/10, predlog.MinMaxBytes
			}
			dir := t.TempDir()
			// Batches of at most 256 records, and under MaxBytes/8 with
			// spectra (about 5 kB each), as Open's bound requires.
			batchMax := 256
			if c.spectra {
				batchMax = min(batchMax, int(maxBytes/8/5000))
			}
			l := openLog(t, dir, predlog.Options{MaxBytes: maxBytes, BatchMax: batchMax})
			peak := samplePeakSize(dir)
			for i := range n {
				recordAll(l, testRecord(i, "B", c.spectra && i%2 == 0))
			}
			closeLog(t, l)
			maxSeen := peak()
			st := l.Stats()
			t.Logf("%d records, %d deleted, peak of database + WAL %d bytes, bound %d", n, st.Deleted, maxSeen, maxBytes)
			if maxSeen > maxBytes {
				t.Fatalf("database + WAL reached %d bytes, over the bound of %d", maxSeen, maxBytes)
			}
			if st.Deleted == 0 || st.Committed != uint64(n) {
				t.Fatalf("committed %d, deleted %d", st.Committed, st.Deleted)
			}
			db := rawDB(t, dir)
			integrityCheck(t, db)
			left := countRows(t, db, "")
			if newest := countRows(t, db, `WHERE scan_seq >= ?`, n-left); newest != left || left < n/100 {
				t.Fatalf("%d rows left, %d of them the newest", left, newest)
			}
		})
	}
}

// samplePeakSize samples the size of the log's files every millisecond
// until the returned function is called, which returns the largest seen.
func samplePeakSize(dir string) (stop func() int64) {
	var peak atomic.Int64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if s := filesSize(dir); s > peak.Load() {
				peak.Store(s)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-sampled
		return max(peak.Load(), filesSize(dir))
	}
}

// filesSize is the size of the database, its WAL and shared memory (a
// file caught mid-rename or unreadable counts as 0).
func filesSize(dir string) int64 {
	var total int64
	for _, name := range []string{predlog.DatabaseFileName, predlog.DatabaseFileName + "-wal", predlog.DatabaseFileName + "-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err == nil {
			total += st.Size()
		}
	}
	return total
}

// databaseBytes is the database's size as its latest commit left it
// (page_count * page_size, the figure Stats().SizeBytes reports).
func databaseBytes(t testing.TB, db *sql.DB) int64 {
	t.Helper()
	var pages, pageSize int64
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	return pages * pageSize
}
