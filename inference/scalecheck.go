package inference

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Scale check: does the spectrum's Raman intensity agree with the
// composition the model predicts from it?
//
// Why T2 and Q are not enough. A change of laser power (or of the
// collection efficiency: a fouled window, a defocused probe) multiplies the
// Raman part of the spectrum, x = L r + b. The scaled spectrum is still a
// mixture of the calibrated components, just of all of them at once (esters
// and solvent scaled by L), so its residual Q stays in control. Its scores
// move along the direction of the mean Raman spectrum, and if the
// calibration already saw a few per cent of drift in that direction, a 15 %
// change adds about (0.15 / drift)^2 to T2, diluted among the a components:
// with 3 % rms drift in calibration and a = 14, a 15 % power loss moves
// reduced T2 from about 0.6 to about 1.5 only. Meanwhile the model, which
// learned to ignore the common drift direction, predicts L c instead of c
// for deviations from the mean composition: an error of (L - 1)(c - c_mean)
// that RMSECV knows nothing about. The confidence would claim the
// calibrated coverage while the observed one falls (the raw model:
// 0.58/0.74/0.90 claimed, 0.53/0.58/0.78 observed).
//
// What the model learns. The intensity of a spectrum's Raman bands,
// measured in a way the smooth fluorescence baseline does not touch,
//
//	s(x) = ln sqrt( sum_{i=1}^{p-1} (x_i - x_{i-1})^2 )
//
// (the log of the norm of its first differences: a band of height h and
// width w points contributes about h^2 / w, a polynomial baseline a few
// counts^2 per point, the noise a few % of the total), is proportional to
// L times a function of the composition; in log form ln L + f(c). Over the
// calibration set the model fits, by ordinary least squares, f linearly in
// its own calibration predictions yhat (q targets):
//
//	s_i = b_0 + sum_k b_k yhat_ik + e_i,   sigma^2 = sum_i e_i^2 / (n - q - 1)
//
// and stores b (ScaleCheck.Intercept, ScaleCheck.Coef) and sigma. At
// predict time, with the spectrum's own prediction yhat,
//
//	z = (s(x) - b_0 - b'yhat) / sigma,   reduced scale = z^2 / chi2_{0.95}(1)
//
// i.e. z^2 over its 95 % limit (3.84) if z is standard normal, as in
// calibration: the reduced statistic has the same meaning as reduced T2
// and Q (above 1: outside the 95 % region) and joins them in the domain
// factor, r = max(ReducedT2, ReducedQ, ReducedScale) (confidence.go). A
// 15 % power loss makes s(x) 0.16 lower while the calibration residual is
// 3 to 4 % (laser drift, solvent ratio, noise); the prediction, biased the
// same way, takes back a little of it, so z is about -4 on average (-2 to
// -6 spectrum by spectrum), and most such spectra get a confidence near 0
// (in TestRobustnessUnderFaults the mean claimed confidence of the raw
// model falls from 0.60/0.75/0.81 with T2 and Q alone to 0.14/0.18/0.19,
// against 0.28/0.48/0.96 observed). A clean spectrum is inside the limit
// 95 % of the time (mean reduced scale 0.24, 1/3.84 expected), which costs
// the clean confidence about 0.01. Fluorescence, smooth, leaves s(x) nearly
// unchanged (its shot noise adds a little), so a stronger baseline is
// judged by T2 and Q alone.
//
// s(x) is computed on the model's input x, after its preprocessing and
// region selection (differences across the gap between two regions are
// included, identically in calibration and at predict time). A recipe that
// normalises the intensity (snv, normalize) takes a power change out of x
// and out of s(x) alike, so such a model, which is not hurt by it, is not
// penalised either. The check costs one pass over the p features (one
// subtraction and one multiply-add per point) and q+1 multiply-adds.
//
// A model without a ScaleCheck (imported models, artifacts written before
// it existed) has no scale statistic, and its domain factor uses T2 and Q
// only.

// ScaleCheck is what the model learned about the Raman intensity of its
// calibration spectra; see the formulas above.
type ScaleCheck struct {
	// Intercept b_0 and Coef b (q, in Targets order) of the fit of s(x)
	// on the calibration predictions.
	Intercept float64
	Coef      []float64
	// Sigma is the residual standard deviation of that fit, > 0.
	Sigma float64
}

// scaleLimit is chi2_{0.95}(1) = 1.959964^2, the 95 % limit of z^2.
const scaleLimit = 3.841458820694124

