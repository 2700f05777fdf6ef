// Package review computes the numbers behind a trained model's review at
// the depth of SIMCA's model summary: variable importance (VIP), the
// explained variance of X and Y per component, the cross-validated Q² per
// component count, and each training row's leverage. Everything is derived
// from what the model artifact keeps (inference.PLSParams with its Review:
// rotations, loadings, coefficients, score variances, the calibration Q,
// T2, measured labels and the CV curve), so a review can be computed for
// as long as the version exists, without the training data.
//
// Notation: n training rows, p variables the model uses (the axis points
// inside the regions, after the preprocessing recipe), q analytes, A
// components. X is the preprocessed, centred (and, for an autoscaled
// model, scaled) training matrix; T = X R its scores (R the rotations), P
// its loadings, W its NIPALS weights and C (q x A) the Y loadings in the
// analytes' units.
//
// Why the artifact suffices. The trainer's NIPALS (scikit-learn's, with
// regression deflation) gives orthogonal scores (t_aᵀt_b = 0 for a ≠ b),
// orthonormal weights, an upper unit-triangular PᵀW and R = W (PᵀW)⁻¹, so:
//
//   - t_aᵀt_a = (n - 1) var(t_a), the stored score variance (t_a has mean 0);
//   - PᵀR = I, hence Cᵀ = Pᵀ B for the coefficients B = R Cᵀ;
//   - W is the orthonormal factor of R's QR decomposition (column signs
//     aside, which VIP squares away);
//   - ‖X‖² = Σ_a t_aᵀt_a ‖p_a‖² + Σ_i Q_i, with Q_i the stored calibration
//     Q of row i under the final model (the residual after A components).
package review

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// ErrNoTrainingRecord: the model carries no record of its training
// (imported or adopted models, artifacts written before the review was
// kept), so the figures cannot be computed.
var ErrNoTrainingRecord = errors.New("the model has no training record to review")

// Component holds the figures of the model truncated to Components
// components (1..A).
type Component struct {
	Components int
	// R2X is the share of the total X sum of squares explained by this
	// component alone; R2XCumulative by components 1..Components.
	R2X, R2XCumulative float64
	// R2Y (q) is the cumulative share of each analyte's sum of squares
	// about its mean explained by the fit with 1..Components components.
	R2Y []float64
	// Q2 (q) is 1 - PRESS/SS_Y of the cross-validated predictions with
	// 1..Components components (the trainer's K-fold CV, see Compute);
	// nil when the artifact's CV curve lacks this count.
	Q2 []float64
}

// Figures are the review's numbers for one model.
type Figures struct {
	// Wavenumbers (p) of the variables the model uses, in axis order:
	// the abscissa of VIP.
	Wavenumbers []float64
	// VIP (p): the variable importance in the projection of each variable.
	VIP []float64
	// Components (A): one entry per component of the model.
	Components []Component
	// XWeights and XLoadings (A, each p): component a's NIPALS weights
	// w_a (unit length, signed so that w_aᵀr_a = 1, as the trainer's
	// NIPALS gives them) and X loadings p_a, over Wavenumbers.
	XWeights, XLoadings [][]float64
	// Leverage (n): each training row's leverage, in training order.
	Leverage []float64
	// RMSEC (q): root mean squared error of the calibration fit with A
	// components, sqrt(SS_res/n); RMSECV (q) its cross-validated
	// counterpart, as the artifact records it.
	RMSEC, RMSECV []float64
}

