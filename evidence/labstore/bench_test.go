package labstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"ramanserve/evidence/labstore"
	"ramanserve/evidence/reconcile"
)

// BenchmarkUpsertMaxPost: one post of reconcile.MaxRecords results, the
// largest a client may send, replacing the same ids each time (one
// fsynced transaction).
func BenchmarkUpsertMaxPost(b *testing.B) {
	s, err := labstore.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	post := make([]reconcile.LabResult, reconcile.MaxRecords)
	for i := range post {
		post[i] = matched(fmt.Sprintf("HPLC-%05d", i), i%100, float64(i))
	}
	for b.Loop() {
		if _, err := s.Upsert(context.Background(), post); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRangeMax: a Range of MaxRange results, what one performance
// report reads from the store.
func BenchmarkRangeMax(b *testing.B) {
	s, err := labstore.Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for p := range labstore.MaxRange/reconcile.MaxRecords + 1 {
		post := make([]reconcile.LabResult, reconcile.MaxRecords)
		for i := range post {
			post[i] = matched(fmt.Sprintf("HPLC-%d-%05d", p, i), i%1000, float64(i))
		}
		if _, err := s.Upsert(context.Background(), post); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		got, err := s.Range(context.Background(), time.Time{}, time.Time{}, labstore.MaxRange)
		if err != nil || len(got) != labstore.MaxRange {
			b.Fatal(len(got), err)
		}
	}
}
