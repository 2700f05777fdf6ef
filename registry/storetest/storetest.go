// Package storetest is the contract every registry store runs: the
// guarantees store.IndexStore and store.ArtifactStore document, checked
// against a real implementation. An implementation's own test calls Run
// with an Opener for its stores.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"ramanserve/registry/store"
)

// Opener makes the stores the suite runs on.
type Opener struct {
	// New returns an index store with nothing committed. The caller's
	// test cleanup closes it.
	New func(t *testing.T) store.IndexStore
	// Reopen closes s and returns a new store over the same record, as a
	// restart of the process does.
	Reopen func(t *testing.T, s store.IndexStore) store.IndexStore

	// NewArtifacts returns an artifact store with nothing stored. The
	// caller's test cleanup closes it.
	NewArtifacts func(t *testing.T) store.ArtifactStore
	// ReopenArtifacts closes s and returns a new store over the same
	// artifacts, as a restart of the process does.
	ReopenArtifacts func(t *testing.T, s store.ArtifactStore) store.ArtifactStore
	// Corrupt changes one byte of the stored artifact name behind the
	// store's back, keeping its size, as a failing disk or a hand edit
	// does.
	Corrupt func(t *testing.T, s store.ArtifactStore, name string)
}

// Run runs the contract's subtests, each on a new store: the index
// store's, then the artifact store's.
func Run(t *testing.T, o Opener) {
	if o.New == nil || o.Reopen == nil || o.NewArtifacts == nil || o.ReopenArtifacts == nil || o.Corrupt == nil {
		t.Fatal("storetest.Opener needs New, Reopen, NewArtifacts, ReopenArtifacts and Corrupt")
	}
	tests := []struct {
		name string
		run  func(t *testing.T, o Opener)
	}{
		{"EmptyStore", testEmptyStore},
		{"CommitReadRoundTrip", testRoundTrip},
		{"StaleRevisionIsRefused", testStaleRevision},
		{"RevisionsNeverRepeat", testRevisionsNeverRepeat},
		{"InvalidIndexIsRefused", testInvalidIndex},
		{"CancelledCommitChangesNothing", testCancelledCommit},
		{"IndexesAreCopies", testCopies},
		{"ReopenPreservesState", testReopen},
		{"ConcurrentCommitsOneWinsPerRevision", testConcurrentCommits},
	}
	tests = append(tests, artifactTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, o) })
	}
}

var at = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// sampleIndex has every field of the record set, so a store that drops
// one fails the round trip.
func sampleIndex() *store.Index {
	return &store.Index{
		Active: "a",
		Shadow: "b",
		Models: map[string]*store.Entry{
			"a": {
				Version: "a", Status: store.StatusActive, File: "models/a.npz", SizeBytes: 1234, SHA256: "ab12",
				TrainedAt: at, TrainedSamples: 40, Algorithm: "PLS2-NIPALS", Operator: "op", AuthenticatedAs: "ci",
				SourceBatches: []string{"b1", "b2"}, Notes: "n", AddedAt: at.Add(time.Hour),
				JobID: "job-1", TrainingCSVSHA256: "cd34", TrainingRows: 50, RowsUsed: 48,
				Metrics: &store.Metrics{Components: 3},
				Shape: &store.Shape{WavenumberRange: [2]float64{400, 1800}, WavenumberCount: 700,
					Regions: [][2]float64{{500, 900}}, Preprocessing: json.RawMessage(`[{"kind":"snv"}]`)},
			},
			"b": {
				Version: "b", Status: store.StatusStaged, File: "models/b.joblib", SizeBytes: 99,
				ImportedFrom: "/import/b.joblib", Target: "DHA", TrainedAt: at, AddedAt: at,
			},
		},
		Removing: []store.Removal{{File: "models/gone.npz", SizeBytes: 7, SHA256: "ef56"}},
	}
}