// scaleStatistic returns s(x) = ln ||diff(x)||; -Inf for a flat x.
func scaleStatistic(x []float64) float64 {
	// Four accumulators: independent dependency chains, about twice as
	// fast as one on a 2048-point spectrum.
	var s0, s1, s2, s3 float64
	i := 1
	for ; i+3 < len(x); i += 4 {
		d0 := x[i] - x[i-1]
		d1 := x[i+1] - x[i]
		d2 := x[i+2] - x[i+1]
		d3 := x[i+3] - x[i+2]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(x); i++ {
		d := x[i] - x[i-1]
		s0 += d * d
	}
	return 0.5 * math.Log((s0+s1)+(s2+s3))
}

// reducedScale returns z^2 / chi2_{0.95}(1) for a statistic s and the
// predictions yhat (in Targets order). A flat input (s = -Inf) gives +Inf.
func (c *ScaleCheck) reducedScale(s float64, yhat []float64) float64 {
	expected := c.Intercept
	for k, b := range c.Coef {
		expected += b * yhat[k]
	}
	z := (s - expected) / c.Sigma
	return z * z / scaleLimit
}

// scaledStatistic returns s(x) from the centred and scaled input xs
// that the hot path already has (x itself is never formed when regions
// are gathered): x_i - x_{i-1} = xs_i c_i - xs_{i-1} c_{i-1} + (m_i -
// m_{i-1}) with m = XMean and c = XScale, the mean's differences
// precomputed in m.meanDiff. Same value as scaleStatistic(x) up to
// rounding.
func (m *PLSModel) scaledStatistic(xs []float64) float64 {
	md := m.meanDiff[:len(xs)]
	var s0, s1 float64
	if m.unitScale {
		// Four accumulators and the previous value carried in a
		// register: independent chains, one load of xs per point.
		var s2, s3 float64
		n := len(xs)
		i := 1
		if n > 0 {
			prev := xs[0]
			for ; i+3 < n; i += 4 {
				v := xs[i : i+4 : i+4]
				d := md[i : i+4 : i+4]
				d0 := v[0] - prev + d[0]
				d1 := v[1] - v[0] + d[1]
				d2 := v[2] - v[1] + d[2]
				d3 := v[3] - v[2] + d[3]
				s0 += d0 * d0
				s1 += d1 * d1
				s2 += d2 * d2
				s3 += d3 * d3
				prev = v[3]
			}
		}
		for ; i < n; i++ {
			d := xs[i] - xs[i-1] + md[i]
			s0 += d * d
		}
		return 0.5 * math.Log((s0+s1)+(s2+s3))
	}
	c := m.xScale[:len(xs)]
	for i := 1; i < len(xs); i++ {
		d := xs[i]*c[i] - xs[i-1]*c[i-1] + md[i]
		s0 += d * d
	}
	return 0.5 * math.Log(s0)
}

// meanDifferences returns m_i - m_{i-1} (0 at i = 0).
func meanDifferences(mean []float64) []float64 {
	d := make([]float64, len(mean))
	for i := 1; i < len(mean); i++ {
		d[i] = mean[i] - mean[i-1]
	}
	return d
}

// check validates c for a model of q targets.
func (c *ScaleCheck) check(q int) error {
	if len(c.Coef) != q {
		return corrupted("scale check has %d coefficients, want %d", len(c.Coef), q)
	}
	if math.IsNaN(c.Intercept) || math.IsInf(c.Intercept, 0) {
		return corrupted("scale check intercept is %v", c.Intercept)
	}
	if err := checkFinite("scale check coefficients", c.Coef); err != nil {
		return err
	}
	if !(c.Sigma > 0) || math.IsInf(c.Sigma, 0) {
		return corrupted("scale check sigma is %v, must be finite and > 0", c.Sigma)
	}
	return nil
}

// ErrScaleCheck: the calibration set does not determine a scale check
// (too few rows, a flat spectrum, collinear predictions, zero residual).
var ErrScaleCheck = errors.New("scale check cannot be fitted")

// FitScaleCheck fits the scale check of the model p from its n calibration
// rows; row(i) returns calibration input i exactly as the model sees it at
// predict time (after preprocessing and region selection: length
// len(p.XMean)). The predictions are p's own, xs Coef + Intercept.
func FitScaleCheck(p *PLSParams, n int, row func(i int) []float64) (*ScaleCheck, error) {
	q := len(p.Targets)
	nf := len(p.XMean)
	if p.Coef == nil || q == 0 || len(p.Intercept) != q || len(p.XScale) != nf {
		return nil, fmt.Errorf("%w: incomplete model", ErrScaleCheck)
	}
	if r, c := p.Coef.Dims(); r != nf || c != q {
		return nil, fmt.Errorf("%w: coef is %dx%d, want %dx%d", ErrScaleCheck, r, c, nf, q)
	}
	if n <= q+2 {
		return nil, fmt.Errorf("%w: %d calibration rows for %d coefficients", ErrScaleCheck, n, q+1)
	}
	// Columns of the design are the centred predictions; the intercept
	// follows from the means. A model with fewer components than targets
	// has collinear predictions (rank a < q): the minimum-norm least
	// squares solution by SVD then spreads b over them, and the residual
	// has n - rank - 1 degrees of freedom.
	design := mat.NewDense(n, q, nil)
	stat := mat.NewVecDense(n, nil)
	xs := make([]float64, nf)
	for i := 0; i < n; i++ {
		x := row(i)
		if len(x) != nf {
			return nil, fmt.Errorf("%w: row %d has %d features, want %d", ErrScaleCheck, i, len(x), nf)
		}
		s := scaleStatistic(x)
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("%w: row %d is flat or not finite", ErrScaleCheck, i)
		}
		stat.SetVec(i, s)
		for j, v := range x {
			xs[j] = (v - p.XMean[j]) / p.XScale[j]
		}
		for k := 0; k < q; k++ {
			design.Set(i, k, p.Intercept[k]+floatsDotCol(xs, p.Coef, k))
		}
	}
	meanS := mat.Sum(stat) / float64(n)
	meanY := make([]float64, q)
	for k := range meanY {
		col := mat.Col(nil, k, design)
		for _, v := range col {
			meanY[k] += v / float64(n)
		}
		for i, v := range col {
			design.Set(i, k, v-meanY[k])
		}
	}
	for i := 0; i < n; i++ {
		stat.SetVec(i, stat.AtVec(i)-meanS)
	}
	var svd mat.SVD
	if !svd.Factorize(design, mat.SVDThin) {
		return nil, fmt.Errorf("%w: SVD of the predictions failed", ErrScaleCheck)
	}
	values := svd.Values(nil)
	rank := 0
	for _, v := range values {
		if v > values[0]*float64(n)*1e-13 {
			rank++
		}
	}
	if rank == 0 {
		return nil, fmt.Errorf("%w: the calibration predictions do not vary", ErrScaleCheck)
	}
	var b mat.VecDense
	svd.SolveVecTo(&b, stat, rank)
	var resid mat.VecDense
	resid.MulVec(design, &b)
	resid.SubVec(stat, &resid)
	sigma := math.Sqrt(mat.Dot(&resid, &resid) / float64(n-rank-1))
	c := &ScaleCheck{Intercept: meanS, Coef: make([]float64, q), Sigma: sigma}
	for k := range c.Coef {
		c.Coef[k] = b.AtVec(k)
		c.Intercept -= c.Coef[k] * meanY[k]
	}
	if err := c.check(q); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrScaleCheck, err)
	}
	return c, nil
}

