package inference

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// DiagnosticsAlpha is the significance level of the T2 and Q limits: the
// limits are 95 % quantiles of the in-control distribution.
const DiagnosticsAlpha = 0.05

// HotellingT2Limit returns the (1-alpha) limit of Hotelling's T2 for a new
// observation (one not used to build the model) with a latent components
// and n calibration samples:
//
//	T2_lim = a (n^2 - 1) / (n (n - a)) * F_{1-alpha}(a, n - a)
//
// References: Tracy, Young & Mason, "Multivariate control charts for
// individual observations", J. Quality Technology 24 (1992) 88-95;
// Nomikos & MacGregor, "Multivariate SPC charts for monitoring batch
// processes", Technometrics 37 (1995) 41-59.
func HotellingT2Limit(a, n int, alpha float64) (float64, error) {
	if a < 1 || n <= a {
		return 0, fmt.Errorf("T2 limit needs n > a >= 1 (a=%d, n=%d)", a, n)
	}
	if !(alpha > 0 && alpha < 1) {
		return 0, fmt.Errorf("T2 limit: alpha %v outside (0,1)", alpha)
	}
	fa, fn := float64(a), float64(n)
	f := distuv.F{D1: fa, D2: fn - fa}.Quantile(1 - alpha)
	lim := fa * (fn*fn - 1) / (fn * (fn - fa)) * f
	if !(lim > 0) || math.IsInf(lim, 0) {
		return 0, fmt.Errorf("T2 limit not finite (a=%d, n=%d)", a, n)
	}
	return lim, nil
}

// BoxQLimit returns the (1-alpha) limit of the squared prediction error Q
// from calibration Q values, by Box's approximation of a quadratic form by a
// scaled chi-square: Q ~ g chi2(h) with g and h matched to the sample mean m
// and variance v (ddof 1) of the calibration Q:
//
//	g = v / (2 m),  h = 2 m^2 / v,  Q_lim = g chi2_{1-alpha}(h)
//
// References: Box, "Some theorems on quadratic forms applied in the study of
// analysis of variance problems I", Ann. Math. Statist. 25 (1954) 290-302;
// Nomikos & MacGregor (1995), section 4.
//
// It fails when fewer than two values are given or when they have zero mean
// or zero spread (no distribution to fit).
func BoxQLimit(calibrationQ []float64, alpha float64) (float64, error) {
	n := len(calibrationQ)
	if n < 2 {
		return 0, fmt.Errorf("Q limit needs at least 2 calibration Q values, have %d", n)
	}
	if !(alpha > 0 && alpha < 1) {
		return 0, fmt.Errorf("Q limit: alpha %v outside (0,1)", alpha)
	}
	var mean float64
	for _, q := range calibrationQ {
		mean += q
	}
	mean /= float64(n)
	var ss float64
	for _, q := range calibrationQ {
		d := q - mean
		ss += d * d
	}
	variance := ss / float64(n-1)
	if !(mean > 0) || !(variance > 0) || math.IsInf(mean, 0) || math.IsInf(variance, 0) {
		return 0, fmt.Errorf("Q limit: calibration Q has mean %v and variance %v; need both > 0", mean, variance)
	}
	g := variance / (2 * mean)
	h := 2 * mean * mean / variance
	lim := g * chiSquareQuantile(h, 1-alpha)
	if !(lim > 0) || math.IsInf(lim, 0) {
		return 0, fmt.Errorf("Q limit not finite (g=%v, h=%v)", g, h)
	}
	return lim, nil
}

// chiSquareQuantile returns the p quantile of chi2 with k degrees of freedom.
// For very large k (tightly clustered calibration Q) the incomplete-gamma
// inversion is slow and loses accuracy; the Wilson-Hilferty cube-root
// normal approximation (Wilson & Hilferty, PNAS 17 (1931) 684-688) is then
// exact to far better than the limit's own sampling error:
//
//	chi2_p(k) ≈ k (1 - 2/(9k) + z_p sqrt(2/(9k)))^3
func chiSquareQuantile(k, p float64) float64 {
	if k > 1e5 {
		z := distuv.UnitNormal.Quantile(p)
		c := 2 / (9 * k)
		v := 1 - c + z*math.Sqrt(c)
		return k * v * v * v
	}
	return distuv.ChiSquared{K: k}.Quantile(p)
}

// meanCalibrationLeverage is the average leverage of the calibration
// samples, h̄ = 1/n + mean(T2)/(n-1) = (a+1)/n, because with score
// variances computed with ddof 1 the calibration T2 values sum to a(n-1).
func meanCalibrationLeverage(a, n int) float64 {
	return float64(a+1) / float64(n)
}
