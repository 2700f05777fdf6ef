package reconcile

import "math"

// Stats are the performance statistics of one analyte over n pairs of a
// predicted concentration ŷ_i and the lab's y_i (both in g/L). A
// statistic that is not defined for the pairs is nil, never NaN.
type Stats struct {
	// N is the number of pairs.
	N int
	// RMSEP is the root mean squared error of prediction,
	//
	//	RMSEP = sqrt( Σ (ŷ_i - y_i)² / n ),
	//
	// in g/L, with n in the denominator (not n-1: no parameter is fitted
	// to these pairs). Defined for n >= 1.
	RMSEP *float64
	// Bias is the mean difference, predicted minus lab,
	//
	//	bias = Σ (ŷ_i - y_i) / n,
	//
	// in g/L: positive when the model reads high. Defined for n >= 1.
	Bias *float64
	// Slope b and Intercept a are the ordinary least-squares fit of lab
	// on predicted, y = a + b·ŷ:
	//
	//	b = Σ (ŷ_i - mean(ŷ))(y_i - mean(y)) / Σ (ŷ_i - mean(ŷ))²
	//	a = mean(y) - b·mean(ŷ)
	//
	// A model that is right on average has b = 1 and a = 0. Defined for
	// n >= 2 with predictions that are not all equal; nil otherwise.
	Slope, Intercept *float64
}

// Statistics computes Stats over the pairs (predicted[i], lab[i]). It
// panics if the slices differ in length.
//
// RMSEP and bias follow Næs, Isaksson, Fearn and Davies, A User-Friendly
// Guide to Multivariate Calibration and Classification (2002), chapter on
// validation; the regression is the textbook one (Draper and Smith,
// Applied Regression Analysis, 3rd ed., 1998, ch. 1).
//
// Numerics: means are two-pass with the correction term of Chan, Golub
// and LeVeque, "Algorithms for computing the sample variance" (1983)
// (the mean is refined by the mean of the residuals from the first
// estimate), and the regression uses sums of centred products, so an
// offset common to all values (concentrations near 200 g/L that differ in
// the fifth digit) costs no accuracy. RMSEP sums squares scaled by the
// largest |ŷ_i - y_i|, so it neither overflows nor underflows.
//
// Pairs whose prediction or lab value is not finite are left out, as if
// absent.
func Statistics(predicted, lab []float64) Stats {
	if len(predicted) != len(lab) {
		panic("reconcile: Statistics of slices of different lengths")
	}
	x := make([]float64, 0, len(predicted))
	y := make([]float64, 0, len(lab))
	for i := range predicted {
		if finite(predicted[i]) && finite(lab[i]) {
			x = append(x, predicted[i])
			y = append(y, lab[i])
		}
	}
	s := Stats{N: len(x)}
	if s.N == 0 {
		return s
	}
	d := make([]float64, s.N)
	for i := range x {
		d[i] = x[i] - y[i]
	}
	s.Bias = present(mean(d))
	s.RMSEP = present(rootMeanSquare(d))
	s.Slope, s.Intercept = leastSquares(x, y)
	return s
}

// mean is Σ x_i / n, refined by a second pass: m = m₀ + Σ (x_i - m₀) / n.
func mean(x []float64) float64 {
	n := float64(len(x))
	var sum float64
	for _, v := range x {
		sum += v
	}
	m := sum / n
	var corr float64
	for _, v := range x {
		corr += v - m
	}
	return m + corr/n
}

// rootMeanSquare is sqrt(Σ d_i² / n), computed as
// s·sqrt(Σ (d_i/s)² / n) with s = max |d_i|.
func rootMeanSquare(d []float64) float64 {
	var scale float64
	for _, v := range d {
		scale = math.Max(scale, math.Abs(v))
	}
	if scale == 0 {
		return 0
	}
	var sum float64
	for _, v := range d {
		r := v / scale
		sum += r * r
	}
	return scale * math.Sqrt(sum/float64(len(d)))
}

// leastSquares fits y = a + b·x by ordinary least squares with centred
// sums. It returns nil, nil when the fit is not defined: fewer than two
// points, all x equal (checked exactly, not through a sum that rounding
// may leave slightly above zero), or sums too large for float64.
func leastSquares(x, y []float64) (slope, intercept *float64) {
	if len(x) < 2 || allEqual(x) {
		return nil, nil
	}
	mx, my := mean(x), mean(y)
	var sxx, sxy float64
	for i := range x {
		dx := x[i] - mx
		sxx += dx * dx
		sxy += dx * (y[i] - my)
	}
	if !finite(sxx) || !finite(sxy) || sxx == 0 {
		return nil, nil
	}
	b := sxy / sxx
	a := my - b*mx
	if !finite(a) || !finite(b) {
		return nil, nil
	}
	return &b, &a
}

func allEqual(x []float64) bool {
	for _, v := range x[1:] {
		if v != x[0] {
			return false
		}
	}
	return true
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// present returns &x, or nil if x is not finite.
func present(x float64) *float64 {
	if !finite(x) {
		return nil
	}
	return &x
}
