package pglab_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/batches/referencetest"
	"ramanserve/evidence/labstore"
	"ramanserve/evidence/labstore/pglab"
	"ramanserve/evidence/reconcile"
	"ramanserve/evidence/reconcile/labstoretest"
	"ramanserve/platform/pgtest"
)

// newStore is a store on a fresh database, and the database's URL.
func newStore(t *testing.T) (*pglab.Store, string) {
	t.Helper()
	url := pgtest.Database(t)
	return pglab.New(pgtest.Open(t, url)), url
}

func TestStoreContract(t *testing.T) {
	labstoretest.Run(t, func(t *testing.T) func(t *testing.T) reconcile.LabStore {
		url := pgtest.Database(t)
		return func(t *testing.T) reconcile.LabStore { return pglab.New(pgtest.Open(t, url)) }
	})
}

// TestReplicasSeeEachOthersWrites: two replicas, each with its own pool on
// one database, read and count what the other wrote.
func TestReplicasSeeEachOthersWrites(t *testing.T) {
	ctx := context.Background()
	a, url := newStore(t)
	b := pglab.New(pgtest.Open(t, url))
	if _, err := a.Upsert(ctx, []reconcile.LabResult{labstoretest.Matched("x", 1)}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Range(ctx, time.Time{}, time.Time{}, 10)
	if err != nil || len(got) != 1 || got[0].LabSampleID != "x" {
		t.Fatalf("replica b reads %v, %v", got, err)
	}
	replaced, err := b.Upsert(ctx, []reconcile.LabResult{labstoretest.Unmatched("x", "no_prediction")})
	if err != nil || replaced != 1 {
		t.Fatalf("replica b replaces %d, %v; want 1", replaced, err)
	}
	if got, err := a.Range(ctx, time.Time{}, time.Time{}, 10); err != nil || len(got) != 0 {
		t.Fatalf("replica a still reads %v, %v", got, err)
	}
}

// TestTiesSortInByteOrder: results of one spectrum time come in byte order
// of their ids, as in the other stores, whatever the database's locale:
// the id column has collation "C" of its own (the test cluster's locale
// is C too, so the order alone would not show it).
func TestTiesSortInByteOrder(t *testing.T) {
	ctx := context.Background()
	s, url := newStore(t)
	var collation string
	if err := pgtest.Open(t, url).QueryRow(ctx, `SELECT collation_name FROM information_schema.columns
		WHERE table_name = 'lab_results' AND column_name = 'lab_sample_id'`).Scan(&collation); err != nil || collation != "C" {
		t.Fatalf("lab_sample_id has collation %q (%v), want C", collation, err)
	}
	ids := []string{"b", "B", "a-2", "a10", "a_1", "A", "é", "z"}
	var post []reconcile.LabResult
	for _, id := range ids {
		post = append(post, labstoretest.Matched(id, 7))
	}
	if _, err := s.Upsert(ctx, post); err != nil {
		t.Fatal(err)
	}
	got, err := s.Range(ctx, time.Time{}, time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range got {
		order = append(order, r.LabSampleID)
	}
	if want := "[A B a-2 a10 a_1 b z é]"; fmt.Sprint(order) != want {
		t.Fatalf("order %v, want %s", order, want)
	}
}

// TestFullStoreRefusesNewResults: an upsert that would take the store past
// its bound fails with labstore.ErrFull (the server's 507) and stores
// nothing; replacing stored results still works.
func TestFullStoreRefusesNewResults(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	pglab.SetMaxResults(s, 2)
	if _, err := s.Upsert(ctx, []reconcile.LabResult{labstoretest.Matched("a", 1), labstoretest.Matched("b", 2)}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Upsert(ctx, []reconcile.LabResult{labstoretest.Matched("a", 3), labstoretest.Matched("c", 4)})
	if !errors.Is(err, labstore.ErrFull) {
		t.Fatalf("upsert past the bound: %v, want labstore.ErrFull", err)
	}
	got, err := s.Range(ctx, time.Time{}, time.Time{}, 10)
	if err != nil || len(got) != 2 || !got[0].SpectrumTime.Equal(labstoretest.Matched("a", 1).SpectrumTime) {
		t.Fatalf("after the refused upsert: %v, %v", got, err)
	}
	if replaced, err := s.Upsert(ctx, []reconcile.LabResult{labstoretest.Matched("b", 5)}); err != nil || replaced != 1 {
		t.Fatalf("replacing in a full store: %d, %v", replaced, err)
	}
}

// TestLargestPostIsOneStatement: a post of reconcile.MaxRecords results is
// stored, and replaced, in one round trip each, well within a second on
// a test machine; the counts are right.
func TestLargestPostIsOneStatement(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	post := make([]reconcile.LabResult, reconcile.MaxRecords)
	for i := range post {
		post[i] = labstoretest.Matched(fmt.Sprintf("s%05d", i), i%100)
	}
	for pass, want := range []int{0, reconcile.MaxRecords} {
		start := time.Now()
		replaced, err := s.Upsert(ctx, post)
		if err != nil || replaced != want {
			t.Fatalf("pass %d: replaced %d, %v; want %d", pass, replaced, err, want)
		}
		t.Logf("pass %d: %d results in %v", pass, len(post), time.Since(start))
	}
	got, err := s.Range(ctx, time.Time{}, time.Time{}, labstore.MaxRange)
	if err != nil || len(got) != min(reconcile.MaxRecords, labstore.MaxRange) {
		t.Fatalf("range: %d results, %v", len(got), err)
	}
}

func TestReferenceStoreContract(t *testing.T) {
	referencetest.Run(t, func(t *testing.T) func(t *testing.T) batches.ReferenceStore {
		url := pgtest.Database(t)
		return func(t *testing.T) batches.ReferenceStore { return pglab.NewReferences(pgtest.Open(t, url)) }
	})
}