// Compute derives the review's figures from a trained model.
//
// Definitions (a = 1..A, j = 1..p, k = 1..q, i = 1..n):
//
// VIP (Wold, Johansson & Cocchi 1993, "PLS: partial least squares
// projections to latent structures", in 3D QSAR in Drug Design; Chong &
// Jun 2005, Chemometr. Intell. Lab. Syst. 78, 103-112):
//
//	VIP_j = sqrt( p Σ_a SS_a (w_ja/‖w_a‖)² / Σ_a SS_a ),
//	SS_a  = Σ_k (c_ka / s_k)² t_aᵀt_a,
//
// the Y variance explained by component a with every analyte at unit
// variance (s_k: the standard deviation, ddof 1, of analyte k's training
// labels), so that each analyte weighs alike whatever its units or range,
// as SIMCA's default unit-variance Y does; for an autoscaled model c_ka/s_k
// is the fit's own scaled Y loading. Σ_j VIP_j² = p.
//
// R²X_a = t_aᵀt_a ‖p_a‖² / ‖X‖², with ‖X‖² the total sum of squares of X
// as the model sees it (preprocessed, region-selected, centred, and
// scaled when autoscaled); R²X cumulative is Σ_{b≤a} R²X_b.
//
// R²Y_ka = 1 - Σ_i (y_ik - ŷ_ik^(a))² / Σ_i (y_ik - ȳ_k)², ŷ^(a) the fit
// with a components; with orthogonal scores this is Σ_{b≤a} c_kb² t_bᵀt_b
// / SS_Yk, which is how it is computed.
//
// Q²_ka = 1 - PRESS_ka / SS_Yk, PRESS_ka = Σ_i (y_ik - ŷ_ik^(-i,a))² of the
// pooled out-of-fold predictions of the trainer's K-fold cross-validation
// (the folds and segments the review's selection records; each fold
// centred and scaled on its own training rows), SS_Yk about the mean of
// all n labels: the trainer's R2CV.
//
// Leverage, with the intercept's share (the convention of the studentised
// residuals the artifact keeps):
//
//	h_i = 1/n + t_iᵀ (TᵀT)⁻¹ t_i = 1/n + T2_i/(n - 1),
//
// since TᵀT is diagonal with entries (n - 1) var(t_a) and T2_i = Σ_a
// t_ia²/var(t_a).
//
// RMSEC_k = sqrt(SS_Yk (1 - R²Y_kA) / n).
func Compute(params *inference.PLSParams) (*Figures, error) {
	m, err := newModelView(params)
	if err != nil {
		return nil, err
	}
	wavenumbers, err := usedWavenumbers(params)
	if err != nil {
		return nil, err
	}
	if len(wavenumbers) != m.p {
		return nil, fmt.Errorf("%w: %d axis points selected, the model has %d variables", inference.ErrModelCorrupted, len(wavenumbers), m.p)
	}
	labels := labelSums(params.Review.Measured)
	yLoadings := m.yLoadings()
	vip, err := m.vip(yLoadings, labels.sd)
	if err != nil {
		return nil, err
	}
	components, rmsec := m.components(yLoadings, labels, params.Review.CVCurve)
	return &Figures{
		Wavenumbers: wavenumbers,
		VIP:         vip,
		XWeights:    columns(m.signedWeights()),
		XLoadings:   columns(m.loadings),
		Components:  components,
		Leverage:    leverage(params.Review.T2, m.n),
		RMSEC:       rmsec,
		RMSECV:      append([]float64(nil), params.RMSECV...),
	}, nil
}

// modelView is what the computations read from the parameters, with the
// dimensions checked once.
type modelView struct {
	n, p, q, a int
	rotations  *mat.Dense // p x A
	loadings   *mat.Dense // p x A
	coef       *mat.Dense // p x q
	// scoreSS (A) is t_aᵀt_a.
	scoreSS []float64
	// residualSS is Σ_i Q_i after A components.
	residualSS float64
}

func newModelView(params *inference.PLSParams) (*modelView, error) {
	r := params.Review
	if r == nil || r.Measured == nil || params.Rotations == nil || params.Loadings == nil || params.Coef == nil ||
		len(params.ScoreVariance) == 0 || len(params.CalibrationQ) == 0 || len(r.T2) == 0 {
		return nil, ErrNoTrainingRecord
	}
	n, q := r.Measured.Dims()
	p, a := params.Rotations.Dims()
	pc, qc := params.Coef.Dims()
	pl, al := params.Loadings.Dims()
	switch {
	case n < 2:
		return nil, fmt.Errorf("%w: %d training rows", inference.ErrModelCorrupted, n)
	case pc != p || pl != p || al != a || qc != q || len(params.ScoreVariance) != a:
		return nil, fmt.Errorf("%w: rotations %dx%d, loadings %dx%d, coefficients %dx%d, %d score variances, %d analytes",
			inference.ErrModelCorrupted, p, a, pl, al, pc, qc, len(params.ScoreVariance), q)
	case len(params.CalibrationQ) != n || len(r.T2) != n:
		return nil, fmt.Errorf("%w: %d calibration Q and %d T2 for %d training rows", inference.ErrModelCorrupted, len(params.CalibrationQ), len(r.T2), n)
	}
	m := &modelView{n: n, p: p, q: q, a: a, rotations: params.Rotations, loadings: params.Loadings, coef: params.Coef,
		scoreSS: make([]float64, a)}
	for c, v := range params.ScoreVariance {
		m.scoreSS[c] = float64(n-1) * v
	}
	for _, v := range params.CalibrationQ {
		m.residualSS += v
	}
	return m, nil
}

// usedWavenumbers lists the axis points inside the model's regions.
func usedWavenumbers(params *inference.PLSParams) ([]float64, error) {
	axis := params.Meta.Wavenumbers
	idx, err := preprocess.SelectRegions(axis, params.Regions)
	if err != nil {
		return nil, fmt.Errorf("%w: regions: %v", inference.ErrModelCorrupted, err)
	}
	out := make([]float64, len(idx))
	for i, j := range idx {
		out[i] = axis[j]
	}
	return out, nil
}

// labelStats are each analyte's mean-centred sum of squares and standard
// deviation (ddof 1) over the training rows.
type labelStats struct {
	ss, sd []float64
}

