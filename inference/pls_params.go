package inference

import (
	"gonum.org/v1/gonum/mat"

	"ramanserve/inference/preprocess"
)

// PLSParams is the plain data from which a PLS model is built, whether it
// was trained by package trainer, read from our .npz artifact, or imported
// from a scikit-learn file. NewPLSModel checks dimensions and precomputes
// what the hot path needs.
//
// Notation: p features (wavenumbers), a latent components, q targets.
// A spectrum of the axis's length first goes through Preprocessing, then
// only the points inside Regions are kept: that is x, of length p.
// x is then scaled as xs = (x - XMean) / XScale
// (element-wise; XScale is all ones for a mean-centred model).
// The prediction is y = xs @ Coef + Intercept.
type PLSParams struct {
	// Meta: Version, Algorithm, TrainedAt, ...; Meta.Wavenumbers is the full
	// axis of the spectrum (length p without Regions, longer with them).
	Meta    Metadata
	Targets []Analyte // length q (1 or 3), output order of Coef's columns

	// Preprocessing is applied to each whole spectrum (on the axis
	// Meta.Wavenumbers) before anything else; empty means raw intensities.
	Preprocessing preprocess.Recipe
	// Regions are the inclusive wavenumber ranges whose points enter the
	// model, after Preprocessing; nil means every point of the axis.
	Regions [][2]float64

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
	// CalibrationQ are Q values of the calibration samples under the
	// model itself; nil when unknown. They set the Q limit when HeldOutQ
	// is absent.
	CalibrationQ []float64
	// HeldOutT2 and HeldOutQ (n each) are the cross-validated T2 and Q of
	// the calibration samples: each sample's statistics under the model of
	// the cross-validation fold fitted without it (T2 with that model's
	// score variances). HeldOutQ is on the final model's scale: a sample's
	// Q times the final model's mean calibration Q over its fold model's
	// mean Q of the fold's training rows. They stand for new spectra, and
	// the 95 % limits are their conformal quantiles (HeldOutLimit); nil
	// when unknown (imported models, artifacts written without them), and
	// the limits then come from NCalibration and CalibrationQ.
	HeldOutT2, HeldOutQ []float64
	// RMSECV (q) is the cross-validated RMSE per target, used for the
	// prediction uncertainty in the confidence; NaN or nil when unknown.
	RMSECV []float64
	// Tolerance (q) is the acceptable absolute error per target in g/L;
	// nil means the server default.
	Tolerance []float64
	// ScaleCheck is the calibration's relation between Raman intensity and
	// predicted composition (scalecheck.go); nil when unknown.
	ScaleCheck *ScaleCheck

	// Review is what training learned about the model (for its report);
	// nil for imported and adopted models.
	Review *Review
}

// Review is a trained model's own evidence, kept in its artifact so that
// the report can be rebuilt for as long as the version exists. Rows are
// the n training spectra that entered the model, in CSV order; columns of
// the matrices follow Targets.
type Review struct {
	Selection ComponentSelection
	// CVCurve has one point per component count tried, 1..MaxComponents.
	CVCurve []CVPoint
	// ScanIDs (n) of the rows used.
	ScanIDs []string
	// Measured (n x q) labels and CVPredicted (n x q) out-of-fold
	// predictions at the chosen count.
	Measured, CVPredicted *mat.Dense
	// T2 and Q (n) of each training spectrum under the final model, and
	// the model's 95 % limits.
	T2, Q           []float64
	T2Limit, QLimit float64
	// StudentizedResiduals (n x q): (y - yhat) / (s sqrt(1 - h)) of the
	// final model's calibration fit.
	StudentizedResiduals *mat.Dense
	// Scores (n x a) are the training rows' X scores t = xs Rotations
	// under the final model, for the review's scores plot; nil in files
	// written before they were kept (nothing else derives them: T2 and Q
	// do not determine the scores).
	Scores *mat.Dense
	// RawSpectra ((k+1) x N, N the axis points) are training spectra as
	// they were uploaded, before the recipe, over the whole axis: row 0
	// the mean of the n training rows, then k of the rows themselves,
	// RawSpectraRows (training row numbers), for the review's plot of
	// spectra before and after the recipe. nil in files written before
	// they were kept.
	RawSpectra     *mat.Dense
	RawSpectraRows []int
	// SpikesRepaired counts the points despike steps repaired over all
	// rows; SpectraDespiked the rows with at least one.
	SpikesRepaired, SpectraDespiked int
	// ExcludedScanIDs are TrainingMeta.exclude_scan_ids.
	ExcludedScanIDs []string
}

// Selection rules of ComponentSelection.Rule.
const (
	RuleOneStandardError = "one_standard_error"
	RuleOneSigma         = "onesigma"
	RuleRandomization    = "randomization"
	RuleFixed            = "fixed"
)

// ComponentSelection says how the component count was chosen.
type ComponentSelection struct {
	Components int
	Rule       string // RuleOneStandardError, RuleOneSigma, RuleRandomization or RuleFixed
	// Segments is how rows were assigned to the folds (random,
	// consecutive or interleaved); "" in models trained before it was
	// recorded, which used random segments.
	Segments           string
	MaxComponents      int
	Folds              int
	MinScoreComponents int
}

// CVPoint holds the cross-validated figures of one component count.
type CVPoint struct {
	Components     int
	RMSECV, R2CV   []float64 // per target
	Score, ScoreSE float64
}
