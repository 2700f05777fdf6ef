package predlog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
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
