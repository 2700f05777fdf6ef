package jobs

import (
	"encoding/json"
	"fmt"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
)

// TestOutliersCappedMostExtremeFirst: 1500 rows beyond a limit give a
// record of MaxOutliers, the most extreme first, and the total; reasons
// follow the limits; rows inside every limit are not listed.
func TestOutliersCappedMostExtremeFirst(t *testing.T) {
	const n = 1600
	r := &inference.Review{T2Limit: 10, QLimit: 2, StudentizedResiduals: mat.NewDense(n, 3, nil)}
	for i := 0; i < n; i++ {
		r.ScanIDs = append(r.ScanIDs, fmt.Sprintf("s-%04d", i))
		t2, q := 1.0, 1.0
		switch {
		case i < 500:
			t2 = 11 + float64(i) // reduced T2 1.1 .. 51
		case i < 1000:
			q = 2.01 + float64(i-500)/100 // reduced Q 1.005 .. 3.5
		case i < 1500:
			r.StudentizedResiduals.Set(i, 1, -3.001-float64(i-1000)/1000) // 3.001 .. 3.5
		}
		r.T2, r.Q = append(r.T2, t2), append(r.Q, q)
	}
	p := &inference.PLSParams{Targets: []inference.Analyte{inference.EPA, inference.DHA, inference.DPA}, Review: r}
	rev := newReview(p)
	if rev.OutliersTotal != 1500 || len(rev.Outliers) != MaxOutliers {
		t.Fatalf("%d listed of %d", len(rev.Outliers), rev.OutliersTotal)
	}
	if first := rev.Outliers[0]; first.ScanID != "s-0499" || len(first.Reasons) != 1 || first.Reasons[0] != ReasonT2 || first.ReducedT2 != 51 {
		t.Errorf("first %+v", first)
	}
	for k := 1; k < len(rev.Outliers); k++ {
		if rev.Outliers[k].extremity > rev.Outliers[k-1].extremity {
			t.Fatalf("outlier %d more extreme than %d", k, k-1)
		}
	}
	seen := map[string]bool{}
	for _, o := range rev.Outliers {
		seen[o.Reasons[0]] = true
	}
	if !seen[ReasonT2] || !seen[ReasonQ] || !seen[ReasonLabelResidual] {
		t.Errorf("reasons listed: %v", seen)
	}
	// The record stays bounded: about 200 bytes an outlier here.
	b, _ := json.Marshal(rev)
	if len(b) > MaxOutliers*400 {
		t.Errorf("review is %d bytes", len(b))
	}
}
