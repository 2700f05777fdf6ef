package inference

import (
	"fmt"
	"math"
	"slices"

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

// HeldOutLimit returns the (1-alpha) limit of a statistic (T2 or Q) for a
// new spectrum from the statistic's held-out values (PLSParams.HeldOutT2,
// HeldOutQ: each calibration sample's value under the cross-validation
// model fitted without it). The limit is the k-th smallest of the n values,
//
//	k = ceil((1 - alpha) (n + 1)),
//
// the conformal quantile: a new value exchangeable with the n held-out
// ones exceeds it with probability at most alpha, whatever their
// distribution (Vovk, Gammerman & Shafer, Algorithmic Learning in a Random
// World, Springer 2005, ch. 2; Lei, G'Sell, Rinaldo, Tibshirani &
// Wasserman, "Distribution-free predictive inference for regression",
// J. Amer. Statist. Assoc. 113 (2018) 1094-1111). Values computed by the
// cross-validation models stand in for a new spectrum's under the final
// model as in cross-conformal prediction (Vovk, "Cross-conformal
// predictors", Ann. Math. Artif. Intell. 74 (2015) 9-28; Barber, Candès,
// Ramdas & Tibshirani, "Predictive inference with the jackknife+", Ann.
// Statist. 49 (2021) 486-507): coverage is then close to, not exactly,
// 1 - alpha.
//
// Why not the calibration's own values: the model was fitted to them, so
// their Q is smaller than a new spectrum's, the more so the more
// components. Why no fitted distribution: calibration scores and
// residuals are seldom normal (bounded concentration ranges, baselines,
// a few unusual rows), and the F-based T2 limit and Box's fit of Q then
// miss the 95 % point in either direction. The conformal quantile assumes
// neither. The rate at which new spectra exceed it scatters from one
// calibration to another by at least the scatter of a 95 % quantile
// estimated from n values (a standard deviation of 1.3 % for n = 300).
//
// It fails when k > n (fewer than 19 values for alpha = 0.05: no
// distribution-free limit exists) or when the k-th value is not > 0.
func HeldOutLimit(heldOut []float64, alpha float64) (float64, error) {
	if !(alpha > 0 && alpha < 1) {
		return 0, fmt.Errorf("held-out limit: alpha %v outside (0,1)", alpha)
	}
	n := len(heldOut)
	// The tolerance keeps (1-alpha)(n+1) that is an integer in exact
	// arithmetic from rounding up to the next rank.
	k := int(math.Ceil((1-alpha)*float64(n+1) - 1e-9))
	if k > n {
		return 0, fmt.Errorf("held-out limit needs at least %d values for alpha %v, have %d", minHeldOut(alpha), alpha, n)
	}
	sorted := slices.Clone(heldOut)
	slices.Sort(sorted)
	lim := sorted[k-1]
	if !(lim > 0) || math.IsInf(lim, 0) {
		return 0, fmt.Errorf("held-out limit is %v; need a finite value > 0", lim)
	}
	return lim, nil
}

// minHeldOut is the smallest n for which HeldOutLimit has a rank to
// return: ceil((1-alpha)(n+1)) <= n.
func minHeldOut(alpha float64) int {
	n := 1
	for int(math.Ceil((1-alpha)*float64(n+1)-1e-9)) > n {
		n++
	}
	return n
}

// ModelT2Limit returns the 95 % T2 limit a model of a components and n
// calibration samples uses: HeldOutLimit of its held-out T2 values when
// it has them and they give one, else HotellingT2Limit (the limits of
// models stored without held-out values, such as imported ones).
func ModelT2Limit(a, n int, heldOutT2 []float64) (float64, error) {
	if len(heldOutT2) > 0 {
		if lim, err := HeldOutLimit(heldOutT2, DiagnosticsAlpha); err == nil {
			return lim, nil
		}
	}
	return HotellingT2Limit(a, n, DiagnosticsAlpha)
}

// ModelQLimit returns the 95 % Q limit a model uses: HeldOutLimit of its
// held-out Q values when it has them and they give one, else BoxQLimit of
// its calibration Q values.
func ModelQLimit(calibrationQ, heldOutQ []float64) (float64, error) {
	if len(heldOutQ) > 0 {
		if lim, err := HeldOutLimit(heldOutQ, DiagnosticsAlpha); err == nil {
			return lim, nil
		}
	}
	return BoxQLimit(calibrationQ, DiagnosticsAlpha)
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
