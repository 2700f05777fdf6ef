package shadow_test

import (
	"math"
	"testing"
	"time"

	"ramanserve/evidence/shadow"
)

// TestMergeIsTheComparisonOfAllSpectra: merging two replicas' comparisons
// of disjoint spectra gives what one scorer of all of them gives: counts
// add, the mean and the share are weighted by the counts, the RMSD
// combines through the mean squares; another version is left out.
func TestMergeIsTheComparisonOfAllSpectra(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// Replica a saw d = 1, 3 (EPA); replica b saw d = -2.
	a := shadow.Status{Version: "v2", Since: t0.Add(time.Minute), Comparison: shadow.Comparison{N: 2, Dropped: 1}}
	a.Comparison.Analytes[0] = shadow.AnalyteComparison{N: 2, MeanDifference: 2, RMSD: math.Sqrt(5), DisagreeShare: 0.5, Tolerance: 1}
	b := shadow.Status{Version: "v2", Since: t0, Comparison: shadow.Comparison{N: 1, Failed: 2}}
	b.Comparison.Analytes[0] = shadow.AnalyteComparison{N: 1, MeanDifference: -2, RMSD: 2, DisagreeShare: 1, Tolerance: 1}
	other := shadow.Status{Version: "v9", Comparison: shadow.Comparison{N: 100}}
	m := shadow.Merge(a, b, other)
	e := m.Comparison.Analytes[0]
	want := shadow.AnalyteComparison{N: 3, MeanDifference: 2.0 / 3, RMSD: math.Sqrt(14.0 / 3), DisagreeShare: 2.0 / 3, Tolerance: 1}
	if m.Version != "v2" || !m.Since.Equal(t0) || m.Comparison.N != 3 || m.Comparison.Dropped != 1 || m.Comparison.Failed != 2 {
		t.Fatalf("merged: %+v", m)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"mean", e.MeanDifference, want.MeanDifference}, {"rmsd", e.RMSD, want.RMSD}, {"share", e.DisagreeShare, want.DisagreeShare}} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s %v, want %v", c.name, c.got, c.want)
		}
	}
	if e.N != 3 || e.Tolerance != 1 || m.Comparison.Analytes[1].N != 0 {
		t.Fatalf("merged analytes: %+v", m.Comparison.Analytes)
	}
}
