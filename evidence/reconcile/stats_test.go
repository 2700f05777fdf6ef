package reconcile_test

import (
	"math"
	"testing"

	"ramanserve/evidence/reconcile"
)

// TestStatisticsDegenerate: what is not defined is absent, never NaN.
func TestStatisticsDegenerate(t *testing.T) {
	for _, tc := range []struct {
		name           string
		predicted, lab []float64
		n              int
		rmsepBias, fit bool // present?
	}{
		{"no pairs", nil, nil, 0, false, false},
		{"one pair", []float64{2}, []float64{1}, 1, true, false},
		{"equal predictions", []float64{3, 3, 3}, []float64{1, 2, 3}, 3, true, false},
		// 0.1 three times: a mean computed as a sum over n may not equal
		// 0.1, leaving a tiny positive variance and a meaningless slope.
		{"equal predictions that do not sum exactly", []float64{0.1, 0.1, 0.1}, []float64{1, 2, 3}, 3, true, false},
		{"non-finite pairs left out", []float64{1, math.NaN(), math.Inf(1), 2}, []float64{1, 2, 3, math.NaN()}, 1, true, false},
		{"two pairs", []float64{1, 2}, []float64{1, 3}, 2, true, true},
		{"equal lab values fit a flat line", []float64{1, 2, 3}, []float64{5, 5, 5}, 3, true, true},
		{"sums beyond float64", []float64{1e300, -1e300, 1e300}, []float64{0, 1, 2}, 3, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := reconcile.Statistics(tc.predicted, tc.lab)
			if s.N != tc.n {
				t.Errorf("n %d, want %d", s.N, tc.n)
			}
			for _, c := range []struct {
				name string
				p    *float64
				want bool
			}{{"RMSEP", s.RMSEP, tc.rmsepBias}, {"bias", s.Bias, tc.rmsepBias}, {"slope", s.Slope, tc.fit}, {"intercept", s.Intercept, tc.fit}} {
				if (c.p != nil) != c.want {
					t.Errorf("%s present %v, want %v", c.name, c.p != nil, c.want)
				}
				if c.p != nil && (math.IsNaN(*c.p) || math.IsInf(*c.p, 0)) {
					t.Errorf("%s is %v", c.name, *c.p)
				}
			}
		})
	}
}

// TestStatisticsKnown: small cases worked by hand.
func TestStatisticsKnown(t *testing.T) {
	// predicted 1, 3, 5 and lab 0, 4, 2: d = 1, -1, 3, so bias 1 and
	// RMSEP sqrt(11/3); centred, Sxx = 8 and Sxy = 4, so slope 1/2 and
	// intercept 2 - 3/2.
	s := reconcile.Statistics([]float64{1, 3, 5}, []float64{0, 4, 2})
	want := map[string]float64{"RMSEP": math.Sqrt(11.0 / 3), "bias": 1, "slope": 0.5, "intercept": 0.5}
	got := map[string]float64{"RMSEP": *s.RMSEP, "bias": *s.Bias, "slope": *s.Slope, "intercept": *s.Intercept}
	for k, w := range want {
		if math.Abs(got[k]-w) > 1e-15 {
			t.Errorf("%s %.17g, want %.17g", k, got[k], w)
		}
	}
	// RMSEP of differences whose squares overflow float64.
	big := reconcile.Statistics([]float64{3e200, 4e200}, []float64{0, 0})
	if want := math.Sqrt(12.5) * 1e200; math.Abs(*big.RMSEP-want) > 1e-15*want {
		t.Errorf("RMSEP %g, want %g", *big.RMSEP, want)
	}
}