// withEntry is ix with one more archived entry named v.
func withEntry(ix *store.Index, v string) *store.Index {
	next := ix.Clone()
	next.Models[v] = &store.Entry{Version: v, Status: store.StatusArchived, File: "models/" + v + ".npz", TrainedAt: at, AddedAt: at}
	return next
}

func read(t *testing.T, s store.IndexStore) (*store.Index, store.Revision) {
	t.Helper()
	ix, rev, err := s.ReadIndex(context.Background())
	if err != nil {
		t.Fatalf("ReadIndex: %v", err)
	}
	return ix, rev
}

func commit(t *testing.T, s store.IndexStore, base store.Revision, ix *store.Index) store.Revision {
	t.Helper()
	rev, err := s.CommitIndex(context.Background(), base, ix)
	if err != nil {
		t.Fatalf("CommitIndex(base %d): %v", base, err)
	}
	return rev
}

// sameIndex compares two indexes field by field, through their JSON form
// (a store may keep a recipe's JSON in another layout).
func sameIndex(t *testing.T, got, want *store.Index) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Fatalf("index read back differs:\n got %s\nwant %s", g, w)
	}
}

func testEmptyStore(t *testing.T, o Opener) {
	ix, rev := read(t, o.New(t))
	if rev != 0 || ix.Models == nil || len(ix.Models) != 0 || ix.Active != "" || ix.Shadow != "" || len(ix.Removing) != 0 {
		t.Fatalf("empty store reads revision %d, %+v; want revision 0 and an empty index with a models map", rev, ix)
	}
}

func testRoundTrip(t *testing.T, o Opener) {
	s := o.New(t)
	_, base := read(t, s)
	want := sampleIndex()
	rev := commit(t, s, base, want)
	if rev == base {
		t.Fatalf("commit returned the revision it was based on (%d)", rev)
	}
	got, readRev := read(t, s)
	if readRev != rev {
		t.Fatalf("read revision %d after a commit that returned %d", readRev, rev)
	}
	sameIndex(t, got, want)
}

func testStaleRevision(t *testing.T, o Opener) {
	s := o.New(t)
	_, base := read(t, s)
	first := commit(t, s, base, withEntry(store.NewIndex(), "first"))
	for _, stale := range []store.Revision{base, first + 1000} {
		_, err := s.CommitIndex(context.Background(), stale, withEntry(store.NewIndex(), "late"))
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("commit based on revision %d (current %d): %v, want ErrConflict", stale, first, err)
		}
	}
	got, rev := read(t, s)
	if rev != first {
		t.Fatalf("a refused commit moved the revision from %d to %d", first, rev)
	}
	sameIndex(t, got, withEntry(store.NewIndex(), "first"))
}

func testRevisionsNeverRepeat(t *testing.T, o Opener) {
	s := o.New(t)
	ix, rev := read(t, s)
	seen := map[store.Revision]bool{rev: true}
	for i := range 5 {
		ix = withEntry(ix, fmt.Sprintf("v%d", i))
		rev = commit(t, s, rev, ix)
		if seen[rev] {
			t.Fatalf("commit %d returned revision %d again", i, rev)
		}
		seen[rev] = true
	}
}

func testInvalidIndex(t *testing.T, o Opener) {
	s := o.New(t)
	_, base := read(t, s)
	good := commit(t, s, base, withEntry(store.NewIndex(), "good"))
	bad := []*store.Index{
		{Active: "", Models: nil},
		{Models: map[string]*store.Entry{"x": {Version: "x", Status: store.StatusStaged, File: "../x.npz"}}},
		{Models: map[string]*store.Entry{"x": {Version: "y", Status: store.StatusStaged, File: "models/x.npz"}}},
		{Models: map[string]*store.Entry{"x": {Version: "x", Status: "gone", File: "models/x.npz"}}},
		{Models: map[string]*store.Entry{}, Shadow: "../x"},
		{Models: map[string]*store.Entry{}, Removing: []store.Removal{{File: "index.json"}}},
	}
	for _, ix := range bad {
		if _, err := s.CommitIndex(context.Background(), good, ix); !errors.Is(err, store.ErrIndexCorrupt) {
			t.Fatalf("commit of %+v: %v, want ErrIndexCorrupt", ix, err)
		}
	}
	got, rev := read(t, s)
	if rev != good {
		t.Fatalf("refused commits moved the revision from %d to %d", good, rev)
	}
	sameIndex(t, got, withEntry(store.NewIndex(), "good"))
}

