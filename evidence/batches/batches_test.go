package batches

import (
	"math"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
)

var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// trajectory is a batch whose EPA is f(maturity) at the given maturities
// (seconds), T² and Q constant.
func trajectory(id string, at []float64, f func(x float64) float64) Trajectory {
	var recs []predlog.Record
	for _, x := range at {
		r := predlog.Record{Time: t0.Add(time.Duration(x * float64(time.Second))), ModelVersion: "v1", Role: predlog.RoleActive,
			ReducedT2: 0.5, HasReducedT2: true, ReducedQ: 0.25, HasReducedQ: true}
		r.Concentrations.Set(inference.EPA, f(x))
		recs = append(recs, r)
	}
	return FromRecords(id, ByTime, recs, false)
}

func seconds(n int, step float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i) * step
	}
	return out
}

// TestBandsAreMeanAndSDAtAlignedMaturity: three references sampled at
// different times, each a straight line c + x/10, are interpolated onto
// the grid: the band's mean and sample s.d. are those of the three lines
// wherever all three reach, of two beyond the shortest, and absent where
// one alone reaches.
func TestBandsAreMeanAndSDAtAlignedMaturity(t *testing.T) {
	b := NewBandBuilder(ByTime)
	b.Add(trajectory("R1", seconds(11, 10), func(x float64) float64 { return 1 + x/10 })) // 0..100 s
	b.Add(trajectory("R2", seconds(41, 5), func(x float64) float64 { return 2 + x/10 }))  // 0..200 s
	b.Add(trajectory("R3", seconds(31, 10), func(x float64) float64 { return 3 + x/10 })) // 0..300 s
	b.Add(Trajectory{BatchID: "empty"})
	bands := b.Build()
	if len(bands.References) != 3 || len(bands.Grid) != GridPoints || bands.Grid[0] != 0 || bands.Grid[GridPoints-1] != 300 {
		t.Fatalf("bands of %v on a grid of %d from %v to %v", bands.References, len(bands.Grid), bands.Grid[0], bands.Grid[len(bands.Grid)-1])
	}
	for _, c := range []struct {
		x, mean, sd float64
		ok          bool
	}{
		{0, 2, 1, true}, {50, 7, 1, true}, {99, 11.9, 1, true},
		{150, 17.5, math.Sqrt(0.5), true}, {198, 22.3, math.Sqrt(0.5), true},
		{250, 0, 0, false}, {301, 0, 0, false}, {-1, 0, 0, false},
	} {
		mean, sd, ok := bands.At(SeriesEPA, c.x)
		if ok != c.ok || ok && (math.Abs(mean-c.mean) > 1e-9 || math.Abs(sd-c.sd) > 1e-9) {
			t.Errorf("EPA band at %v s: %v ± %v (%v), want %v ± %v (%v)", c.x, mean, sd, ok, c.mean, c.sd, c.ok)
		}
	}
	if _, _, ok := bands.At(SeriesDHA, 50); ok {
		t.Error("a band for DHA, which no reference has")
	}
	if mean, sd, ok := bands.At(SeriesT2, 50); !ok || mean != 0.5 || sd != 0 {
		t.Errorf("T² band at 50 s: %v ± %v (%v), want 0.5 ± 0", mean, sd, ok)
	}
}

// TestJudgeMarksThePointsOutside: a batch that leaves the band half-way
// has exactly its points beyond mean ± 3 s.d. listed, and its points
// beyond the band's range not judged.
func TestJudgeMarksThePointsOutside(t *testing.T) {
	b := NewBandBuilder(ByTime)
	for _, c := range []float64{9, 10, 11} { // mean 10 + x/10, s.d. 1 everywhere
		b.Add(trajectory("R", seconds(21, 10), func(x float64) float64 { return c + x/10 }))
	}
	bands := b.Build()
	// Inside (offset 2.9) up to 100 s, outside (offset 3.5, then -4) after;
	// the last two points lie beyond the references' 200 s.
	batch := trajectory("T", seconds(23, 10), func(x float64) float64 {
		switch {
		case x <= 100:
			return 10 + x/10 + 2.9
		case x <= 150:
			return 10 + x/10 + 3.5
		}
		return 10 + x/10 - 4
	})
	j := Judge(&batch, bands)
	if j.Judged[SeriesEPA] != 21 {
		t.Fatalf("%d points judged, want 21", j.Judged[SeriesEPA])
	}
	want := []int{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if got := j.Outside[SeriesEPA]; len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
		t.Fatalf("outside: %v, want %v", got, want)
	}
	if len(j.Outside[SeriesT2]) != 0 || j.Judged[SeriesT2] != 21 {
		t.Fatalf("T²: %d judged, outside %v", j.Judged[SeriesT2], j.Outside[SeriesT2])
	}
	if got := Judge(&batch, nil); got.Judged[SeriesEPA] != 0 {
		t.Fatal("points judged without bands")
	}
}

// TestScanSeqMaturity: by scan_seq the points are ordered by it, and a
// record without one is counted, not placed.
func TestScanSeqMaturity(t *testing.T) {
	var recs []predlog.Record
	for i, seq := range []float64{7, 5, 6} {
		r := predlog.Record{Time: t0.Add(time.Duration(i) * time.Second), ScanContext: inference.ScanContext{ScanSeq: seq, HasScanSeq: true}}
		r.Concentrations.Set(inference.DHA, seq)
		recs = append(recs, r)
	}
	recs = append(recs, predlog.Record{Time: t0.Add(time.Minute)})
	tr := FromRecords("B", ByScanSeq, recs, true)
	if tr.Unplaced != 1 || !tr.Truncated || len(tr.Points) != 3 || tr.Points[0].Maturity != 5 || tr.Points[2].Maturity != 7 || tr.Points[0].Values[SeriesDHA] != 5 {
		t.Fatalf("trajectory by scan_seq: %+v", tr)
	}
	byTime := FromRecords("B", ByTime, recs, false)
	if byTime.Points[3].Maturity != 60 || !byTime.Start.Equal(t0) {
		t.Fatalf("by time, the last point is at %v s", byTime.Points[3].Maturity)
	}
}

// TestOneReferenceHasNoBand: a standard deviation needs two batches.
func TestOneReferenceHasNoBand(t *testing.T) {
	b := NewBandBuilder(ByTime)
	b.Add(trajectory("R", seconds(5, 1), func(x float64) float64 { return x }))
	bands := b.Build()
	if _, _, ok := bands.At(SeriesEPA, 2); ok {
		t.Fatal("a band of one batch")
	}
	if NewBandBuilder(ByTime).Build() != nil {
		t.Fatal("bands of no batch")
	}
}
