// Package referencetest is the contract of batches.ReferenceStore: every
// implementation runs Run from its own tests.
package referencetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/batches"
)

// NewStorage makes fresh, empty storage for one subtest and returns how to
// open a store on it; every call of open returns a store on the same
// storage, as a restarted server gets one. The suite closes nothing: the
// opener's cleanup does.
type NewStorage func(t *testing.T) (open func(t *testing.T) batches.ReferenceStore)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// Run runs the contract of batches.ReferenceStore.
func Run(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()
	fresh := func(t *testing.T) batches.ReferenceStore { return newStorage(t)(t) }

	t.Run("EmptyListsNothing", func(t *testing.T) {
		s := fresh(t)
		refs, err := s.References(ctx)
		if err != nil || len(refs) != 0 {
			t.Fatalf("References of an empty store: %v, %v", refs, err)
		}
		if removed, err := s.Unmark(ctx, "B"); removed || err != nil {
			t.Fatalf("Unmark of nothing: %v, %v", removed, err)
		}
	})

	t.Run("MarkListUnmarkInByteOrder", func(t *testing.T) {
		s := fresh(t)
		ids := []string{"b", "B-10", "a", "é", "B-2"}
		for i, id := range ids {
			ref := batches.Reference{BatchID: id, MarkedAt: t0.Add(time.Duration(i) * time.Nanosecond), MarkedBy: "op " + id}
			got, created, err := s.Mark(ctx, ref)
			if err != nil || !created || got != ref {
				t.Fatalf("Mark(%q): %+v, created %v, %v", id, got, created, err)
			}
		}
		again, created, err := s.Mark(ctx, batches.Reference{BatchID: "a", MarkedAt: t0.Add(time.Hour), MarkedBy: "someone else"})
		if err != nil || created || again.MarkedBy != "op a" || !again.MarkedAt.Equal(t0.Add(2)) {
			t.Fatalf("marking again: %+v, created %v, %v; want the first mark kept", again, created, err)
		}
		refs, err := s.References(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(ids)
		slices.Sort(want)
		var got []string
		for _, r := range refs {
			got = append(got, r.BatchID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("References: %v, want %v", got, want)
		}
		if removed, err := s.Unmark(ctx, "a"); !removed || err != nil {
			t.Fatalf("Unmark: %v, %v", removed, err)
		}
		if removed, err := s.Unmark(ctx, "a"); removed || err != nil {
			t.Fatalf("Unmark again: %v, %v", removed, err)
		}
		if refs, _ := s.References(ctx); len(refs) != len(ids)-1 {
			t.Fatalf("after Unmark, %d references", len(refs))
		}
	})

	t.Run("AtMostMaxReferences", func(t *testing.T) {
		s := fresh(t)
		for i := range batches.MaxReferences {
			if _, _, err := s.Mark(ctx, batches.Reference{BatchID: fmt.Sprintf("B%02d", i), MarkedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.Mark(ctx, batches.Reference{BatchID: "one more", MarkedAt: t0}); !errors.Is(err, batches.ErrReferencesFull) {
			t.Fatalf("a mark past the bound: %v, want ErrReferencesFull", err)
		}
		// Marking a marked batch again is no new mark.
		if _, created, err := s.Mark(ctx, batches.Reference{BatchID: "B00", MarkedAt: t0}); err != nil || created {
			t.Fatalf("marking a marked batch at the bound: %v %v", created, err)
		}
		if refs, _ := s.References(ctx); len(refs) != batches.MaxReferences {
			t.Fatalf("%d references, want %d", len(refs), batches.MaxReferences)
		}
	})

	t.Run("ConcurrentMarksStayWithinTheBound", func(t *testing.T) {
		s := fresh(t)
		var wg sync.WaitGroup
		errs := make(chan error, 2*batches.MaxReferences)
		for i := range 2 * batches.MaxReferences {
			wg.Go(func() {
				if _, _, err := s.Mark(ctx, batches.Reference{BatchID: fmt.Sprintf("C%02d", i), MarkedAt: t0}); err != nil && !errors.Is(err, batches.ErrReferencesFull) {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if refs, _ := s.References(ctx); len(refs) != batches.MaxReferences {
			t.Fatalf("%d references after %d concurrent marks, want %d", len(refs), 2*batches.MaxReferences, batches.MaxReferences)
		}
	})

	t.Run("ReopenKeepsTheMarks", func(t *testing.T) {
		open := newStorage(t)
		want := batches.Reference{BatchID: "kept", MarkedAt: time.Date(2026, 11, 27, 23, 59, 1, 123456789, time.UTC), MarkedBy: "jdoe"}
		if _, _, err := open(t).Mark(ctx, want); err != nil {
			t.Fatal(err)
		}
		refs, err := open(t).References(ctx)
		if err != nil || len(refs) != 1 || refs[0].BatchID != want.BatchID || refs[0].MarkedBy != want.MarkedBy || !refs[0].MarkedAt.Equal(want.MarkedAt) {
			t.Fatalf("after reopening: %+v, %v; want %+v", refs, err, want)
		}
	})
}
