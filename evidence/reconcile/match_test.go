package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

// TestPostMatchesScenario: every record of the scenario's file matches
// the spectrum it was built for, and the two others get their reasons.
func TestPostMatchesScenario(t *testing.T) {
	s := newScenario(3, 0)
	store := &reconcile.MemoryStore{}
	rec, err := reconcile.New(loggedPredictions(t, s.preds), store, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	records, err := reconcile.ParseCSV(bytes.NewReader(s.csv))
	if err != nil {
		t.Fatal(err)
	}
	res, err := rec.Post(context.Background(), records)
	if err != nil {
		t.Fatal(err)
	}
	if res.Matched != len(s.matched) || res.Replaced != 0 {
		t.Errorf("matched %d, replaced %d; want %d, 0", res.Matched, res.Replaced, len(s.matched))
	}
	var unmatched []reconcile.Unmatched
	for i, id := range s.order {
		if reason, ok := s.unmatched[id]; ok {
			unmatched = append(unmatched, reconcile.Unmatched{Index: i, LabSampleID: id, Reason: reconcile.Reason(reason)})
		}
	}
	if !slices.Equal(res.Unmatched, unmatched) {
		t.Errorf("unmatched %+v, want %+v", res.Unmatched, unmatched)
	}
	stored, err := store.Range(context.Background(), time.Time{}, time.Time{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(s.matched) {
		t.Fatalf("%d results in range, want %d", len(stored), len(s.matched))
	}
	for _, r := range stored {
		if want := s.matched[r.LabSampleID]; r.PredictionID != want {
			t.Errorf("%s matched spectrum %s, want %s", r.LabSampleID, r.PredictionID, want)
		}
	}
}

// TestRepostIsIdempotent is the "idempotent lab posts": posting
// the same lab file twice leaves every n unchanged, and the second post
// reports each of its records as replacing the first's. A corrected
// value in a third post replaces the first without adding a pair.
func TestRepostIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s := newScenario(11, 0)
	rec, err := reconcile.New(loggedPredictions(t, s.preds), &reconcile.MemoryStore{}, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	post := func(file []byte) reconcile.PostResult {
		records, err := reconcile.ParseCSV(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		res, err := rec.Post(ctx, records)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ns := func() []int {
		rep, err := rec.Performance(ctx, "v1", time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var n []int
		for _, vs := range append([]reconcile.VersionStats{rep.Version}, rep.Others...) {
			for _, a := range vs.Analytes {
				n = append(n, a.N)
			}
		}
		return append(n, rep.Samples)
	}
	post(s.csv)
	first := ns()
	second := post(s.csv)
	if got := ns(); !slices.Equal(got, first) {
		t.Fatalf("n after the second post %v, after the first %v", got, first)
	}
	if second.Replaced != len(s.order) || second.Matched != len(s.matched) {
		t.Errorf("second post: replaced %d, matched %d; want %d, %d", second.Replaced, second.Matched, len(s.order), len(s.matched))
	}
	if first[len(first)-1] != len(s.matched) {
		t.Errorf("%d samples, want %d", first[len(first)-1], len(s.matched))
	}

	// A correction: one record again, its EPA changed, no DHA.
	before, _ := rec.Performance(ctx, "v1", time.Time{}, time.Time{})
	third := post([]byte("lab_sample_id,batch_id,scan_seq,EPA\nL-1-00,B-1,1,999\n"))
	if third.Replaced != 1 || third.Matched != 1 {
		t.Errorf("correction: %+v", third)
	}
	after, _ := rec.Performance(ctx, "v1", time.Time{}, time.Time{})
	if after.Samples != before.Samples || after.Version.Analytes[0].N != before.Version.Analytes[0].N {
		t.Errorf("correction changed n: %d/%d -> %d/%d", before.Samples, before.Version.Analytes[0].N, after.Samples, after.Version.Analytes[0].N)
	}
	if after.Version.Analytes[1].N != before.Version.Analytes[1].N-1 {
		t.Errorf("DHA n %d after a correction without DHA, before %d", after.Version.Analytes[1].N, before.Version.Analytes[1].N)
	}
	if *after.Version.Analytes[0].Bias >= *before.Version.Analytes[0].Bias {
		t.Errorf("EPA bias %v did not fall when a lab EPA rose to 999 (before %v)", *after.Version.Analytes[0].Bias, *before.Version.Analytes[0].Bias)
	}
}

// spectrum is an active prediction of batch at a time, with a scan_seq.
func spectrum(batch string, seq float64, at time.Time) *predlog.Record {
	return &predlog.Record{PredictionID: predlog.NewPredictionID(), Time: at,
		ScanContext: inference.ScanContext{BatchID: batch, HasBatchID: true, ScanSeq: seq, HasScanSeq: true}, ModelVersion: "v1", Role: predlog.RoleActive, Concentrations: breakdown(1, 1, 1)}
}

// A re-post that no longer matches replaces the earlier match: the
// result leaves the statistics.
func TestRepostUnmatchedReplacesMatch(t *testing.T) {
	ctx := context.Background()
	log := loggedPredictions(t, []*predlog.Record{spectrum("B", 5, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	store := &reconcile.MemoryStore{}
	rec, _ := reconcile.New(log, store, reconcile.Options{})
	post := func(r reconcile.LabRecord) reconcile.PostResult {
		res, err := rec.Post(ctx, []reconcile.LabRecord{r})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	post(reconcile.LabRecord{BatchID: "B", ScanSeq: 5, HasScanSeq: true, Lab: breakdown(11, -1, -1), LabSampleID: "S"})
	if got, _ := store.Range(ctx, time.Time{}, time.Time{}, 1000); len(got) != 1 {
		t.Fatalf("%d results, want 1", len(got))
	}
	res := post(reconcile.LabRecord{BatchID: "B", ScanSeq: 6, HasScanSeq: true, Lab: breakdown(11, -1, -1), LabSampleID: "S"})
	if res.Replaced != 1 || len(res.Unmatched) != 1 || res.Unmatched[0].Reason != reconcile.ReasonNoPredictionForScanSeq {
		t.Errorf("%+v", res)
	}
	if got, _ := store.Range(ctx, time.Time{}, time.Time{}, 1000); len(got) != 0 {
		t.Fatalf("%d results after the unmatched re-post, want 0", len(got))
	}
}

// TestNearestEdges, against the real log: the window's bounds are
// inclusive on both sides; of two spectra equally far before and after,
// the earlier wins; a nearer one wins whatever its side; records of
// another batch never match.
func TestNearestEdges(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const w = 60 * time.Second
	for _, tc := range []struct {
		name    string
		spectra []*predlog.Record
		want    int // index in spectra, -1: unmatched
		reason  reconcile.Reason
	}{
		{"exactly one window before", []*predlog.Record{spectrum("B", 1, t0.Add(-w))}, 0, ""},
		{"exactly one window after", []*predlog.Record{spectrum("B", 1, t0.Add(w))}, 0, ""},
		{"a nanosecond beyond, before", []*predlog.Record{spectrum("B", 1, t0.Add(-w-1))}, -1, reconcile.ReasonNoneWithinWindow},
		{"a nanosecond beyond, after", []*predlog.Record{spectrum("B", 1, t0.Add(w+1))}, -1, reconcile.ReasonNoneWithinWindow},
		{"tie before and after: the earlier", []*predlog.Record{spectrum("B", 2, t0.Add(10*time.Second)), spectrum("B", 1, t0.Add(-10*time.Second))}, 1, ""},
		{"nearer after beats farther before", []*predlog.Record{spectrum("B", 1, t0.Add(-10*time.Second)), spectrum("B", 2, t0.Add(9*time.Second))}, 1, ""},
		{"at the instant", []*predlog.Record{spectrum("B", 1, t0.Add(-time.Second)), spectrum("B", 2, t0)}, 1, ""},
		{"another batch", []*predlog.Record{spectrum("C", 1, t0)}, -1, reconcile.ReasonUnknownBatch},
		{"batch known, other times", []*predlog.Record{spectrum("B", 1, t0.Add(-time.Hour)), spectrum("C", 2, t0)}, -1, reconcile.ReasonNoneWithinWindow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &reconcile.MemoryStore{}
			rec, err := reconcile.New(loggedPredictions(t, tc.spectra), store, reconcile.Options{MatchWindow: w})
			if err != nil {
				t.Fatal(err)
			}
			res, err := rec.Post(ctx, []reconcile.LabRecord{{BatchID: "B", SampledAt: t0, Lab: breakdown(1, -1, -1), LabSampleID: "S"}})
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := store.Range(ctx, time.Time{}, time.Time{}, 1000)
			switch {
			case tc.want < 0 && (res.Matched != 0 || len(res.Unmatched) != 1 || res.Unmatched[0].Reason != tc.reason):
				t.Errorf("%+v, want unmatched for %s", res, tc.reason)
			case tc.want >= 0 && (len(stored) != 1 || stored[0].PredictionID != tc.spectra[tc.want].PredictionID):
				t.Errorf("stored %+v, want spectrum %d", stored, tc.want)
			}
		})
	}
}

// TestScanSeqEdges, against the real log: scan_seq takes precedence over
// sampled_at; a scan_seq of another batch does not match; a scan_seq the
// rig reused matches its latest spectrum; an unknown batch is told apart.
func TestScanSeqEdges(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	spectra := []*predlog.Record{
		spectrum("B", 10, t0),
		spectrum("B", 11, t0.Add(time.Hour)),
		spectrum("C", 12, t0),
		spectrum("B", 20, t0),
		spectrum("B", 20, t0.Add(time.Minute)),
	}
	store := &reconcile.MemoryStore{}
	rec, _ := reconcile.New(loggedPredictions(t, spectra), store, reconcile.Options{})
	res, err := rec.Post(ctx, []reconcile.LabRecord{
		{BatchID: "B", ScanSeq: 11, HasScanSeq: true, SampledAt: t0, Lab: breakdown(1, -1, -1), LabSampleID: "by-seq"},
		{BatchID: "B", ScanSeq: 12, HasScanSeq: true, Lab: breakdown(1, -1, -1), LabSampleID: "other-batch-seq"},
		{BatchID: "B", ScanSeq: 20, HasScanSeq: true, Lab: breakdown(1, -1, -1), LabSampleID: "reused"},
		{BatchID: "Z", ScanSeq: 10, HasScanSeq: true, Lab: breakdown(1, -1, -1), LabSampleID: "unknown"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []reconcile.Unmatched{
		{Index: 1, LabSampleID: "other-batch-seq", Reason: reconcile.ReasonNoPredictionForScanSeq},
		{Index: 3, LabSampleID: "unknown", Reason: reconcile.ReasonUnknownBatch},
	}
	if res.Matched != 2 || !slices.Equal(res.Unmatched, want) {
		t.Errorf("%+v, want 2 matched and %+v", res, want)
	}
	stored, _ := store.Range(ctx, time.Time{}, time.Time{}, 1000)
	got := map[string]predlog.PredictionID{}
	for _, r := range stored {
		got[r.LabSampleID] = r.PredictionID
	}
	if got["by-seq"] != spectra[1].PredictionID || got["reused"] != spectra[4].PredictionID {
		t.Errorf("stored %+v", stored)
	}
}

// TestRangeIsHalfOpen: Performance counts spectra logged in
// [since, until).
func TestRangeIsHalfOpen(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var spectra []*predlog.Record
	var records []reconcile.LabRecord
	for i := range 3 {
		spectra = append(spectra, spectrum("B", float64(i), t0.Add(time.Duration(i)*time.Hour)))
		records = append(records, reconcile.LabRecord{BatchID: "B", ScanSeq: int64(i), HasScanSeq: true, Lab: breakdown(2, -1, -1), LabSampleID: string(rune('a' + i))})
	}
	rec, _ := reconcile.New(loggedPredictions(t, spectra), &reconcile.MemoryStore{}, reconcile.Options{})
	if _, err := rec.Post(ctx, records); err != nil {
		t.Fatal(err)
	}
	rep, err := rec.Performance(ctx, "v1", t0, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Samples != 2 {
		t.Errorf("%d samples in [t0, t0+2h), want 2", rep.Samples)
	}
}

func TestNewRefusesWindows(t *testing.T) {
	log := loggedPredictions(t, nil)
	for _, w := range []time.Duration{-time.Second, reconcile.MaxMatchWindow + 1} {
		if _, err := reconcile.New(log, &reconcile.MemoryStore{}, reconcile.Options{MatchWindow: w}); err == nil {
			t.Errorf("window %v accepted", w)
		}
	}
}

// TestPerformanceRefusesTooManySamples: a range holding more than
// MaxReportSamples matched results is refused before any is read.
func TestPerformanceRefusesTooManySamples(t *testing.T) {
	ctx := context.Background()
	store := &reconcile.MemoryStore{}
	results := make([]reconcile.LabResult, reconcile.MaxReportSamples+1)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range results {
		results[i] = reconcile.LabResult{Matched: true, PredictionID: predlog.NewPredictionID(), SpectrumTime: t0.Add(time.Duration(i) * time.Second)}
		results[i].LabSampleID = strconv.Itoa(i)
	}
	for chunk := range slices.Chunk(results, reconcile.MaxRecords) {
		if _, err := store.Upsert(ctx, chunk); err != nil {
			t.Fatal(err)
		}
	}
	rec, _ := reconcile.New(loggedPredictions(t, nil), store, reconcile.Options{})
	if _, err := rec.Performance(ctx, "v1", time.Time{}, time.Time{}); !errors.Is(err, reconcile.ErrRangeTooLarge) {
		t.Fatalf("error %v, want ErrRangeTooLarge", err)
	}
	// A narrower range is answered.
	rep, err := rec.Performance(ctx, "v1", t0, t0.Add(time.Minute))
	if err != nil || rep.Samples != 0 {
		t.Fatalf("a minute's range: %+v, %v", rep, err)
	}
}
