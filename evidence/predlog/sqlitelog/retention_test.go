package sqlitelog_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
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
	// The size with every record committed, read from the database: the
	// log's SizeBytes follows a commit only once the writer's next
	// retention pass has run.
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

// databaseBytes is the database's pages as db sees them, committed WAL
// frames included: what the log's Size reports as Bytes.
func databaseBytes(t testing.TB, db *sql.DB) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
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
	// The full sizes run without -race and -short (make bench). The
	// writer is about thirty times slower under -race, where the race
	// detector checks the writer's concurrency, not the bound's arithmetic:
	// there, as in make test-quick, a tenth of each stream runs through the
	// smallest bound, still past it, so retention runs many times. Under
	// -race the stream without spectra is halved again: 10,000 records
	// still pass the smallest bound, which 8,000 reach.
	short := testing.Short() || race.Enabled
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, maxBytes := c.records, c.maxBytes
			if short {
				n, maxBytes = n/10, predlog.MinMaxBytes
			}
			if race.Enabled && !c.spectra {
				n /= 2
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

// TestSizeSharesAfterEveryBatch: at the smallest bound, after every
// commit batch and after the retention it triggered, the database, its
// WAL and shared memory together are under the bound, and the database
// and the WAL each within their share of it (5/8 and 1/8) plus one
// transaction, which the writer keeps under 1/8 of the bound. The sizes
// are read on the writer goroutine, between its transactions.
func TestSizeSharesAfterEveryBatch(t *testing.T) {
	const bound = predlog.MinMaxBytes
	cases := []struct {
		name    string
		records int
		spectra bool
	}{
		// About twice the bound, in batches of the default size.
		{"records", 30_000, false},
		// Over twice the bound; a batch of the default size would hold
		// more than the bound: the writer cuts batches by their bytes.
		{"spectra", 2_000, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.records
			if race.Enabled || testing.Short() {
				n = n * 2 / 3 // still past the bound, so retention runs
			}
			dir := t.TempDir()
			var (
				mu                    sync.Mutex
				calls                 int
				maxDB, maxWAL, maxAll int64
				over                  []string
			)
			l := openLog(t, dir, predlog.Options{MaxBytes: bound, AfterBatch: func() {
				db, wal, shm := fileSize(dir, ""), fileSize(dir, "-wal"), fileSize(dir, "-shm")
				mu.Lock()
				defer mu.Unlock()
				calls++
				maxDB, maxWAL, maxAll = max(maxDB, db), max(maxWAL, wal), max(maxAll, db+wal+shm)
				if (db+wal+shm > bound || db > bound*5/8+bound/8 || wal > bound/8+bound/8) && len(over) < 5 {
					over = append(over, fmt.Sprintf("database %d, WAL %d, shared memory %d", db, wal, shm))
				}
			}})
			for i := range n {
				recordAll(l, testRecord(i, "B", c.spectra))
			}
			closeLog(t, l)
			mu.Lock()
			defer mu.Unlock()
			// Two calls a batch: after its commit, after its retention.
			t.Logf("%d records in %d batches, %d deleted; largest: database %d (share %d), WAL %d (share %d), all %d (bound %d)",
				n, calls/2, l.Stats().Deleted, maxDB, bound*5/8, maxWAL, bound/8, maxAll, bound)
			if len(over) > 0 {
				t.Fatalf("over the bound or a share plus one transaction: %s", strings.Join(over, "; "))
			}
			if calls == 0 || l.Stats().Deleted == 0 || maxDB < bound/2 {
				t.Fatalf("the stream never filled the log: %d batches, %d deleted, database at most %d", calls/2, l.Stats().Deleted, maxDB)
			}
		})
	}
}

func fileSize(dir, suffix string) int64 {
	st, err := os.Stat(filepath.Join(dir, sqlitelog.DatabaseFileName+suffix))
	if err != nil {
		return 0
	}
	return st.Size()
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
	for _, name := range []string{sqlitelog.DatabaseFileName, sqlitelog.DatabaseFileName + "-wal", sqlitelog.DatabaseFileName + "-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err == nil {
			total += st.Size()
		}
	}
	return total
}