func labelSums(measured *mat.Dense) labelStats {
	n, q := measured.Dims()
	s := labelStats{ss: make([]float64, q), sd: make([]float64, q)}
	for k := 0; k < q; k++ {
		col := mat.Col(nil, k, measured)
		mean := 0.0
		for _, v := range col {
			mean += v
		}
		mean /= float64(n)
		for _, v := range col {
			s.ss[k] += (v - mean) * (v - mean)
		}
		s.sd[k] = math.Sqrt(s.ss[k] / float64(n-1))
	}
	return s
}

// yLoadings returns C (q x A) in the analytes' units: Cᵀ = Pᵀ B.
func (m *modelView) yLoadings() *mat.Dense {
	var ct mat.Dense
	ct.Mul(m.loadings.T(), m.coef)
	return mat.DenseCopyOf(ct.T())
}

// weights returns the NIPALS weights W (p x A), up to column signs, as
// the orthonormal factor of R = W (PᵀW)⁻¹.
func (m *modelView) weights() *mat.Dense {
	var qr mat.QR
	qr.Factorize(m.rotations)
	var full mat.Dense
	qr.QTo(&full)
	return mat.DenseCopyOf(full.Slice(0, m.p, 0, m.a))
}

// signedWeights returns W with the signs NIPALS gives: R = W (PᵀW)⁻¹
// with (PᵀW)⁻¹ unit upper triangular makes r_a = w_a + Σ_{b<a} u_ba w_b,
// so w_aᵀr_a = 1 > 0 for orthonormal W; a column of the QR factor with
// w_aᵀr_a < 0 is negated.
func (m *modelView) signedWeights() *mat.Dense {
	W := m.weights()
	for c := 0; c < m.a; c++ {
		if mat.Dot(W.ColView(c), m.rotations.ColView(c)) < 0 {
			for j := 0; j < m.p; j++ {
				W.Set(j, c, -W.At(j, c))
			}
		}
	}
	return W
}

// columns returns the columns of d, each as its own slice.
func columns(d *mat.Dense) [][]float64 {
	_, c := d.Dims()
	out := make([][]float64, c)
	for k := range out {
		out[k] = mat.Col(nil, k, d)
	}
	return out
}

func (m *modelView) vip(yLoadings *mat.Dense, labelSD []float64) ([]float64, error) {
	if m.a > m.p {
		return nil, fmt.Errorf("%w: %d components for %d variables", inference.ErrModelCorrupted, m.a, m.p)
	}
	ssY := make([]float64, m.a)
	total := 0.0
	for c := 0; c < m.a; c++ {
		for k := 0; k < m.q; k++ {
			if labelSD[k] > 0 {
				v := yLoadings.At(k, c) / labelSD[k]
				ssY[c] += v * v * m.scoreSS[c]
			}
		}
		total += ssY[c]
	}
	vip := make([]float64, m.p)
	if !(total > 0) {
		return vip, nil
	}
	W := m.weights()
	norms := make([]float64, m.a)
	for c := range norms {
		norms[c] = mat.Norm(W.ColView(c), 2)
	}
	for j := range vip {
		s := 0.0
		for c := 0; c < m.a; c++ {
			w := W.At(j, c) / norms[c]
			s += ssY[c] * w * w
		}
		vip[j] = math.Sqrt(float64(m.p) * s / total)
	}
	return vip, nil
}

// components returns the per-component table and the RMSEC at A.
func (m *modelView) components(yLoadings *mat.Dense, labels labelStats, curve []inference.CVPoint) ([]Component, []float64) {
	explained := make([]float64, m.a)
	totalX := m.residualSS
	for c := 0; c < m.a; c++ {
		pc := mat.Norm(m.loadings.ColView(c), 2)
		explained[c] = m.scoreSS[c] * pc * pc
		totalX += explained[c]
	}
	out := make([]Component, m.a)
	fittedSS := make([]float64, m.q)
	cumulative := 0.0
	for c := 0; c < m.a; c++ {
		comp := Component{Components: c + 1, R2Y: make([]float64, m.q)}
		if totalX > 0 {
			comp.R2X = explained[c] / totalX
		}
		cumulative += comp.R2X
		comp.R2XCumulative = cumulative
		for k := 0; k < m.q; k++ {
			v := yLoadings.At(k, c)
			fittedSS[k] += v * v * m.scoreSS[c]
			if labels.ss[k] > 0 {
				comp.R2Y[k] = fittedSS[k] / labels.ss[k]
			}
		}
		for _, pt := range curve {
			if pt.Components == c+1 && len(pt.R2CV) == m.q {
				comp.Q2 = append([]float64(nil), pt.R2CV...)
			}
		}
		out[c] = comp
	}
	rmsec := make([]float64, m.q)
	for k := range rmsec {
		rmsec[k] = math.Sqrt(math.Max(labels.ss[k]-fittedSS[k], 0) / float64(m.n))
	}
	return out, rmsec
}

// leverage is h_i = 1/n + T2_i/(n - 1).
func leverage(t2 []float64, n int) []float64 {
	h := make([]float64, len(t2))
	for i, v := range t2 {
		h[i] = 1/float64(n) + v/float64(n-1)
	}
	return h
}
