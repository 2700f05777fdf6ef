package predlog_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/idlecpu"
	"ramanserve/platform/storeerr"
)

// batchStore is a predlog.Store that keeps nothing: it notes the spectrum
// bytes of each appended batch and reports itself empty, so retention
// never deletes. The Reader methods are not called by the writer.
type batchStore struct {
	predlog.Store
	mu      sync.Mutex
	batches []int // uncompressed spectrum bytes of each Append
}

func (s *batchStore) Append(_ context.Context, recs []*predlog.Record) error {
	n := 0
	for _, rec := range recs {
		n += 4 * len(rec.Spectrum)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, n)
	return nil
}

func (s *batchStore) DeleteOlderThan(context.Context, time.Time, int) (int64, error) { return 0, nil }
func (s *batchStore) DeleteOldest(context.Context, int) (int64, error)               { return 0, nil }
func (s *batchStore) Size(context.Context) (predlog.Size, error)                     { return predlog.Size{}, nil }
func (s *batchStore) Compact(context.Context) error                                  { return nil }
func (s *batchStore) Close(context.Context) error                                    { return nil }

// TestBatchesCutByBytesUnderABound: under a size bound the writer commits
// a batch once it holds about MaxBytes/16 (spectra counted uncompressed),
// long before BatchMax records of spectra; without a bound the same
// stream commits in one batch. The commit interval is longer than the
// test, so only the cut and Close commit.
func TestBatchesCutByBytesUnderABound(t *testing.T) {
	const records, points = 200, 2048
	spectrumBytes := 4 * points
	stream := func() []*predlog.Record {
		recs := make([]*predlog.Record, records)
		for i := range recs {
			recs[i] = &predlog.Record{ModelVersion: "v1", Spectrum: make([]float32, points)}
		}
		return recs
	}
	run := func(t *testing.T, maxBytes int64) []int {
		store := &batchStore{}
		l, err := predlog.New(context.Background(), store, predlog.Options{MaxBytes: maxBytes, CommitInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range stream() {
			if !l.Record(rec) {
				t.Fatal("the queue refused a record")
			}
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := l.Stats().Committed; got != records {
			t.Fatalf("%d records committed, want %d", got, records)
		}
		return store.batches
	}

	t.Run("bound", func(t *testing.T) {
		const bound = predlog.MinMaxBytes
		batches := run(t, bound)
		// A batch is cut once it reaches the share, so it passes it by
		// less than one record.
		for i, b := range batches {
			if b > bound/16+spectrumBytes {
				t.Fatalf("batch %d of %d holds %d bytes of spectra, more than 1/16 of the bound (%d) and one spectrum", i, len(batches), b, bound)
			}
		}
		if len(batches) < records*spectrumBytes/(bound/16) {
			t.Fatalf("%d batches for %d bytes of spectra under a bound of %d", len(batches), records*spectrumBytes, bound)
		}
	})
	t.Run("no bound", func(t *testing.T) {
		if batches := run(t, 0); len(batches) != 1 {
			t.Fatalf("without a bound the stream committed in %d batches, want 1 (BatchMax records, or Close)", len(batches))
		}
	})
}

// downStore is a store the writer cannot reach until up is closed: every
// Append before that fails with storeerr.ErrUnavailable, as the fleet's
// database does while it is down. It counts the records it took.
type downStore struct {
	batchStore
	up       chan struct{}
	failures chan struct{} // one send per refused Append, without blocking
	took     atomic.Int64
}

func (s *downStore) Append(ctx context.Context, recs []*predlog.Record) error {
	select {
	case <-s.up:
	default:
		select {
		case s.failures <- struct{}{}:
		default:
		}
		return fmt.Errorf("append: %w: dial tcp: connection refused", storeerr.ErrUnavailable)
	}
	s.took.Add(int64(len(recs)))
	return nil
}

// TestBatchWaitsForAnUnavailableStore: while the store cannot be
// reached, the batch is kept and tried again, records queue behind it up
// to the queue's bound and the rest are counted as dropped; when the
// store is back everything accepted is committed. Nothing is counted as
// failed, and every record offered is committed or counted.
func TestBatchWaitsForAnUnavailableStore(t *testing.T) {
	const queue, offered = 64, 200
	s := &downStore{up: make(chan struct{}), failures: make(chan struct{}, 1)}
	l, err := predlog.New(context.Background(), s, predlog.Options{QueueSize: queue, BatchMax: 16, CommitInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for range 16 { // the first batch: it meets the store down
		if l.Record(&predlog.Record{ModelVersion: "v1"}) {
			accepted++
		}
	}
	<-s.failures
	<-s.failures // a second try: the batch is retried, not dropped
	if !l.Stats().StoreDown {
		t.Fatal("Stats does not say the store is down")
	}
	for range offered - 16 {
		if l.Record(&predlog.Record{ModelVersion: "v1"}) {
			accepted++
		}
	}
	close(s.up)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if st.WriteFailed != 0 || st.StoreDown {
		t.Fatalf("after the store came back: %+v", st)
	}
	if int(s.took.Load()) != accepted || int(st.Committed) != accepted || accepted+int(st.Dropped) != offered {
		t.Fatalf("offered %d, accepted %d, committed %d (store took %d), dropped %d", offered, accepted, st.Committed, s.took.Load(), st.Dropped)
	}
	if accepted > queue+16 {
		t.Fatalf("accepted %d records while the store was down; the queue holds %d and the waiting batch 16", accepted, queue)
	}
	t.Logf("store down: %d of %d records accepted and committed once it was back, %d dropped and counted", accepted, offered, st.Dropped)
}

// TestCloseGivesUpOnAnUnavailableStore: a store that never comes back
// does not hold Close past its ctx; the waiting batch is counted as
// failed.
func TestCloseGivesUpOnAnUnavailableStore(t *testing.T) {
	s := &downStore{up: make(chan struct{}), failures: make(chan struct{}, 1)}
	l, err := predlog.New(context.Background(), s, predlog.Options{BatchMax: 4, CommitInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		l.Record(&predlog.Record{ModelVersion: "v1"})
	}
	<-s.failures
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.Close(ctx)
	if st := l.Stats(); st.WriteFailed+st.Dropped != 4 || st.Committed != 0 {
		t.Fatalf("after Close gave up: %+v", st)
	}
}

// waitUntil polls cond until it holds, failing after a deadline generous
// for a busy machine.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 30 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOldestWaitShowsTheLogBehind: while the store holds the commits
// back, the oldest waiting record's age grows past the promise and
// Stats says the log is behind; once the store takes them, nothing waits.
func TestOldestWaitShowsTheLogBehind(t *testing.T) {
	s := &downStore{up: make(chan struct{}), failures: make(chan struct{}, 1)}
	const promise = 100 * time.Millisecond
	l, err := predlog.New(context.Background(), s, predlog.Options{CommitInterval: time.Millisecond, Promise: promise})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	if st := l.Stats(); st.OldestWait != 0 || st.Behind() || st.Promise != promise {
		t.Fatalf("before any record: %+v", st)
	}
	start := time.Now()
	l.Record(&predlog.Record{ModelVersion: "v1"})
	waitUntil(t, "behind", func() bool { return l.Stats().Behind() })
	if st := l.Stats(); st.OldestWait <= promise || st.OldestWait > time.Since(start) {
		t.Fatalf("oldest wait %v: want past the promise %v and at most %v", st.OldestWait, promise, time.Since(start))
	}
	close(s.up)
	waitUntil(t, "caught up", func() bool { st := l.Stats(); return st.OldestWait == 0 && !st.Behind() && st.Committed == 1 })
}

// TestWriterRaisedWhileBehind: at idle priority, a writer whose records
// wait past a quarter of the promise has its thread raised (counted).
// Skipped where the process may not raise a thread back.
func TestWriterRaisedWhileBehind(t *testing.T) {
	probe := make(chan error)
	go func() { _, err := idlecpu.EnterRaisable(); probe <- err }() // the thread ends with the goroutine
	if err := <-probe; err != nil {
		t.Skipf("cannot raise here: %v", err)
	}
	s := &downStore{up: make(chan struct{}), failures: make(chan struct{}, 1)}
	l, err := predlog.New(context.Background(), s, predlog.Options{CommitInterval: time.Millisecond, Promise: 100 * time.Millisecond, IdlePriority: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	l.Record(&predlog.Record{ModelVersion: "v1"})
	waitUntil(t, "raised", func() bool { return l.Stats().Raised >= 1 })
	close(s.up)
	waitUntil(t, "committed", func() bool { return l.Stats().Committed == 1 })
}
