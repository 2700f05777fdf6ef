// Package predlogtest is the contract of predlog.Store: every
// implementation runs Run from its own tests, giving the suite a way to
// make fresh storage and open stores on it.
package predlogtest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
)

// NewStorage makes fresh, empty storage for one subtest and returns how to
// open a store on it. Every call of open returns a store on the same
// storage, as a restarted server gets one; the suite closes each store it
// opens (before opening the next on the same storage).
type NewStorage func(t *testing.T) (open func(t *testing.T) predlog.Store)

// t0 is the time of record 0.
var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// Run runs the contract of predlog.Store.
func Run(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()
	// openStore opens a store the subtest owns, closed when it ends.
	openStore := func(t *testing.T, open func(t *testing.T) predlog.Store) predlog.Store {
		s := open(t)
		t.Cleanup(func() { s.Close(ctx) })
		return s
	}
	fresh := func(t *testing.T) predlog.Store { return openStore(t, newStorage(t)) }

	t.Run("EmptyReadsNothing", func(t *testing.T) {
		s := fresh(t)
		page, err := s.Page(ctx, predlog.Filter{})
		if err != nil || len(page.Records) != 0 || page.Next != "" {
			t.Fatalf("Page of an empty store: %d records, next %q, %v", len(page.Records), page.Next, err)
		}
		if _, found, err := s.Nearest(ctx, "B", t0, time.Hour); found || err != nil {
			t.Fatalf("Nearest in an empty store: %v %v", found, err)
		}
		if _, found, err := s.ByScanSeq(ctx, "B", 1); found || err != nil {
			t.Fatalf("ByScanSeq in an empty store: %v %v", found, err)
		}
		if recs, err := s.ByPrediction(ctx, predlog.NewPredictionID()); len(recs) != 0 || err != nil {
			t.Fatalf("ByPrediction in an empty store: %d %v", len(recs), err)
		}
	})

	t.Run("LastIsTheLastInPageOrder", func(t *testing.T) {
		s := fresh(t)
		if _, found, err := s.Last(ctx); found || err != nil {
			t.Fatalf("Last of an empty store: %v %v", found, err)
		}
		// The latest time wins over the latest append; of equal times,
		// the later append.
		late, tie := Record(5, "B", false), Record(5, "B", false)
		mustAppend(t, s, Record(1, "B", false), late, tie, Record(3, "B", false))
		last, found, err := s.Last(ctx)
		if err != nil || !found || last.PredictionID != tie.PredictionID || !last.Time.Equal(tie.Time) {
			t.Fatalf("Last = %v (found %v, %v), want the record %v", last.PredictionID, found, err, tie.PredictionID)
		}
		page := pageAll(t, s, predlog.Filter{}, 0)
		if page[len(page)-1].ID != last.ID {
			t.Fatalf("Last has ID %d, the last record of Page %d", last.ID, page[len(page)-1].ID)
		}
	})

	t.Run("RoundTripKeepsEveryField", func(t *testing.T) {
		s := fresh(t)
		want := []*predlog.Record{Record(0, "B1", true), Record(1, "B1", false), bareRecord(2)}
		want[1].Role, want[1].PredictionID = predlog.RoleShadow, want[0].PredictionID
		mustAppend(t, s, want...)
		got := pageAll(t, s, predlog.Filter{}, 0)
		assertRecords(t, got, want, false)
		withSpectra := pageAll(t, s, predlog.Filter{WithSpectra: true}, 0)
		assertRecords(t, withSpectra, want[:1], true)
	})

	t.Run("IDsIncreaseInAppendOrder", func(t *testing.T) {
		s := fresh(t)
		// Times go backwards: the IDs follow the appends, not the times.
		var appended []predlog.PredictionID
		for i := range 3 {
			a, b := Record(10-2*i, "B", false), Record(9-2*i, "B", false)
			mustAppend(t, s, a, b)
			appended = append(appended, a.PredictionID, b.PredictionID)
		}
		ids := map[predlog.PredictionID]int64{}
		for _, r := range pageAll(t, s, predlog.Filter{}, 0) {
			ids[r.PredictionID] = r.ID
		}
		for k := 1; k < len(appended); k++ {
			if prev, id := ids[appended[k-1]], ids[appended[k]]; prev <= 0 || id <= prev {
				t.Fatalf("record %d appended has ID %d, after one with ID %d", k, id, prev)
			}
		}
	})

	t.Run("LargeAppendKeepsEachRecordWhole", func(t *testing.T) {
		// 131 records in one Append (more than any one statement a
		// store might batch them into), each with its own spectrum, the
		// odd ones with contributions: a store that mixed up the rows
		// of one statement, or reused a buffer among them, fails here.
		s := fresh(t)
		want := make([]*predlog.Record, 131)
		for i := range want {
			want[i] = Record(i, "B", true)
			if i%2 == 1 {
				want[i].Contributions = Contributions(3+i%5, 2, true, i%3 != 0)
			}
		}
		mustAppend(t, s, want...)
		got := pageAll(t, s, predlog.Filter{WithSpectra: true, WithContributions: true}, 0)
		assertRecordsOf(t, got, want, true, true)
		for k := 1; k < len(got); k++ {
			if got[k].ID <= got[k-1].ID {
				t.Fatalf("record %d has ID %d, after one with ID %d", k, got[k].ID, got[k-1].ID)
			}
		}
	})

	t.Run("PagesFollowTimeThenIDAndCursorsCoverAll", func(t *testing.T) {
		s := fresh(t)
		var all []*predlog.Record
		for i := range 23 {
			r := Record(i/2, "B", false) // pairs share a time: ties go by ID
			all = append(all, r)
		}
		mustAppend(t, s, all[10:]...)
		mustAppend(t, s, all[:10]...)
		for _, limit := range []int{1, 4, 23, 100} {
			got := pageAll(t, s, predlog.Filter{}, limit)
			if len(got) != len(all) {
				t.Fatalf("limit %d: %d records over the pages, want %d", limit, len(got), len(all))
			}
			for k := 1; k < len(got); k++ {
				a, b := got[k-1], got[k]
				if a.Time.After(b.Time) || (a.Time.Equal(b.Time) && a.ID >= b.ID) {
					t.Fatalf("limit %d: record %d (%v, %d) comes after (%v, %d)", limit, k, b.Time, b.ID, a.Time, a.ID)
				}
			}
		}
		page, err := s.Page(ctx, predlog.Filter{Limit: 23})
		if err != nil || len(page.Records) != 23 || page.Next != "" {
			t.Fatalf("a page holding the last record: %d records, next %q, %v", len(page.Records), page.Next, err)
		}
	})

	t.Run("FiltersSelect", func(t *testing.T) {
		s := fresh(t)
		var recs []*predlog.Record
		for i := range 40 {
			r := Record(i, fmt.Sprintf("B%d", i%2), i%3 == 0)
			if i%4 == 1 {
				r.ModelVersion = "v2"
			}
			if i%5 == 2 {
				r.Role = predlog.RoleShadow
			}
			recs = append(recs, r)
		}
		noBatch := bareRecord(40)
		recs = append(recs, noBatch)
		mustAppend(t, s, recs...)
		filters := map[string]predlog.Filter{
			"batch":           {BatchID: "B1", HasBatchID: true},
			"model":           {ModelVersion: "v2"},
			"role":            {Role: predlog.RoleShadow},
			"since":           {Since: at(10)},
			"until":           {Until: at(10)},
			"range":           {Since: at(5), Until: at(30)},
			"spectra":         {WithSpectra: true},
			"all of them":     {BatchID: "B0", HasBatchID: true, ModelVersion: "v1", Role: predlog.RoleActive, Since: at(3), Until: at(33), WithSpectra: true},
			"empty range":     {Since: at(20), Until: at(20)},
			"no such batch":   {BatchID: "B9", HasBatchID: true},
			"every record":    {},
			"only one record": {Since: at(40)},
		}
		for name, f := range filters {
			var want []*predlog.Record
			for _, r := range recs {
				if selects(f, r) {
					want = append(want, r)
				}
			}
			for _, limit := range []int{3, 0} {
				got := pageAll(t, s, f, limit)
				if len(got) != len(want) {
					t.Fatalf("%s (limit %d): %d records, want %d", name, limit, len(got), len(want))
				}
				assertRecords(t, got, want, f.WithSpectra)
			}
		}
	})

	t.Run("ABadCursorIsErrBadCursor", func(t *testing.T) {
		s := fresh(t)
		mustAppend(t, s, Record(0, "B", false), Record(1, "B", false))
		page, err := s.Page(ctx, predlog.Filter{Limit: 1})
		if err != nil || page.Next == "" {
			t.Fatalf("first page: next %q, %v", page.Next, err)
		}
		for _, c := range []string{"x", "not a cursor", page.Next + "A", page.Next[:len(page.Next)-1] + "!", string(make([]byte, 600))} {
			if _, err := s.Page(ctx, predlog.Filter{Cursor: c}); !errors.Is(err, predlog.ErrBadCursor) {
				t.Errorf("cursor %q: %v, want predlog.ErrBadCursor", c, err)
			}
		}
	})

	t.Run("SpectraPagesAreCapped", func(t *testing.T) {
		s := fresh(t)
		var recs []*predlog.Record
		for i := range predlog.MaxSpectraPageLimit + 1 {
			r := Record(i, "B", false)
			r.Spectrum, r.Wavenumbers = []float32{float32(i), 2}, []float32{100, 200}
			recs = append(recs, r)
		}
		mustAppend(t, s, recs...)
		page, err := s.Page(ctx, predlog.Filter{WithSpectra: true, Limit: predlog.MaxSpectraPageLimit + 1})
		if err != nil || len(page.Records) != predlog.MaxSpectraPageLimit || page.Next == "" {
			t.Fatalf("a page with spectra holds %d records (next %q, %v), want %d and more", len(page.Records), page.Next, err, predlog.MaxSpectraPageLimit)
		}
	})

	t.Run("NearestActiveRecordWithinTheWindow", func(t *testing.T) {
		s := fresh(t)
		before, after := Record(10, "B", false), Record(20, "B", false)
		shadow, other := Record(14, "B", false), Record(15, "C", false)
		shadow.Role = predlog.RoleShadow
		mustAppend(t, s, before, after, shadow, other)
		ms := time.Millisecond
		for _, c := range []struct {
			at     int
			window time.Duration
			want   *predlog.Record
		}{
			{12, 10 * ms, before}, {18, 10 * ms, after}, {15, 10 * ms, before} /* a tie: the earlier */, {10, 0, before},
			{25, 5 * ms, after}, {26, 5 * ms, nil}, {4, 5 * ms, nil}, {15, 4 * ms, nil},
		} {
			got, found, err := s.Nearest(ctx, "B", at(c.at), c.window)
			if err != nil || found != (c.want != nil) || (found && got.PredictionID != c.want.PredictionID) {
				t.Errorf("Nearest(%d ms, window %v): %v %v %v", c.at, c.window, found, got.Time, err)
			}
		}
		if _, _, err := s.Nearest(ctx, "B", at(10), -ms); err == nil {
			t.Error("a negative window was accepted")
		}
		if _, found, err := s.Nearest(ctx, "B", time.Unix(0, math.MaxInt64), math.MaxInt64); err != nil || !found {
			t.Errorf("the widest window: %v %v", found, err)
		}
	})

	t.Run("ByScanSeqTheLatestActive", func(t *testing.T) {
		s := fresh(t)
		first, again, shadow := Record(7, "B", false), Record(3, "B", false), Record(9, "B", false)
		again.ScanSeq, shadow.ScanSeq, shadow.Role = 7, 7, predlog.RoleShadow
		mustAppend(t, s, first, Record(8, "B", false))
		mustAppend(t, s, again, shadow, Record(7, "C", false))
		got, found, err := s.ByScanSeq(ctx, "B", 7)
		if err != nil || !found || got.PredictionID != again.PredictionID {
			t.Fatalf("ByScanSeq: %v %v; want the record appended last", found, err)
		}
		if _, found, err := s.ByScanSeq(ctx, "B", 99); found || err != nil {
			t.Fatalf("ByScanSeq of no record: %v %v", found, err)
		}
	})

	t.Run("ByPredictionEveryRoleInRoleThenIDOrder", func(t *testing.T) {
		s := fresh(t)
		active, shadow, rescore1, rescore2 := Record(1, "B", true), Record(1, "B", false), Record(1, "B", false), Record(1, "B", false)
		for _, r := range []*predlog.Record{shadow, rescore1, rescore2} {
			r.PredictionID = active.PredictionID
		}
		shadow.Role, rescore1.Role, rescore2.Role = predlog.RoleShadow, predlog.RoleRescore, predlog.RoleRescore
		rescore2.ModelVersion = "v9"
		mustAppend(t, s, rescore1, shadow)
		mustAppend(t, s, active, Record(2, "B", false), rescore2)
		got, err := s.ByPrediction(ctx, active.PredictionID)
		if err != nil {
			t.Fatal(err)
		}
		assertFull(t, got, []*predlog.Record{active, shadow, rescore1, rescore2})
	})

	t.Run("ByPredictionReadsSpectrumAndContributions", func(t *testing.T) {
		s := fresh(t)
		active, shadow, rescore := Record(1, "B", true), Record(1, "B", false), Record(1, "B", false)
		shadow.PredictionID, rescore.PredictionID = active.PredictionID, active.PredictionID
		shadow.Role, rescore.Role = predlog.RoleShadow, predlog.RoleRescore
		active.Contributions = Contributions(3, 2, true, true)
		shadow.Contributions = Contributions(0, 1, false, true)
		mustAppend(t, s, active, shadow, rescore)
		got, err := s.ByPrediction(ctx, active.PredictionID)
		if err != nil {
			t.Fatal(err)
		}
		assertFull(t, got, []*predlog.Record{active, shadow, rescore})
		// The other reads leave the contributions out, unless a page
		// asks for them.
		for _, r := range pageAll(t, s, predlog.Filter{WithSpectra: true}, 0) {
			if r.Contributions != nil {
				t.Fatalf("Page read contributions of record %d", r.ID)
			}
		}
		withContributions := pageAll(t, s, predlog.Filter{WithContributions: true}, 0)
		assertRecordsOf(t, withContributions, []*predlog.Record{active, shadow, rescore}, false, true)
	})

	t.Run("ContributionsCountInSize", func(t *testing.T) {
		grow := func(c *inference.Contributions) int64 {
			s := fresh(t)
			before := mustSize(t, s)
			for b := range 5 {
				var recs []*predlog.Record
				for i := range 100 {
					r := bareRecord(b*100 + i)
					r.Contributions = c
					recs = append(recs, r)
				}
				mustAppend(t, s, recs...)
			}
			return mustSize(t, s).LiveBytes - before.LiveBytes
		}
		c := Contributions(predlog.MaxStoredEntries, 8, true, true)
		without, with := grow(nil), grow(c)
		if want := int64(500 * predlog.ContributionsBytes(c) / 2); with-without < want {
			t.Fatalf("500 records with %d bytes of contributions each grew the store by %d bytes, without by %d: the contributions count %d, want at least %d",
				predlog.ContributionsBytes(c), with, without, with-without, want)
		}
	})

	t.Run("ByPredictionsIsByPredictionOfEachSpectrum", func(t *testing.T) {
		s := fresh(t)
		// More spectra than the 999 parameters some SQLite builds allow a
		// statement, each with an active and a shadow record; the first
		// spectrum also with re-scoring records appended around them.
		const spectra = 1200
		var active, shadows []*predlog.Record
		for i := range spectra {
			a, sh := Record(i, "B", false), Record(i, "B", false)
			sh.PredictionID, sh.Role, sh.ModelVersion = a.PredictionID, predlog.RoleShadow, "v2"
			active, shadows = append(active, a), append(shadows, sh)
		}
		rescore1, rescore2 := Record(0, "B", false), Record(0, "B", false)
		rescore1.PredictionID, rescore2.PredictionID = active[0].PredictionID, active[0].PredictionID
		rescore1.Role, rescore2.Role, rescore2.ModelVersion = predlog.RoleRescore, predlog.RoleRescore, "v9"
		mustAppend(t, s, rescore1, shadows[0])
		mustAppend(t, s, append(append([]*predlog.Record{}, active...), shadows[1:]...)...)
		mustAppend(t, s, rescore2)

		unknown := predlog.NewPredictionID()
		ids := []predlog.PredictionID{unknown, active[0].PredictionID}
		for i := spectra - 1; i >= 0; i-- {
			ids = append(ids, active[i].PredictionID)
		}
		got := byPredictions(t, s, ids)
		if len(got) != spectra {
			t.Fatalf("ByPredictions: %d spectra, want %d (the unknown one none, the repeated one once)", len(got), spectra)
		}
		if _, ok := got[unknown]; ok {
			t.Fatal("ByPredictions: records for an id with none")
		}
		assertRecords(t, got[active[0].PredictionID], figuresOf(active[0], shadows[0], rescore1, rescore2), false)
		for i := 1; i < spectra; i++ {
			assertRecords(t, got[active[i].PredictionID], figuresOf(active[i], shadows[i]), false)
		}
		if none := byPredictions(t, s, nil); len(none) != 0 {
			t.Fatalf("ByPredictions of no id: %d spectra", len(none))
		}
		stop := errors.New("enough")
		calls := 0
		err := s.ByPredictions(ctx, ids, func([]predlog.Record) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Fatalf("ByPredictions whose use fails: %d calls, %v; want 1 call and its error", calls, err)
		}
	})

	t.Run("AppendIsOneTransaction", func(t *testing.T) {
		s := fresh(t)
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Append(ended, []*predlog.Record{Record(0, "B", false), Record(1, "B", false)}); err == nil {
			t.Fatal("Append with an ended context succeeded")
		}
		assertCount(t, s, predlog.Filter{}, 0)
		// Readers beside the appends see each batch whole or not at all.
		const batches, size = 20, 50
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
					for b := range batches {
						f := predlog.Filter{BatchID: fmt.Sprintf("T%d", b), HasBatchID: true}
						page, err := s.Page(ctx, f)
						if n := len(page.Records); err == nil && n != 0 && n != size {
							select {
							case partial <- fmt.Sprintf("batch %d read with %d of its %d records", b, n, size):
							default:
							}
						}
					}
				}
			})
		}
		for b := range batches {
			var recs []*predlog.Record
			for i := range size {
				recs = append(recs, Record(b*size+i, fmt.Sprintf("T%d", b), false))
			}
			mustAppend(t, s, recs...)
		}
		close(stop)
		wg.Wait()
		select {
		case msg := <-partial:
			t.Fatal(msg)
		default:
		}
		assertCount(t, s, predlog.Filter{}, batches*size)
	})

	t.Run("AppendDoesNotKeepTheBatch", func(t *testing.T) {
		s := fresh(t)
		r := Record(0, "B", true)
		want := *r
		want.Spectrum, want.Wavenumbers = slices.Clone(r.Spectrum), slices.Clone(r.Wavenumbers)
		mustAppend(t, s, r)
		r.ModelVersion, r.Spectrum[0], r.Wavenumbers[0] = "changed", -1, -1
		assertRecords(t, pageAll(t, s, predlog.Filter{WithSpectra: true}, 0), []*predlog.Record{&want}, true)
	})

	t.Run("DeleteOlderThanTheOldestFirstAtMostLimit", func(t *testing.T) {
		s := fresh(t)
		for i := range 10 {
			mustAppend(t, s, Record(9-i, "B", false))
		}
		n, err := s.DeleteOlderThan(ctx, at(6), 4)
		if err != nil || n != 4 {
			t.Fatalf("DeleteOlderThan(6 ms, 4): %d %v", n, err)
		}
		assertTimes(t, s, 4, 5, 6, 7, 8, 9)
		n, err = s.DeleteOlderThan(ctx, at(6), 100)
		if err != nil || n != 2 {
			t.Fatalf("DeleteOlderThan(6 ms, 100): %d %v", n, err)
		}
		assertTimes(t, s, 6, 7, 8, 9) // the record at the cutoff stays
		if n, err := s.DeleteOlderThan(ctx, at(6), 100); err != nil || n != 0 {
			t.Fatalf("DeleteOlderThan of nothing: %d %v", n, err)
		}
	})

	t.Run("DeleteOldestByTimeThenID", func(t *testing.T) {
		s := fresh(t)
		tie := Record(1, "B", false)
		mustAppend(t, s, Record(3, "B", false), Record(1, "B", false), Record(2, "B", false))
		mustAppend(t, s, tie, Record(0, "B", false))
		n, err := s.DeleteOldest(ctx, 2)
		if err != nil || n != 2 {
			t.Fatalf("DeleteOldest(2): %d %v", n, err)
		}
		got := pageAll(t, s, predlog.Filter{}, 0)
		if len(got) != 3 || got[0].PredictionID != tie.PredictionID {
			t.Fatalf("after deleting the two oldest, %d records, first %v; want the later of the tied pair first", len(got), got[0].Time)
		}
		if n, err := s.DeleteOldest(ctx, 10); err != nil || n != 3 {
			t.Fatalf("DeleteOldest(10) of 3: %d %v", n, err)
		}
		assertCount(t, s, predlog.Filter{}, 0)
	})

	t.Run("SizeFollowsTheRecords", func(t *testing.T) {
		s := fresh(t)
		empty := mustSize(t, s)
		for b := range 10 {
			var recs []*predlog.Record
			for i := range 100 {
				recs = append(recs, Record(b*100+i, "B", true))
			}
			mustAppend(t, s, recs...)
		}
		full := mustSize(t, s)
		if full.LiveBytes <= empty.LiveBytes || full.Bytes < full.LiveBytes || full.LiveBytes < 1000*100 {
			t.Fatalf("1000 records with spectra: size %+v, empty %+v", full, empty)
		}
		if _, err := s.DeleteOldest(ctx, 900); err != nil {
			t.Fatal(err)
		}
		for range 50 {
			if err := s.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
		after := mustSize(t, s)
		if after.LiveBytes >= full.LiveBytes*3/4 || after.Bytes > full.Bytes || after.Bytes < after.LiveBytes {
			t.Fatalf("after deleting 9 records in 10 and compacting: size %+v, before %+v", after, full)
		}
		assertCount(t, s, predlog.Filter{WithSpectra: true}, 100)
	})

	t.Run("ReopenKeepsRecordsAndCursors", func(t *testing.T) {
		open := newStorage(t)
		s := open(t)
		var want []*predlog.Record
		for i := range 12 {
			want = append(want, Record(i, "B", i%2 == 0))
		}
		mustAppend(t, s, want...)
		page, err := s.Page(ctx, predlog.Filter{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		again := openStore(t, open)
		assertRecords(t, pageAll(t, again, predlog.Filter{}, 0), want, false)
		assertRecords(t, pageAll(t, again, predlog.Filter{WithSpectra: true}, 0), everyOther(want), true)
		rest, err := again.Page(ctx, predlog.Filter{Cursor: page.Next})
		if err != nil {
			t.Fatalf("a cursor from before the reopen: %v", err)
		}
		assertRecords(t, rest.Records, want[5:], false)
		mustAppend(t, again, Record(12, "B", false))
		recs := pageAll(t, again, predlog.Filter{}, 0)
		if last := recs[len(recs)-1]; last.ID <= recs[len(recs)-2].ID {
			t.Fatalf("the ID of a record appended after the reopen, %d, is not past the others", last.ID)
		}
	})

	t.Run("ConcurrentUse", func(t *testing.T) {
		s := fresh(t)
		const writers, batches, size = 4, 10, 20
		var wg sync.WaitGroup
		errs := make(chan error, writers*batches+16)
		for w := range writers {
			wg.Go(func() {
				for b := range batches {
					var recs []*predlog.Record
					for i := range size {
						recs = append(recs, Record((w*batches+b)*size+i, fmt.Sprintf("W%d", w), i == 0))
					}
					if err := s.Append(ctx, recs); err != nil {
						errs <- err
					}
				}
			})
		}
		for range 2 {
			wg.Go(func() {
				for range 20 {
					if _, err := s.Page(ctx, predlog.Filter{WithSpectra: true}); err != nil {
						errs <- err
					}
					if _, err := s.Size(ctx); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		got := pageAll(t, s, predlog.Filter{}, 0)
		ids := map[int64]bool{}
		for _, r := range got {
			ids[r.ID] = true
		}
		if len(got) != writers*batches*size || len(ids) != len(got) {
			t.Fatalf("%d records with %d distinct IDs, want %d", len(got), len(ids), writers*batches*size)
		}
		assertCount(t, s, predlog.Filter{WithSpectra: true}, writers*batches)
	})

	t.Run("BatchesInByteOrderWithTheirFigures", func(t *testing.T) {
		s := fresh(t)
		if page, err := s.Batches(ctx, predlog.BatchFilter{}); err != nil || len(page.Batches) != 0 || page.Next != "" {
			t.Fatalf("Batches of an empty store: %+v, %v", page, err)
		}
		// Ids whose byte order differs from a locale's ("B" < "a" < "b",
		// "é" after "z"), a batch seen only by a shadow (not listed), and
		// a record without a batch (not listed).
		ids := []string{"b", "B-10", "a", "é", "z", "B-2"}
		var recs []*predlog.Record
		for k, id := range ids {
			for i := range k + 1 {
				r := Record(100*k+i, id, false)
				if i == 1 {
					r.ModelVersion = "v0"
				}
				recs = append(recs, r)
			}
			sh := Record(100*k+50, id, false)
			sh.Role, sh.ModelVersion = predlog.RoleShadow, "v2"
			recs = append(recs, sh)
		}
		onlyShadow := Record(900, "shadow-only", false)
		onlyShadow.Role = predlog.RoleShadow
		recs = append(recs, onlyShadow, bareRecord(901))
		mustAppend(t, s, recs...)
		sorted := slices.Clone(ids)
		slices.Sort(sorted) // Go compares strings by their bytes
		for _, limit := range []int{1, 4, 0} {
			var got []predlog.BatchSummary
			f := predlog.BatchFilter{Limit: limit}
			for pages := 0; ; pages++ {
				page, err := s.Batches(ctx, f)
				if err != nil {
					t.Fatalf("Batches: %v", err)
				}
				if limit > 0 && len(page.Batches) > limit || pages > len(ids) {
					t.Fatalf("limit %d: a page of %d batches", limit, len(page.Batches))
				}
				got = append(got, page.Batches...)
				if page.Next == "" {
					break
				}
				f.Cursor = page.Next
			}
			if len(got) != len(sorted) {
				t.Fatalf("limit %d: %d batches, want %d", limit, len(got), len(sorted))
			}
			for i, b := range got {
				k := slices.Index(ids, b.BatchID)
				if b.BatchID != sorted[i] || k < 0 {
					t.Fatalf("limit %d: batch %d is %q, want %q", limit, i, b.BatchID, sorted[i])
				}
				models := []string{"v1", "v2"}
				if k >= 1 {
					models = []string{"v0", "v1", "v2"}
				}
				if b.Count != int64(k+1) || !b.First.Equal(at(100*k)) || !b.Last.Equal(at(100*k+k)) || !slices.Equal(b.Models, models) || b.MoreModels != 0 {
					t.Fatalf("batch %q: %+v; want %d active records from %v to %v, models %v", b.BatchID, b, k+1, at(100*k), at(100*k+k), models)
				}
			}
		}
		for _, c := range []string{"x", "not a cursor", EncodeBadBatchCursor()} {
			if _, err := s.Batches(ctx, predlog.BatchFilter{Cursor: c}); !errors.Is(err, predlog.ErrBadCursor) {
				t.Errorf("cursor %q: %v, want predlog.ErrBadCursor", c, err)
			}
		}
	})

	t.Run("BatchesNameAtMostMaxBatchModels", func(t *testing.T) {
		s := fresh(t)
		var recs []*predlog.Record
		for i := range predlog.MaxBatchModels + 3 {
			r := Record(i, "B", false)
			r.ModelVersion = fmt.Sprintf("v%02d", i)
			recs = append(recs, r)
		}
		mustAppend(t, s, recs...)
		page, err := s.Batches(ctx, predlog.BatchFilter{})
		if err != nil || len(page.Batches) != 1 {
			t.Fatalf("Batches: %+v, %v", page, err)
		}
		b := page.Batches[0]
		if len(b.Models) != predlog.MaxBatchModels || b.MoreModels != 3 || b.Models[0] != "v00" || b.Count != int64(len(recs)) {
			t.Fatalf("a batch of %d versions: %d named (first %q), %d more, count %d", len(recs), len(b.Models), b.Models[0], b.MoreModels, b.Count)
		}
	})

	t.Run("ClosedStoreFails", func(t *testing.T) {
		s := newStorage(t)(t)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, []*predlog.Record{Record(0, "B", false)}); err == nil {
			t.Error("Append after Close succeeded")
		}
		if _, err := s.Page(ctx, predlog.Filter{}); err == nil {
			t.Error("Page after Close succeeded")
		}
	})
}

// at is the time of record i: i milliseconds after t0.
func at(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }

// Record makes record i of batch: at(i), active, model v1, every optional
// field set, and a 64-point spectrum when spectrum is set.
func Record(i int, batch string, spectrum bool) *predlog.Record {
	rec := &predlog.Record{
		PredictionID: predlog.NewPredictionID(),
		Time:         at(i),
		ModelVersion: "v1",
		Role:         predlog.RoleActive,
		ReducedT2:    0.5 + float64(i)*1e-6,
		ReducedQ:     0.25,
		HasReducedT2: true,
		HasReducedQ:  true,
		ScanContext: inference.ScanContext{
			BatchID: batch, HasBatchID: true, Port: "P1", HasPort: true, ColumnIndex: 3, HasColumnIndex: true,
			ScanSeq: float64(i), HasScanSeq: true, Channel: 1, HasChannel: true, IntegrationMS: 250.5, HasIntegrationMS: true,
		},
	}
	for a := range inference.NumAnalytes {
		rec.Concentrations.Set(inference.Analyte(a), 10+float64(a)+float64(i)*1e-3)
		rec.Confidence.Set(inference.Analyte(a), 0.9)
	}
	if spectrum {
		rec.Spectrum, rec.Wavenumbers = make([]float32, 64), make([]float32, 64)
		for k := range rec.Spectrum {
			rec.Wavenumbers[k] = 200 + float32(k)*1.5
			rec.Spectrum[k] = float32(1000 + k*i%97)
		}
	}
	return rec
}

// byPredictions reads ids' spectra with ByPredictions, failing t if a
// spectrum comes twice.
func byPredictions(t *testing.T, s predlog.Store, ids []predlog.PredictionID) map[predlog.PredictionID][]predlog.Record {
	t.Helper()
	out := make(map[predlog.PredictionID][]predlog.Record)
	err := s.ByPredictions(context.Background(), ids, func(recs []predlog.Record) error {
		id := recs[0].PredictionID
		if _, twice := out[id]; twice {
			return fmt.Errorf("spectrum %s handed twice", id)
		}
		out[id] = slices.Clone(recs)
		return nil
	})
	if err != nil {
		t.Fatalf("ByPredictions: %v", err)
	}
	return out
}

// figuresOf is recs as ByPredictions reads them: without time,
// confidence, scan context, diagnostics or spectrum.
func figuresOf(recs ...*predlog.Record) []*predlog.Record {
	out := make([]*predlog.Record, len(recs))
	for i, r := range recs {
		out[i] = &predlog.Record{PredictionID: r.PredictionID, ModelVersion: r.ModelVersion, Role: r.Role,
			Concentrations: r.Concentrations}
	}
	return out
}

// Contributions are T2 and Q contributions (as has says) with top
// variables and regions, each summary with a value of its own.
func Contributions(top, regions int, hasT2, hasQ bool) *inference.Contributions {
	summary := func(base float64) inference.ContributionSummary {
		s := inference.ContributionSummary{Total: base}
		for k := range top {
			s.Top = append(s.Top, inference.VariableContribution{Wavenumber: 600 + float64(k)*1.5, Value: base / float64(k+2)})
		}
		for k := range regions {
			s.Regions = append(s.Regions, inference.RegionContribution{Region: [2]float64{600 + 100*float64(k), 650 + 100*float64(k)}, Value: base / float64(regions)})
		}
		return s
	}
	c := &inference.Contributions{HasT2: hasT2, HasQ: hasQ}
	if hasT2 {
		c.T2 = summary(3.25)
	}
	if hasQ {
		c.Q = summary(0.0125)
	}
	return c
}

// bareRecord is record i with no optional field: no batch, no context, no
// diagnostics, one analyte unknown.
func bareRecord(i int) *predlog.Record {
	rec := &predlog.Record{PredictionID: predlog.NewPredictionID(), Time: at(i), ModelVersion: "v1", Role: predlog.RoleActive}
	rec.Concentrations.Set(inference.Analyte(0), 12.5)
	return rec
}

func everyOther(recs []*predlog.Record) []*predlog.Record {
	var out []*predlog.Record
	for i := 0; i < len(recs); i += 2 {
		out = append(out, recs[i])
	}
	return out
}

// selects is what Filter f means, spelled out.
func selects(f predlog.Filter, r *predlog.Record) bool {
	return (!f.HasBatchID || (r.HasBatchID && r.BatchID == f.BatchID)) &&
		(f.ModelVersion == "" || r.ModelVersion == f.ModelVersion) &&
		(f.Role == 0 || r.Role == f.Role) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since)) &&
		(f.Until.IsZero() || r.Time.Before(f.Until)) &&
		(!f.WithSpectra || r.Spectrum != nil)
}

func mustAppend(t *testing.T, s predlog.Store, recs ...*predlog.Record) {
	t.Helper()
	if err := s.Append(context.Background(), recs); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

func mustSize(t *testing.T, s predlog.Store) predlog.Size {
	t.Helper()
	size, err := s.Size(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return size
}

// pageAll reads every record f selects, limit at a time (0: the default).
func pageAll(t *testing.T, s predlog.Store, f predlog.Filter, limit int) []predlog.Record {
	t.Helper()
	f.Limit = limit
	var out []predlog.Record
	for pages := 0; ; pages++ {
		page, err := s.Page(context.Background(), f)
		if err != nil {
			t.Fatalf("Page: %v", err)
		}
		if limit > 0 && len(page.Records) > limit {
			t.Fatalf("a page of %d records, over the limit of %d", len(page.Records), limit)
		}
		if len(page.Records) == 0 && page.Next != "" {
			t.Fatal("an empty page with a next cursor")
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out
		}
		if pages > 100_000 {
			t.Fatal("the pages never end")
		}
		f.Cursor = page.Next
	}
}

func assertCount(t *testing.T, s predlog.Store, f predlog.Filter, want int) {
	t.Helper()
	if got := len(pageAll(t, s, f, 0)); got != want {
		t.Fatalf("%d records, want %d", got, want)
	}
}

// assertTimes checks that s holds records at exactly these times (ms).
func assertTimes(t *testing.T, s predlog.Store, want ...int) {
	t.Helper()
	var got []int
	for _, r := range pageAll(t, s, predlog.Filter{}, 0) {
		got = append(got, int(r.Time.Sub(t0)/time.Millisecond))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records at %v ms, want %v", got, want)
	}
}

// assertRecords checks got against want in order, every field but the
// store's ID and the contributions (got has none); spectra too when
// withSpectra (else got has none).
func assertRecords(t *testing.T, got []predlog.Record, want []*predlog.Record, withSpectra bool) {
	t.Helper()
	assertRecordsOf(t, got, want, withSpectra, false)
}

// assertFull is assertRecords of a ByPrediction read: spectra and
// contributions as stored.
func assertFull(t *testing.T, got []predlog.Record, want []*predlog.Record) {
	t.Helper()
	assertRecordsOf(t, got, want, true, true)
}

func assertRecordsOf(t *testing.T, got []predlog.Record, want []*predlog.Record, withSpectra, withContributions bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], *want[i]
		if g.ID <= 0 {
			t.Fatalf("record %d has ID %d", i, g.ID)
		}
		if !g.Time.Equal(w.Time) {
			t.Fatalf("record %d: time %v, want %v", i, g.Time, w.Time)
		}
		if !withSpectra {
			w.Spectrum, w.Wavenumbers = nil, nil
		}
		if !slices.Equal(g.Spectrum, w.Spectrum) || !slices.Equal(g.Wavenumbers, w.Wavenumbers) {
			t.Fatalf("record %d: spectrum of %d points on an axis of %d, want %d on %d", i, len(g.Spectrum), len(g.Wavenumbers), len(w.Spectrum), len(w.Wavenumbers))
		}
		if !withContributions {
			w.Contributions = nil
		}
		if !reflect.DeepEqual(g.Contributions, w.Contributions) {
			t.Fatalf("record %d: contributions\n got %+v\nwant %+v", i, g.Contributions, w.Contributions)
		}
		g.Contributions, w.Contributions = nil, nil
		g.ID, g.Time, w.Time = 0, time.Time{}, time.Time{}
		g.Spectrum, g.Wavenumbers, w.Spectrum, w.Wavenumbers = nil, nil, nil, nil
		if fmt.Sprintf("%+v", g) != fmt.Sprintf("%+v", w) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// EncodeBadBatchCursor is a batch cursor no store hands out: the right
// format byte before an id that is not UTF-8.
func EncodeBadBatchCursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte{'b', 0xff, 0xfe})
}
