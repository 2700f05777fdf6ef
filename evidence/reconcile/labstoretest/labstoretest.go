// Package labstoretest is the contract of reconcile.LabStore: every
// implementation runs Run from its own tests, giving the suite a way to
// make fresh storage and open stores on it.
package labstoretest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

// NewStorage makes fresh, empty storage for one subtest and returns how to
// open a store on it. Every call of open returns a store on the same
// storage, as a restarted server gets one. A store with a Close() error
// method is closed by the suite (before it opens the next on the same
// storage); a store in memory may return itself from every open.
type NewStorage func(t *testing.T) (open func(t *testing.T) reconcile.LabStore)

type closer interface{ Close() error }

// t0 is the spectrum time of result 0.
var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// Run runs the contract of reconcile.LabStore.
func Run(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()
	openStore := func(t *testing.T, open func(t *testing.T) reconcile.LabStore) reconcile.LabStore {
		s := open(t)
		if c, ok := s.(closer); ok {
			t.Cleanup(func() { c.Close() })
		}
		return s
	}
	fresh := func(t *testing.T) reconcile.LabStore { return openStore(t, newStorage(t)) }

	t.Run("EmptyRangeIsEmpty", func(t *testing.T) {
		s := fresh(t)
		assertRange(t, s, time.Time{}, time.Time{}, 100)
	})

	t.Run("RoundTripKeepsEveryField", func(t *testing.T) {
		s := fresh(t)
		full, bare, unmatched := Matched("full", 1), Matched("bare", 2), Unmatched("lost", reconcile.Reason("no_prediction"))
		bare.HasScanSeq, bare.ScanSeq, bare.SampledAt = false, 0, time.Time{}
		bare.Lab = inference.Breakdown{}
		bare.Lab.Set(inference.Analyte(2), 0.125)
		mustUpsert(t, s, 0, full, bare, unmatched)
		// Unmatched results are kept, and not in any range.
		assertRange(t, s, time.Time{}, time.Time{}, 100, full, bare)
	})

	t.Run("UpsertReplacesAndCounts", func(t *testing.T) {
		s := fresh(t)
		mustUpsert(t, s, 0, Matched("a", 1), Matched("b", 2), Unmatched("u", "no_prediction"))
		b2 := Matched("b", 5)
		b2.Lab.Set(inference.Analyte(0), 99)
		u2 := Matched("u", 3)
		mustUpsert(t, s, 2, b2, Matched("c", 4), u2)
		assertRange(t, s, time.Time{}, time.Time{}, 100, Matched("a", 1), u2, Matched("c", 4), b2)
		// A matched result replaced by an unmatched one leaves the ranges.
		mustUpsert(t, s, 1, Unmatched("a", "no_prediction"))
		assertRange(t, s, time.Time{}, time.Time{}, 100, u2, Matched("c", 4), b2)
		// Later results of one upsert replace earlier ones with the same id.
		last := Matched("d", 9)
		last.BatchID = "second"
		mustUpsert(t, s, 1, Matched("d", 8), last)
		assertRange(t, s, at(9), time.Time{}, 100, last)
	})

	t.Run("RangeOrderBoundsAndLimit", func(t *testing.T) {
		s := fresh(t)
		var all []reconcile.LabResult
		for i := range 10 {
			all = append(all, Matched(fmt.Sprintf("s%02d", 9-i), i/2)) // pairs share a time: ties by id
		}
		mustUpsert(t, s, 0, all...)
		byTimeThenID := slices.Clone(all)
		slices.SortFunc(byTimeThenID, func(a, b reconcile.LabResult) int {
			if c := a.SpectrumTime.Compare(b.SpectrumTime); c != 0 {
				return c
			}
			return cmp.Compare(a.LabSampleID, b.LabSampleID)
		})
		assertRange(t, s, time.Time{}, time.Time{}, 100, byTimeThenID...)
		assertRange(t, s, time.Time{}, time.Time{}, 3, byTimeThenID[:3]...)
		assertRange(t, s, at(1), at(3), 100, byTimeThenID[2:6]...) // half-open
		assertRange(t, s, at(3), time.Time{}, 100, byTimeThenID[6:]...)
		assertRange(t, s, time.Time{}, at(1), 100, byTimeThenID[:2]...)
		assertRange(t, s, at(2), at(2), 100)
		assertRange(t, s, time.Time{}, time.Time{}, 0)
		assertRange(t, s, time.Time{}, time.Time{}, -1)
	})

	t.Run("UpsertIsAllOrNothing", func(t *testing.T) {
		s := fresh(t)
		mustUpsert(t, s, 0, Matched("keep", 0))
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Upsert(ended, []reconcile.LabResult{Matched("new", 1), Unmatched("keep", "no_prediction")}); err == nil {
			t.Fatal("Upsert with an ended context succeeded")
		}
		tooMany := make([]reconcile.LabResult, reconcile.MaxRecords+1)
		for i := range tooMany {
			tooMany[i] = Matched(fmt.Sprintf("m%05d", i), 2)
		}
		tooMany[0] = Unmatched("keep", "no_prediction")
		if _, err := s.Upsert(ctx, tooMany); err == nil {
			t.Fatalf("an upsert of %d results, over reconcile.MaxRecords, succeeded", len(tooMany))
		}
		assertRange(t, s, time.Time{}, time.Time{}, 100, Matched("keep", 0))
		// Readers beside the upserts see each one whole or not at all.
		const posts, size = 20, 50
		var wg sync.WaitGroup
		stop := make(chan struct{})
		partial := make(chan string, 1)
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					got, err := s.Range(ctx, at(1000), time.Time{}, posts*size+1)
					if n := len(got); err == nil && n%size != 0 {
						select {
						case partial <- fmt.Sprintf("a range read %d results, not a whole number of posts of %d", n, size):
						default:
						}
					}
				}
			})
		}
		for p := range posts {
			var post []reconcile.LabResult
			for i := range size {
				post = append(post, Matched(fmt.Sprintf("p%02d-%02d", p, i), 1000+p))
			}
			mustUpsert(t, s, 0, post...)
		}
		close(stop)
		wg.Wait()
		select {
		case msg := <-partial:
			t.Fatal(msg)
		default:
		}
	})

	t.Run("ReopenKeepsTheResults", func(t *testing.T) {
		open := newStorage(t)
		s := open(t)
		want := []reconcile.LabResult{Matched("a", 1), Matched("b", 2)}
		mustUpsert(t, s, 0, append(want, Unmatched("u", "no_prediction"))...)
		if c, ok := s.(closer); ok {
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
		again := openStore(t, open)
		assertRange(t, again, time.Time{}, time.Time{}, 100, want...)
		// The unmatched result is still there: replacing it counts.
		mustUpsert(t, again, 1, Matched("u", 3))
	})

	t.Run("ConcurrentUpserts", func(t *testing.T) {
		s := fresh(t)
		const writers, each = 6, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers*each*2)
		for w := range writers {
			wg.Go(func() {
				for k := range each {
					shared := Matched("shared", 50)
					shared.BatchID = fmt.Sprintf("writer %d", w)
					_, err := s.Upsert(ctx, []reconcile.LabResult{Matched(fmt.Sprintf("w%d-%d", w, k), w*each+k), shared})
					errs <- err
					_, err = s.Range(ctx, time.Time{}, time.Time{}, 1000)
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Range(ctx, time.Time{}, time.Time{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != writers*each+1 {
			t.Fatalf("%d results, want %d", len(got), writers*each+1)
		}
		for _, r := range got {
			if r.LabSampleID == "shared" {
				want := Matched("shared", 50)
				want.BatchID = r.BatchID
				var w int
				if _, err := fmt.Sscanf(r.BatchID, "writer %d", &w); err != nil || w >= writers || describe(r) != describe(want) {
					t.Fatalf("the result every writer replaced is not one of theirs: %s", describe(r))
				}
			}
		}
	})
}

// at is i seconds after t0.
func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

// Matched is a result matched to the spectrum logged at at(i), with every
// field set.
func Matched(id string, i int) reconcile.LabResult {
	r := reconcile.LabResult{
		LabRecord: reconcile.LabRecord{BatchID: "B-" + id, ScanSeq: int64(1<<53 - i), HasScanSeq: true,
			SampledAt: time.Date(2026, 11, 23, 9, 30, i, 123456789, time.FixedZone("lab", 3600)), LabSampleID: id},
		Matched:      true,
		PredictionID: predlog.PredictionID{byte(i), 0x70, 1, 2, 3, 4, 5, 6, 0x80, 7, 8, 9, 10, 11, 12, byte(len(id))},
		SpectrumTime: at(i),
	}
	for a := range inference.NumAnalytes {
		r.Lab.Set(inference.Analyte(a), 10+float64(a)+float64(i)/8)
	}
	return r
}

// Unmatched is a result matched to no spectrum, for reason.
func Unmatched(id string, reason reconcile.Reason) reconcile.LabResult {
	r := Matched(id, 0)
	r.Matched, r.PredictionID, r.SpectrumTime, r.Reason = false, predlog.PredictionID{}, time.Time{}, reason
	return r
}

func mustUpsert(t *testing.T, s reconcile.LabStore, wantReplaced int, results ...reconcile.LabResult) {
	t.Helper()
	replaced, err := s.Upsert(context.Background(), results)
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if replaced != wantReplaced {
		t.Fatalf("Upsert replaced %d, want %d", replaced, wantReplaced)
	}
}

func assertRange(t *testing.T, s reconcile.LabStore, since, until time.Time, limit int, want ...reconcile.LabResult) {
	t.Helper()
	got, err := s.Range(context.Background(), since, until, limit)
	if err != nil {
		t.Fatalf("Range: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Range(%v, %v, %d): %d results, want %d", since, until, limit, len(got), len(want))
	}
	for i := range got {
		if describe(got[i]) != describe(want[i]) {
			t.Fatalf("Range result %d:\n got %s\nwant %s", i, describe(got[i]), describe(want[i]))
		}
	}
}

// describe spells a result out, its times as instants with the offset the
// lab wrote.
func describe(r reconcile.LabResult) string {
	sampled := ""
	if !r.SampledAt.IsZero() {
		sampled = r.SampledAt.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s batch=%q seq=%d/%v sampled=%s lab=%v matched=%v prediction=%s spectrum=%s reason=%q",
		r.LabSampleID, r.BatchID, r.ScanSeq, r.HasScanSeq, sampled, r.Lab, r.Matched, r.PredictionID,
		r.SpectrumTime.UTC().Format(time.RFC3339Nano), r.Reason)
}