// floatsDotCol returns x . A[:, k].
func floatsDotCol(x []float64, a *mat.Dense, k int) float64 {
	var s float64
	for j, v := range x {
		s += v * a.At(j, k)
	}
	return s
}

// The artifact stores a ScaleCheck as scale_check.npy, a vector of q+2
// float64: [Intercept, Coef_1 .. Coef_q, Sigma] (api/artifact.md).

// scaleCheckArray returns the artifact form of c; nil for no check.
func scaleCheckArray(c *ScaleCheck) []float64 {
	if c == nil {
		return nil
	}
	v := make([]float64, 0, len(c.Coef)+2)
	v = append(v, c.Intercept)
	v = append(v, c.Coef...)
	return append(v, c.Sigma)
}

// readScaleCheck reads the optional scale_check member through the
// artifact reader's vector function; NewPLSModel checks its length
// against the targets and its values.
func readScaleCheck(vector func(name string, required bool) ([]float64, error)) (*ScaleCheck, error) {
	v, err := vector("scale_check", false)
	if err != nil || v == nil {
		return nil, err
	}
	if len(v) < 3 {
		return nil, fmt.Errorf("scale_check has %d values, want q+2 >= 3", len(v))
	}
	return &ScaleCheck{Intercept: v[0], Coef: v[1 : len(v)-1], Sigma: v[len(v)-1]}, nil
}
