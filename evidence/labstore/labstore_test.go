package labstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"ramanserve/evidence/labstore"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

func openStore(t *testing.T, dir string) *labstore.SQLite {
	t.Helper()
	s, err := labstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// matched is a matched result of id on a spectrum logged at t0+sec.
func matched(id string, sec int, epa float64) reconcile.LabResult {
	r := reconcile.LabResult{
		LabRecord: reconcile.LabRecord{BatchID: "B-1", LabSampleID: id, ScanSeq: int64(sec), HasScanSeq: true},
		Matched:   true, PredictionID: predlog.NewPredictionID(), SpectrumTime: t0.Add(time.Duration(sec) * time.Second),
	}
	r.Lab.Set(inference.EPA, epa)
	return r
}

func unmatched(id string) reconcile.LabResult {
	r := reconcile.LabResult{
		LabRecord: reconcile.LabRecord{BatchID: "B-9", LabSampleID: id, SampledAt: t0},
		Reason:    reconcile.ReasonUnknownBatch,
	}
	r.Lab.Set(inference.DHA, 90)
	return r
}

func upsert(t *testing.T, s reconcile.LabStore, results ...reconcile.LabResult) int {
	t.Helper()
	n, err := s.Upsert(context.Background(), results)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func rangeAll(t *testing.T, s reconcile.LabStore, since, until time.Time, limit int) []reconcile.LabResult {
	t.Helper()
	got, err := s.Range(context.Background(), since, until, limit)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func ids(rs []reconcile.LabResult) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.LabSampleID)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	s := openStore(t, t.TempDir())
	r := matched("HPLC-1", 3, 181.5)
	r.Lab.Set(inference.DPA, 20.125)
	r.SampledAt = time.Date(2026, 11, 23, 9, 15, 0, 123456789, time.FixedZone("", 3600))
	r.SpectrumTime = t0.Add(123456789) // nanoseconds survive
	noSeq := matched("HPLC-2", 5, 0)
	noSeq.HasScanSeq, noSeq.ScanSeq = false, 0
	upsert(t, s, r, noSeq, unmatched("HPLC-3"))
	got := rangeAll(t, s, time.Time{}, time.Time{}, 10)
	want := []reconcile.LabResult{r, noSeq}
	if len(got) != 2 {
		t.Fatalf("got %v", ids(got))
	}
	for i := range want {
		if !got[i].SampledAt.Equal(want[i].SampledAt) {
			t.Errorf("%d: sampled_at %v, want %v", i, got[i].SampledAt, want[i].SampledAt)
		}
		got[i].SampledAt, want[i].SampledAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("%d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestUpsertReplacesByLabSampleID(t *testing.T) {
	s := openStore(t, t.TempDir())
	if n := upsert(t, s, matched("a", 1, 10), matched("b", 2, 20), unmatched("c")); n != 0 {
		t.Fatalf("first post replaced %d", n)
	}
	// The same post again: everything replaced, nothing added.
	if n := upsert(t, s, matched("a", 1, 10), matched("b", 2, 20), unmatched("c")); n != 3 {
		t.Fatalf("the same post again replaced %d, want 3", n)
	}
	// A correction of a, c now matched, b now unmatched, d new.
	if n := upsert(t, s, matched("a", 1, 11), matched("c", 0, 30), unmatched("b"), matched("d", 4, 40)); n != 3 {
		t.Fatalf("corrections replaced %d, want 3", n)
	}
	got := rangeAll(t, s, time.Time{}, time.Time{}, 100)
	if fmt.Sprint(ids(got)) != "[c a d]" {
		t.Fatalf("range %v, want [c a d]", ids(got))
	}
	if got[1].Lab.Value[inference.EPA] != 11 {
		t.Fatalf("a holds %v, want the correction 11", got[1].Lab.Value[inference.EPA])
	}
	// The same id twice in one call: the later wins and counts as replacing.
	if n := upsert(t, s, matched("e", 5, 1), matched("e", 5, 2)); n != 1 {
		t.Fatalf("an id twice in one call replaced %d, want 1", n)
	}
	got = rangeAll(t, s, t0.Add(5*time.Second), time.Time{}, 100)
	if len(got) != 1 || got[0].Lab.Value[inference.EPA] != 2 {
		t.Fatalf("e: %+v", got)
	}
}

// TestUpsertAllOrNothing: a post that fails half-way (a trigger refuses
// its third result) leaves the store as it was.
func TestUpsertAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	upsert(t, s, matched("a", 1, 10))
	db := rawDB(t, dir)
	if _, err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON lab_results WHEN NEW.lab_sample_id = 'poison'
		BEGIN SELECT RAISE(ABORT, 'poisoned'); END`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Upsert(context.Background(), []reconcile.LabResult{matched("a", 1, 99), matched("b", 2, 20), matched("poison", 3, 0)})
	if err == nil {
		t.Fatal("the poisoned post was stored")
	}
	got := rangeAll(t, s, time.Time{}, time.Time{}, 100)
	if fmt.Sprint(ids(got)) != "[a]" || got[0].Lab.Value[inference.EPA] != 10 {
		t.Fatalf("after a failed post: %+v", got)
	}

	if _, err := s.Upsert(context.Background(), make([]reconcile.LabResult, reconcile.MaxRecords+1)); err == nil {
		t.Fatal("a post over MaxRecords was taken")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Upsert(ctx, []reconcile.LabResult{matched("c", 1, 1)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled upsert: %v", err)
	}
	if got := rangeAll(t, s, time.Time{}, time.Time{}, 100); len(got) != 1 {
		t.Fatalf("after a cancelled post: %v", ids(got))
	}
}

// TestConcurrentUpsertsEachWhole: upserts at once of the same ids with
// other values are each stored whole: after each round every stored
// value is one upsert's, and the upsert committed second replaced all of
// the first's.
func TestConcurrentUpsertsEachWhole(t *testing.T) {
	s := openStore(t, t.TempDir())
	postOf := func(epa float64) []reconcile.LabResult {
		post := make([]reconcile.LabResult, 2000)
		for i := range post {
			post[i] = matched(fmt.Sprintf("C-%04d", i), i%100, epa)
		}
		return post
	}
	for round := range 5 {
		a, b := float64(2*round+1), float64(2*round+2)
		replaced := make(chan int, 2)
		for _, epa := range []float64{a, b} {
			go func() {
				n, err := s.Upsert(context.Background(), postOf(epa))
				if err != nil {
					t.Errorf("round %d, EPA %g: %v", round, epa, err)
				}
				replaced <- n
			}()
		}
		first, second := <-replaced, <-replaced
		if t.Failed() {
			t.FailNow()
		}
		before := 2000 * min(round, 1)
		if !(first == 2000 && second == before || second == 2000 && first == before) {
			t.Fatalf("round %d: replaced %d and %d, want 2000 and %d", round, first, second, before)
		}
		values := map[float64]int{}
		for _, r := range rangeAll(t, s, time.Time{}, time.Time{}, 4000) {
			values[r.Lab.Value[inference.EPA]]++
		}
		if len(values) != 1 || (values[a] != 2000 && values[b] != 2000) {
			t.Fatalf("round %d: stored EPA values %v, want one upsert's (%g or %g) on all 2000", round, values, a, b)
		}
	}
}

func TestRangeOrderLimitBounds(t *testing.T) {
	s := openStore(t, t.TempDir())
	// Two results on the same spectrum time order by id.
	upsert(t, s, matched("z", 2, 1), matched("m", 2, 1), matched("x", 0, 1), matched("y", 1, 1), matched("w", 3, 1), unmatched("u"))
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	for _, c := range []struct {
		name         string
		since, until time.Time
		limit        int
		want         string
	}{
		{"open", time.Time{}, time.Time{}, 100, "[x y m z w]"},
		{"limit", time.Time{}, time.Time{}, 3, "[x y m]"},
		{"limit 0", time.Time{}, time.Time{}, 0, "[]"},
		{"negative limit", time.Time{}, time.Time{}, -1, "[]"},
		{"since inclusive", at(1), time.Time{}, 100, "[y m z w]"},
		{"until exclusive", time.Time{}, at(2), 100, "[x y]"},
		{"half-open", at(1), at(3), 100, "[y m z]"},
		{"empty", at(2), at(2), 100, "[]"},
		{"one nanosecond", at(2), at(2).Add(1), 100, "[m z]"},
		{"far bounds", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 100, "[x y m z w]"},
		{"far future since", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}, 100, "[]"},
		{"zone", at(1).In(time.FixedZone("", -5*3600)), time.Time{}, 100, "[y m z w]"},
	} {
		if got := fmt.Sprint(ids(rangeAll(t, s, c.since, c.until, c.limit))); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestSameAsMemoryStore: random posts give the same ranges as the
// reference MemoryStore.
func TestSameAsMemoryStore(t *testing.T) {
	s := openStore(t, t.TempDir())
	var m reconcile.MemoryStore
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		post := make([]reconcile.LabResult, 1+rng.IntN(30))
		for i := range post {
			id := fmt.Sprintf("S-%d", rng.IntN(60))
			if rng.IntN(4) == 0 {
				post[i] = unmatched(id)
			} else {
				post[i] = matched(id, rng.IntN(20), rng.Float64()*200)
			}
		}
		nm, _ := m.Upsert(context.Background(), post)
		if ns := upsert(t, s, post...); ns != nm {
			t.Fatalf("replaced %d, memory store %d", ns, nm)
		}
		since, until := t0.Add(time.Duration(rng.IntN(10))*time.Second), t0.Add(time.Duration(5+rng.IntN(20))*time.Second)
		limit := rng.IntN(40)
		want, _ := m.Range(context.Background(), since, until, limit)
		got := rangeAll(t, s, since, until, limit)
		if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
			t.Fatalf("range %v, memory store %v", ids(got), ids(want))
		}
		for i := range got {
			if got[i].Lab != want[i].Lab || got[i].PredictionID != want[i].PredictionID || !got[i].SpectrumTime.Equal(want[i].SpectrumTime) {
				t.Fatalf("%s differs: %+v, memory store %+v", got[i].LabSampleID, got[i], want[i])
			}
		}
	}
}

func TestPragmasAndReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := labstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	upsert(t, s, matched("a", 1, 10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	var mode string
	var version int
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q %v", mode, err)
	}
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil || version != 2 {
		t.Fatalf("schema_version %d %v", version, err)
	}
	s = openStore(t, dir)
	if got := rangeAll(t, s, time.Time{}, time.Time{}, 10); fmt.Sprint(ids(got)) != "[a]" {
		t.Fatalf("after reopen: %v", ids(got))
	}
	s.Close()

	if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if _, err := labstore.Open(context.Background(), dir); !errors.Is(err, labstore.ErrNewerSchema) {
		t.Fatalf("newer schema: %v", err)
	}
	if _, err := labstore.Open(context.Background(), filepath.Join(dir, "a?b")); err == nil {
		t.Fatal("a directory with ? was taken")
	}
}

// rawDB opens the store's file directly, as an operator's sqlite3 would.
func rawDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, labstore.FileName)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func integrityCheck(t *testing.T, db *sql.DB) {
	t.Helper()
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q %v", res, err)
	}
}

// TestFull: a post that would take the store past its bound is refused
// whole with ErrFull; replacing stored results still works.
func TestFull(t *testing.T) {
	s := openStore(t, t.TempDir())
	labstore.SetMaxResults(s, 3)
	upsert(t, s, matched("a", 1, 1), matched("b", 2, 2))
	if _, err := s.Upsert(context.Background(), []reconcile.LabResult{matched("a", 1, 9), matched("c", 3, 3), matched("d", 4, 4)}); !errors.Is(err, labstore.ErrFull) {
		t.Fatalf("past the bound: %v, want ErrFull", err)
	}
	if n := upsert(t, s, matched("a", 1, 9), matched("b", 2, 9), matched("c", 3, 3)); n != 2 {
		t.Fatalf("up to the bound: replaced %d", n)
	}
	got := rangeAll(t, s, time.Time{}, time.Time{}, 10)
	if fmt.Sprint(ids(got)) != "[a b c]" || got[0].Lab.Value[inference.EPA] != 9 {
		t.Fatalf("after: %+v", got)
	}
}