func testCancelledCommit(t *testing.T, o Opener) {
	s := o.New(t)
	_, base := read(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.CommitIndex(ctx, base, sampleIndex()); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit with a cancelled context: %v, want context.Canceled", err)
	}
	got, rev := read(t, s)
	if rev != base || len(got.Models) != 0 {
		t.Fatalf("a cancelled commit changed the store: revision %d, %d entries", rev, len(got.Models))
	}
	commit(t, s, base, sampleIndex()) // base is still current
}

func testCopies(t *testing.T, o Opener) {
	s := o.New(t)
	_, base := read(t, s)
	committed := sampleIndex()
	commit(t, s, base, committed)
	// The caller's index after the commit, and an index read, are the
	// caller's to change: the store keeps what was committed.
	committed.Active = "changed"
	committed.Models["a"].Notes = "changed"
	first, _ := read(t, s)
	first.Shadow = "changed"
	first.Models["a"].SourceBatches[0] = "changed"
	delete(first.Models, "b")
	got, _ := read(t, s)
	sameIndex(t, got, sampleIndex())
}

func testReopen(t *testing.T, o Opener) {
	s := o.New(t)
	_, base := read(t, s)
	commit(t, s, base, sampleIndex())
	s = o.Reopen(t, s)
	got, rev := read(t, s)
	sameIndex(t, got, sampleIndex())
	if rev == 0 {
		t.Fatal("a reopened store with a committed index reads revision 0, the revision of nothing recorded")
	}
	// The revision read after a restart is the current one.
	commit(t, s, rev, withEntry(got, "after"))
	s = o.Reopen(t, s)
	got, _ = read(t, s)
	sameIndex(t, got, withEntry(sampleIndex(), "after"))
}

// testConcurrentCommits races writers on one revision, round after
// round: in each, exactly one commit succeeds, the others conflict, and
// the store holds the winner's index.
func testConcurrentCommits(t *testing.T, o Opener) {
	const writers, rounds = 6, 5
	s := o.New(t)
	ix, rev := read(t, s)
	for round := range rounds {
		start := make(chan struct{})
		type result struct {
			version string
			rev     store.Revision
			err     error
		}
		results := make(chan result, writers)
		var wg sync.WaitGroup
		for w := range writers {
			v := fmt.Sprintf("r%d-w%d", round, w)
			next := withEntry(ix, v)
			wg.Go(func() {
				<-start
				r, err := s.CommitIndex(context.Background(), rev, next)
				results <- result{v, r, err}
			})
		}
		close(start)
		wg.Wait()
		close(results)
		var winner *result
		for res := range results {
			switch {
			case res.err == nil && winner != nil:
				t.Fatalf("round %d: %s and %s both committed on revision %d", round, winner.version, res.version, rev)
			case res.err == nil:
				winner = &res
			case !errors.Is(res.err, store.ErrConflict):
				t.Fatalf("round %d: %s: %v, want success or ErrConflict", round, res.version, res.err)
			}
		}
		if winner == nil {
			t.Fatalf("round %d: no writer committed on the current revision %d", round, rev)
		}
		want := withEntry(ix, winner.version)
		got, gotRev := read(t, s)
		if gotRev != winner.rev {
			t.Fatalf("round %d: revision %d, the winner got %d", round, gotRev, winner.rev)
		}
		sameIndex(t, got, want)
		ix, rev = got, gotRev
	}
}
