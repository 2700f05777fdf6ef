package inference

import "gonum.org/v1/gonum/mat"

// PLSParams is the plain data from which a PLS model is built, whether it
// was trained by package trainer, read from our .npz artifact, or imported
// from a scikit-learn file. NewPLSModel checks dimensions and precomputes
// what the hot path needs.
//
// Notation: p features (wavenumbers), a latent components, q targets.
// A spectrum x (length p) is preprocessed as xs = (x - XMean) / XScale
// (element-wise; XScale is all ones for a mean-centred model).
// The prediction is y = xs @ Coef + Intercept.
type PLSParams struct {
	Meta    Metadata  // Version, Algorithm, TrainedAt, ... ; Meta.Wavenumbers has length p
	Targets []Analyte // length q (1 or 3), output order of Coef's columns

	XMean  []float64  // p
	XScale []float64  // p, all > 0
	Coef   *mat.Dense // p x q, in target units per scaled x unit
	// Intercept (q) is added after the product; for scikit-learn this is y_mean.
	Intercept []float64

	// Optional diagnostics. Rotations nil means no T2 and no Q.
	Rotations *mat.Dense // p x a: scores t = xs @ Rotations (x_rotations_)
	Loadings  *mat.Dense // p x a: reconstruction xs ≈ t @ Loadings' (x_loadings_)
	// ScoreVariance (a) is the variance (ddof 1) of each calibration score.
	ScoreVariance []float64
	// NCalibration is the number of calibration samples n (needed for the
	// T2 limit and leverage).
	NCalibration int
	// CalibrationQ are Q values of the calibration samples (for Box's
	// approximation of the Q limit); nil when unknown.
	CalibrationQ []float64
	// RMSECV (q) is the cross-validated RMSE per target, used for the
	// prediction uncertainty in the confidence; NaN or nil when unknown.
	RMSECV []float64
	// Tolerance (q) is the acceptable absolute error per target in g/L;
	// nil means the server default.
	Tolerance []float64
}
