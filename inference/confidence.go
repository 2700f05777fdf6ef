package inference

import "math"

// Confidence of one prediction, per target k, in [0,1]:
//
//	confidence_k = p_k * D
//
// (a) Prediction uncertainty relative to the tolerance, p_k. The error of
// the prediction of target k is taken as normal with zero mean and a
// sample-specific standard deviation
//
//	sigma_k(x) = RMSECV_k * sqrt((1 + h(x)) / (1 + h̄)),   h̄ = (a+1)/n
//
// where h(x) = 1/n + T2(x)/(n-1) is the leverage of the spectrum. RMSECV_k
// estimates the error at the average calibration leverage h̄; the factor
// sqrt(1+h) is the usual leverage inflation of the prediction error of a
// new sample (ASTM E1655-17, section on prediction uncertainty; Faber &
// Kowalski, J. Chemometrics 11 (1997) 181-238; Höskuldsson, Prediction
// Methods in Science and Technology, 1996). Then
//
//	p_k = P(|error| <= tol_k) = erf(tol_k / (sqrt(2) sigma_k))
//
// so p_k is the probability that the prediction lies within tol_k of the
// truth, and the mean of p_k over a test set is the expected fraction of
// predictions within tolerance (the coverage) when RMSECV is a fair
// estimate and the errors are roughly normal.
//
// (b) Domain factor D, from r = max(ReducedT2, ReducedQ, ReducedScale)
// (the statistics available for the model; ReducedScale, the scale check
// of scalecheck.go, says whether the Raman intensity agrees with the
// predicted composition: it catches a laser-power change, which T2 and Q
// miss when the calibration saw a few per cent of drift):
//
//	D = 1                              if r <= 1
//	D = exp(-((r - 1) / 1.25)^2)       if r > 1
//
// Inside both 95 % limits the model is applied as calibrated (D = 1).
// Beyond them D falls smoothly: 0.97 at r = 1.2, 0.85 at 1.5, 0.53 at 2 and
// 0.077 at 3, so a spectrum at three times a limit gets confidence < 0.1
// whatever p_k is. The decay is gentle just above 1 because about 5 % of
// in-domain spectra exceed a 95 % limit by chance and their predictions are
// as good as the others; it is a heuristic penalty, not a probability.
//
// Missing information:
//   - RMSECV_k unknown (NaN; e.g. imported scikit-learn files): p_k is not
//     computed and confidence_k = D, which then only says whether the
//     spectrum lies inside the calibration domain.
//   - Leverage unknown (no T2: no scores or calibration size): h = h̄, i.e.
//     sigma_k = RMSECV_k.
//   - None of T2, a Q limit or a scale check available: D = 1.
//   - Nothing available (no RMSECV_k and no T2/Q limit/scale check):
//     confidence_k is unknown and left out of the reply (Valid false).
//
// Tolerance tol_k: PLSParams.Tolerance (stored with the model), else
// ModelOptions.Tolerance (server configuration), else DefaultTolerance.

// domainWidth is the width of the decay of D beyond the limits; chosen so
// that D(3) = exp(-(2/1.25)^2) = 0.077 < 0.1.
const domainWidth = 1.25

// domainFactor returns D for the larger reduced statistic r.
func domainFactor(r float64) float64 {
	if !(r > 1) { // also NaN, which cannot occur for finite inputs
		if math.IsNaN(r) {
			return 0
		}
		return 1
	}
	z := (r - 1) / domainWidth
	return math.Exp(-z * z)
}

// withinToleranceProbability returns erf(tol / (sqrt(2) sigma)), the
// probability that a zero-mean normal error with standard deviation sigma
// is at most tol in magnitude. sigma == 0 gives 1.
func withinToleranceProbability(tol, sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	return math.Erf(tol / (math.Sqrt2 * sigma))
}
