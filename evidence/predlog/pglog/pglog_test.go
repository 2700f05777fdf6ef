package pglog_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/pglog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/platform/pgtest"
)

// newDatabase creates a migrated database of its own for t and returns
// its URL.
func newDatabase(t testing.TB) string {
	t.Helper()
	u := pgtest.Database(t)
	pgtest.Open(t, u) // migrates
	return u
}

func newStore(t testing.TB, pool *pgxpool.Pool, replica string) *pglog.Store {
	t.Helper()
	s, err := pglog.New(pool, pglog.Options{Replica: replica})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStoreContract runs predlogtest's contract, each subtest on a fresh
// database; a reopen is a new Store on the same pool, as a restarted
// replica gets one.
func TestStoreContract(t *testing.T) {
	predlogtest.Run(t, func(t *testing.T) func(t *testing.T) predlog.Store {
		pool := pgtest.Open(t, pgtest.Database(t))
		return func(t *testing.T) predlog.Store { return newStore(t, pool, "r1") }
	})
}

// TestCloseLeavesThePoolOpen: the store does not own its pool.
func TestCloseLeavesThePoolOpen(t *testing.T) {
	pool := pgtest.Open(t, newDatabase(t))
	s := newStore(t, pool, "r1")
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Size(context.Background()); err == nil {
		t.Fatal("Size after Close succeeded")
	}
	if err := pool.Ping(context.Background()); err != nil {
		t.Fatalf("the pool after the store's Close: %v", err)
	}
}

// TestTwoReplicasAppendingAtOnce: two replicas, each with its own pool and
// store on one database, append at once. Both see every record, the IDs
// are unique, each replica's IDs increase in its append order, and each
// record names the replica that wrote it.
func TestTwoReplicasAppendingAtOnce(t *testing.T) {
	ctx := context.Background()
	u := newDatabase(t)
	replicas := []string{"replica-a", "replica-b"}
	const batches, size = 20, 50
	stores := make([]*pglog.Store, len(replicas))
	appended := make([][]predlog.PredictionID, len(replicas))
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas))
	for r, name := range replicas {
		stores[r] = newStore(t, pgtest.Open(t, u), name)
		wg.Go(func() {
			for b := range batches {
				var recs []*predlog.Record
				for i := range size {
					rec := predlogtest.Record(b*size+i, name, i%10 == 0)
					recs = append(recs, rec)
					appended[r] = append(appended[r], rec.PredictionID)
				}
				if err := stores[r].Append(ctx, recs); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for r, s := range stores {
		got := pageAll(t, s, predlog.Filter{})
		ids := map[predlog.PredictionID]int64{}
		distinct := map[int64]bool{}
		for _, rec := range got {
			ids[rec.PredictionID] = rec.ID
			distinct[rec.ID] = true
		}
		if want := len(replicas) * batches * size; len(got) != want || len(distinct) != want {
			t.Fatalf("replica %s sees %d records with %d distinct IDs, want %d", replicas[r], len(got), len(distinct), want)
		}
		for w, pids := range appended {
			for k, pid := range pids {
				id, ok := ids[pid]
				if !ok {
					t.Fatalf("replica %s misses record %d of replica %s", replicas[r], k, replicas[w])
				}
				if k > 0 && id <= ids[pids[k-1]] {
					t.Fatalf("record %d of replica %s has ID %d, after one with ID %d", k, replicas[w], id, ids[pids[k-1]])
				}
			}
		}
	}
	rows, err := stores[0].Page(ctx, predlog.Filter{BatchID: replicas[1], HasBatchID: true, WithSpectra: true})
	if err != nil || len(rows.Records) != batches*size/10 {
		t.Fatalf("replica a reads %d of replica b's spectra (%v), want %d", len(rows.Records), err, batches*size/10)
	}
	pool := pgtest.Open(t, u)
	for _, name := range replicas {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM predlog_records WHERE replica = $1`, name).Scan(&n); err != nil || n != batches*size {
			t.Fatalf("%d records of %s (%v), want %d", n, name, err, batches*size)
		}
	}
}

// TestWriterEndToEnd runs the log's writer over the store: records from
// the hot path are committed in batches, and age retention deletes the
// old ones. Closing the log closes the store, not the pool.
func TestWriterEndToEnd(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Open(t, newDatabase(t))
	now := time.Now()
	l, err := predlog.New(ctx, newStore(t, pool, "r1"), predlog.Options{
		CommitInterval: 10 * time.Millisecond,
		RetentionEvery: 10 * time.Millisecond,
		Retention:      time.Hour,
		Now:            func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	const records, old = 300, 100
	for i := range records {
		rec := predlogtest.Record(i, "B", i%3 == 0)
		rec.Time = now.Add(time.Duration(i) * time.Millisecond)
		if i < old {
			rec.Time = rec.Time.Add(-2 * time.Hour)
		}
		if !l.Record(rec) {
			t.Fatalf("record %d dropped", i)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Deleted < old && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.Committed != records || st.Dropped != 0 || st.WriteFailed != 0 || st.Deleted != old || st.SizeBytes <= 0 {
		t.Fatalf("stats %+v, want %d committed and the %d old ones deleted", st, records, old)
	}
	got := pageAll(t, newStore(t, pool, "r1"), predlog.Filter{})
	if len(got) != records-old || !got[0].Time.Equal(now.Add(old*time.Millisecond)) {
		t.Fatalf("%d records after the log closed, want %d", len(got), records-old)
	}
}

// TestWriterSizeBound: under the smallest size bound, the writer's
// retention keeps the records' footprints (LiveBytes) near 5/8 of the
// bound however much is written, deleting the oldest.
func TestWriterSizeBound(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Open(t, newDatabase(t))
	const bound = predlog.MinMaxBytes
	l, err := predlog.New(ctx, newStore(t, pool, "r1"), predlog.Options{MaxBytes: bound, CommitInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const records, points = 1500, 1024
	axis := make([]float32, points)
	for k := range axis {
		axis[k] = 200 + float32(k)
	}
	for i := range records {
		rec := predlogtest.Record(i, "B", false)
		rec.Spectrum, rec.Wavenumbers = make([]float32, points), axis
		for k := range rec.Spectrum {
			rec.Spectrum[k] = 1000 + 500*float32(math.Sin(float64(k)/50)) + float32((i*7919+k*104729)%1000)/100
		}
		if err := l.RecordWait(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	size, err := newStore(t, pool, "r1").Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v, size %+v", st, size)
	if st.Committed != records || st.Deleted == 0 {
		t.Fatalf("stats %+v: want %d committed and some deleted", st, records)
	}
	if size.LiveBytes > bound*5/8+bound/16 {
		t.Fatalf("live bytes %d after the writer, over 5/8 of the bound %d and a batch", size.LiveBytes, bound)
	}
	left := pageAll(t, newStore(t, pool, "r1"), predlog.Filter{})
	if uint64(len(left)) != records-st.Deleted || !left[len(left)-1].Time.Equal(predlogtest.Record(records-1, "B", false).Time) {
		t.Fatalf("%d records left, want %d, the newest kept", len(left), records-st.Deleted)
	}
}

func pageAll(t *testing.T, s predlog.Reader, f predlog.Filter) []predlog.Record {
	t.Helper()
	var out []predlog.Record
	for {
		page, err := s.Page(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out
		}
		f.Cursor = page.Next
	}
}
