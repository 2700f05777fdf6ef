package inference

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"ramanserve/inference/preprocess"
)

// PLSModel is a partial-least-squares regression model ready for the hot
// path. It is immutable after NewPLSModel and safe for concurrent use.
//
// Per prediction it makes one pass over the spectrum to validate it, one to
// preprocess it (xs = (x - XMean) / XScale, the same element-wise operations
// scikit-learn performs, so the rounding of the prediction differs from
// scikit-learn's only in the summation order of the final dot products), and
// one matrix-vector product of a fused K x p matrix
//
//	F = [Coef | Rotations | Loadings]'   (K = q + 2a rows)
//
// with xs, which gives at once the predictions (before the intercept), the
// scores t = xs @ Rotations and u = Loadings' xs, from which Q follows
// without a second pass (see qResidual).
type PLSModel struct {
	meta    Metadata
	targets []Analyte
	p, q, a int

	xMean     []float64
	xScale    []float64
	unitScale bool // XScale is all ones: skip the division

	fused     []float64 // K x p, row-major
	k         int       // rows of fused: q, q+a or q+2a
	intercept []float64

	// Diagnostics (see Predict).
	hasT2          bool
	invScoreVar    []float64 // 1 / s_a^2
	t2Limit        float64
	nCal           int
	meanLeverage   float64 // h̄ = (a+1)/n
	hasQ           bool
	loadingsGram   []float64 // P'P, a x a row-major
	loadingsByFeat []float64 // P, p x a row-major, for the exact Q fallback
	hasQLim        bool
	qLimit         float64

	// Confidence.
	rmsecv    []float64   // q; NaN when unknown
	tolerance []float64   // q
	scale     *ScaleCheck // nil when the model has none
	meanDiff  []float64   // XMean_i - XMean_{i-1}, for the scale check

	limits spectrumLimits

	// Recipe and regions (see recipe.go); all nil for a raw, full-axis
	// model, whose spectrum is centred and scaled directly (no copy).
	recipe   preprocess.Recipe
	regions  [][2]float64
	pipeline *preprocess.Pipeline // nil: no preprocessing
	selected []int                // p indices into the axis; nil: every point

	// Contributions (contributions.go); nil without an axis.
	variableWavenumbers []float64    // p: the axis point of each variable
	contributionRegions [][2]float64 // the model's regions, or the whole axis
	regionRuns          []regionRun  // the variables of each region, in runs

	scratch sync.Pool // *plsScratch
}

// plsScratch holds the per-call buffers, recycled through a sync.Pool so
// that Predict allocates nothing once warm.
type plsScratch struct {
	xs  []float64 // p
	out []float64 // K
	// For a model with a recipe: a copy of the spectrum's intensities
	// (the caller's spectrum is never modified) and the pipeline's
	// scratch buffers.
	x  []float64 // len(axis)
	ws *preprocess.Workspace
	// For predictions that ask for contributions, allocated on first use:
	// one statistic's per-variable contributions (p) and t_a / s_a^2 (a).
	contributions []float64
	scoreWeights  []float64
}

var _ Model = (*PLSModel)(nil)

func corrupted(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrModelCorrupted, fmt.Sprintf(format, args...))
}

// NewPLSModel checks p and precomputes what Predict needs. Every
// inconsistency (dimensions, non-finite or out-of-domain values) is an error
// wrapping ErrModelCorrupted. p is not retained: later changes to it do not
// affect the model.
func NewPLSModel(p *PLSParams, opts ModelOptions) (*PLSModel, error) {
	if p == nil {
		return nil, corrupted("no model parameters")
	}
	ro, err := opts.resolve()
	if err != nil {
		return nil, fmt.Errorf("model options: %w", err)
	}
	m := &PLSModel{meta: p.Meta}
	nFeat := len(p.XMean)
	if nFeat == 0 {
		return nil, corrupted("model has no features (x_mean is empty)")
	}
	m.p = nFeat
	for _, set := range []func(*PLSParams) error{m.setTargets, m.setScaling, m.setRegression, m.setLatentStructure} {
		if err := set(p); err != nil {
			return nil, err
		}
	}
	if err := m.setConfidenceInputs(p, opts); err != nil {
		return nil, err
	}
	if err := m.setAxis(p, opts, ro); err != nil {
		return nil, err
	}
	if err := m.precompute(p); err != nil {
		return nil, err
	}
	m.setContributionLayout()
	m.scratch.New = m.newScratch
	return m, nil
}

// setTargets checks the analytes the model predicts: 1 to 3, each once.
func (m *PLSModel) setTargets(p *PLSParams) error {
	m.q = len(p.Targets)
	if m.q < 1 || m.q > NumAnalytes {
		return corrupted("model has %d targets, want 1 to %d", m.q, NumAnalytes)
	}
	seen := [NumAnalytes]bool{}
	for i, t := range p.Targets {
		if t < 0 || t >= NumAnalytes {
			return corrupted("target %d is not an analyte (%d)", i, int(t))
		}
		if seen[t] {
			return corrupted("target %v appears twice", t)
		}
		seen[t] = true
	}
	m.targets = slices.Clone(p.Targets)
	return nil
}

// setScaling checks the centring and scaling of x: finite means and
// finite, positive scales, one per feature.
func (m *PLSModel) setScaling(p *PLSParams) error {
	nFeat := m.p
	if err := checkFinite("x_mean", p.XMean); err != nil {
		return err
	}
	if len(p.XScale) != nFeat {
		return corrupted("x_scale has %d values, x_mean %d", len(p.XScale), nFeat)
	}
	m.unitScale = true
	for i, s := range p.XScale {
		if !(s > 0) || math.IsInf(s, 0) {
			return corrupted("x_scale[%d] is %v, must be finite and > 0", i, s)
		}
		if s != 1 {
			m.unitScale = false
		}
	}
	m.xMean = slices.Clone(p.XMean)
	m.xScale = slices.Clone(p.XScale)
	return nil
}

// setRegression checks the coefficients (p x q) and the intercept (q).
func (m *PLSModel) setRegression(p *PLSParams) error {
	nFeat := m.p
	if err := checkMatrix("coef", p.Coef, nFeat, m.q); err != nil {
		return err
	}
	if len(p.Intercept) != m.q {
		return corrupted("intercept has %d values, want %d", len(p.Intercept), m.q)
	}
	if err := checkFinite("intercept", p.Intercept); err != nil {
		return err
	}
	m.intercept = slices.Clone(p.Intercept)
	return nil
}

// setLatentStructure checks what T2 and Q need: rotations and loadings
// (p x a), score variances (a), the calibration size and calibration Q
// values, and that the component count agrees with the metadata.
func (m *PLSModel) setLatentStructure(p *PLSParams) error {
	nFeat := m.p
	if p.Rotations != nil {
		r, c := p.Rotations.Dims()
		m.a = c
		if err := checkMatrix("rotations", p.Rotations, nFeat, c); err != nil {
			return err
		}
		if r != nFeat || c < 1 {
			return corrupted("rotations are %dx%d, want %dx(>=1)", r, c, nFeat)
		}
		if c > nFeat {
			return corrupted("%d latent components for %d features", c, nFeat)
		}
	}
	if p.Loadings != nil {
		if p.Rotations == nil {
			return corrupted("loadings given without rotations")
		}
		if err := checkMatrix("loadings", p.Loadings, nFeat, m.a); err != nil {
			return err
		}
	}
	if p.ScoreVariance != nil {
		if p.Rotations == nil {
			return corrupted("score variances given without rotations")
		}
		if len(p.ScoreVariance) != m.a {
			return corrupted("score_variance has %d values, want %d", len(p.ScoreVariance), m.a)
		}
		for i, v := range p.ScoreVariance {
			if !(v > 0) || math.IsInf(v, 0) {
				return corrupted("score_variance[%d] is %v, must be finite and > 0", i, v)
			}
		}
	}
	if p.NCalibration < 0 {
		return corrupted("calibration size %d < 0", p.NCalibration)
	}
	if m.meta.LatentComponents == 0 {
		m.meta.LatentComponents = m.a
	} else if m.a > 0 && m.meta.LatentComponents != m.a {
		return corrupted("metadata says %d latent components, rotations have %d", m.meta.LatentComponents, m.a)
	}
	if m.meta.LatentComponents < 0 {
		return corrupted("latent components %d < 0", m.meta.LatentComponents)
	}
	if p.CalibrationQ != nil {
		for i, v := range p.CalibrationQ {
			if !(v >= 0) || math.IsInf(v, 0) {
				return corrupted("calibration_q[%d] is %v, must be finite and >= 0", i, v)
			}
		}
	}
	return m.checkHeldOut(p)
}

// checkHeldOut checks the held-out T2 and Q values: one per calibration
// sample, finite and >= 0, and only for a statistic the model computes.
func (m *PLSModel) checkHeldOut(p *PLSParams) error {
	for _, h := range []struct {
		name, needs string
		v           []float64
		usable      bool
	}{
		{"heldout_t2", "score variances", p.HeldOutT2, p.ScoreVariance != nil},
		{"heldout_q", "loadings", p.HeldOutQ, p.Loadings != nil},
	} {
		if h.v == nil {
			continue
		}
		if !h.usable {
			return corrupted("%s given without %s", h.name, h.needs)
		}
		if len(h.v) != p.NCalibration {
			return corrupted("%s has %d values, want one per calibration sample (%d)", h.name, len(h.v), p.NCalibration)
		}
		for i, v := range h.v {
			if !(v >= 0) || math.IsInf(v, 0) {
				return corrupted("%s[%d] is %v, must be finite and >= 0", h.name, i, v)
			}
		}
	}
	return nil
}

// setConfidenceInputs checks what the confidence needs: RMSECV per
// target (NaN when unknown), the scale check, and the tolerance (the
// model's, else the server's, else DefaultTolerance).
func (m *PLSModel) setConfidenceInputs(p *PLSParams, opts ModelOptions) error {
	m.rmsecv = make([]float64, m.q)
	for i := range m.rmsecv {
		m.rmsecv[i] = math.NaN()
	}
	if p.RMSECV != nil {
		if len(p.RMSECV) != m.q {
			return corrupted("rmsecv has %d values, want %d", len(p.RMSECV), m.q)
		}
		for i, v := range p.RMSECV {
			if math.IsNaN(v) {
				continue
			}
			if !(v >= 0) || math.IsInf(v, 0) {
				return corrupted("rmsecv[%d] is %v, must be NaN (unknown) or finite and >= 0", i, v)
			}
			m.rmsecv[i] = v
		}
	}
	if p.ScaleCheck != nil {
		if err := p.ScaleCheck.check(m.q); err != nil {
			return err
		}
		sc := *p.ScaleCheck
		sc.Coef = slices.Clone(sc.Coef)
		m.scale = &sc
		m.meanDiff = meanDifferences(p.XMean)
	}
	m.tolerance = make([]float64, m.q)
	if p.Tolerance != nil && len(p.Tolerance) != m.q {
		return corrupted("tolerance has %d values, want %d", len(p.Tolerance), m.q)
	}
	for i, t := range m.targets {
		switch {
		case p.Tolerance != nil:
			v := p.Tolerance[i]
			if !(v > 0) || math.IsInf(v, 0) {
				return corrupted("tolerance[%d] is %v, must be finite and > 0", i, v)
			}
			m.tolerance[i] = v
		case opts.Tolerance.Valid[t]:
			m.tolerance[i] = opts.Tolerance.Value[t]
		default:
			m.tolerance[i] = DefaultTolerance
		}
	}
	return nil
}

// setAxis takes the model's own axis, else the instrument's, checks it
// against the features (a model with a recipe or regions takes whole
// spectra of the axis's length and sees only its regions' points),
// compiles the recipe, and sets the limits a spectrum is validated against.
func (m *PLSModel) setAxis(p *PLSParams, opts ModelOptions, ro resolvedOptions) error {
	nFeat := m.p
	axis := p.Meta.Wavenumbers
	source := "model"
	if len(axis) == 0 && len(opts.InstrumentAxis) > 0 {
		axis, source = opts.InstrumentAxis, "instrument"
	}
	shaped := len(p.Preprocessing) > 0 || p.Regions != nil
	points := nFeat
	if len(axis) > 0 {
		// A spectrum has the axis's length. Without regions every point
		// is a feature; with them the model sees the regions' points
		// (compileRecipe checks their count).
		if p.Regions == nil && len(axis) != nFeat {
			return corrupted("%s wavenumber axis has %d points, model has %d features", source, len(axis), nFeat)
		}
		points = len(axis)
		// The recipe's own definition of a usable axis, so that a model
		// and its recipe never disagree about one.
		if err := preprocess.CheckAxis(axis); err != nil {
			var fe *preprocess.FieldError
			if errors.As(err, &fe) {
				return corrupted("%s wavenumber axis: %s: %s", source, fe.Field, fe.Reason)
			}
			return corrupted("%s wavenumber axis: %v", source, err)
		}
		axis = slices.Clone(axis)
	} else {
		if shaped {
			return corrupted("model has a preprocessing recipe or regions but no wavenumber axis")
		}
		axis = nil
	}
	if shaped {
		if err := m.compileRecipe(p, axis); err != nil {
			return err
		}
	}
	m.meta.Wavenumbers = axis
	m.limits = spectrumLimits{
		points:          points,
		axis:            axis,
		axisTolerance:   ro.axisTolerance,
		maxAbsIntensity: ro.maxAbsIntensity,
		saturationLevel: ro.saturationLevel,
		saturationRun:   ro.saturationRun,
	}
	return nil
}

// precompute builds the fused matrix and the diagnostic limits.
func (m *PLSModel) precompute(p *PLSParams) error {
	m.k = m.q
	if p.Rotations != nil {
		m.k += m.a
		m.hasQ = p.Loadings != nil
		if m.hasQ {
			m.k += m.a
		}
	}
	m.fused = make([]float64, m.k*m.p)
	row := 0
	putColumns := func(src *mat.Dense, cols int) {
		for c := range cols {
			dst := m.fused[row*m.p : (row+1)*m.p]
			mat.Col(dst, c, src)
			row++
		}
	}
	putColumns(p.Coef, m.q)
	if p.Rotations != nil {
		putColumns(p.Rotations, m.a)
	}
	if m.hasQ {
		putColumns(p.Loadings, m.a)
		m.loadingsGram = make([]float64, m.a*m.a)
		gram := mat.NewDense(m.a, m.a, m.loadingsGram)
		gram.Mul(p.Loadings.T(), p.Loadings)
		m.loadingsByFeat = make([]float64, m.p*m.a)
		byFeat := mat.NewDense(m.p, m.a, m.loadingsByFeat)
		byFeat.Copy(p.Loadings)
	}

	if p.Rotations != nil && p.ScoreVariance != nil && p.NCalibration > m.a {
		lim, err := ModelT2Limit(m.a, p.NCalibration, p.HeldOutT2)
		if err != nil {
			return corrupted("T2 limit: %v", err)
		}
		m.hasT2 = true
		m.t2Limit = lim
		m.nCal = p.NCalibration
		m.meanLeverage = meanCalibrationLeverage(m.a, p.NCalibration)
		m.invScoreVar = make([]float64, m.a)
		for i, v := range p.ScoreVariance {
			m.invScoreVar[i] = 1 / v
		}
	}
	if m.hasQ && (len(p.CalibrationQ) >= 2 || len(p.HeldOutQ) > 0) {
		// A degenerate Q (all equal, all zero) has no distribution to
		// fit: the model then simply has no Q limit.
		if lim, err := ModelQLimit(p.CalibrationQ, p.HeldOutQ); err == nil {
			m.hasQLim = true
			m.qLimit = lim
		}
	}
	return nil
}

func checkFinite(name string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return corrupted("%s[%d] is %v", name, i, x)
		}
	}
	return nil
}

func checkMatrix(name string, a *mat.Dense, rows, cols int) error {
	if a == nil {
		return corrupted("%s is missing", name)
	}
	r, c := a.Dims()
	if r != rows || c != cols {
		return corrupted("%s is %dx%d, want %dx%d", name, r, c, rows, cols)
	}
	for i := range r {
		for j := range c {
			if x := a.At(i, j); math.IsNaN(x) || math.IsInf(x, 0) {
				return corrupted("%s[%d,%d] is %v", name, i, j, x)
			}
		}
	}
	return nil
}

// Metadata returns the model's description; Wavenumbers is the axis the
// model checks spectra against (its own or the instrument's), nil when
// unknown.
func (m *PLSModel) Metadata() *Metadata { return &m.meta }

// Targets lists the analytes in output order.
func (m *PLSModel) Targets() []Analyte { return m.targets }

// Tolerance returns the acceptable absolute error per target (g/L) that
// the confidence uses: the model's own, else the server's
// (ModelOptions.Tolerance), else DefaultTolerance. Shadow scoring counts
// the spectra on which another model differs from this one by more.
func (m *PLSModel) Tolerance() Breakdown {
	var b Breakdown
	for i, t := range m.targets {
		b.Set(t, m.tolerance[i])
	}
	return b
}

// Features returns p, the number of points the regression uses: the
// points of the model's regions, or the whole spectrum.
func (m *PLSModel) Features() int { return m.p }

// SpectrumPoints returns the number of points a spectrum must have (the
// length of the model's axis when it has one).
func (m *PLSModel) SpectrumPoints() int { return m.limits.points }

// Limits returns the 95 % T2 and Q limits; ok flags say which exist.
func (m *PLSModel) Limits() (t2Limit float64, hasT2 bool, qLimit float64, hasQ bool) {
	return m.t2Limit, m.hasT2, m.qLimit, m.hasQLim
}

// Predict validates s (see validateSpectrum for the rules and their order)
// and fills out with concentrations, confidences and diagnostics. It does
// not allocate once the model is warm.
func (m *PLSModel) Predict(s *Spectrum, out *Prediction) error {
	return m.predict(s, out, nil)
}

// predict is Predict; when then is not nil it is called with the
// preprocessed spectrum and the scratch (whose out holds the fused
// product) once out is complete and finite, before the scratch goes back
// to the pool: what explains a prediction works on its very numbers.
func (m *PLSModel) predict(s *Spectrum, out *Prediction, then func(xs []float64, sc *plsScratch)) error {
	if err := m.limits.validateSpectrum(s); err != nil {
		return err
	}
	sc := m.scratch.Get().(*plsScratch)
	defer m.scratch.Put(sc)

	xs := sc.xs
	if err := m.applyRecipe(s.Intensities, sc); err != nil {
		return err
	}

	blas64.Gemv(blas.NoTrans, 1,
		blas64.General{Rows: m.k, Cols: m.p, Stride: m.p, Data: m.fused},
		blas64.Vector{N: m.p, Inc: 1, Data: xs}, 0,
		blas64.Vector{N: m.k, Inc: 1, Data: sc.out})

	*out = Prediction{}
	for i, t := range m.targets {
		sc.out[i] += m.intercept[i]
		out.Concentrations.Set(t, sc.out[i])
	}
	m.diagnose(xs, sc.out, &out.Diagnostics)
	if m.scale != nil {
		// sc.out[:q] now holds the predictions.
		out.Diagnostics.HasScale = true
		out.Diagnostics.ReducedScale = m.scale.reducedScale(m.scaledStatistic(xs), sc.out[:m.q])
	}
	m.confidence(&out.Diagnostics, &out.Confidence)
	if !out.finite() {
		// A recipe can blow a valid spectrum up (a band area of 1e-200
		// under normalize): the concentrations may stay finite while T2
		// and Q, sums of squares, overflow; and a model file or an
		// imported scaler may divide by 1e-303. No reply is better than
		// figures of 1e205 g/L or an Inf statistic.
		*out = Prediction{}
		return invalidSpectrum("the spectrum overflows the model (its figures are not finite)")
	}
	if then != nil {
		then(xs, sc)
	}
	return nil
}

// preprocess computes xs = (x - XMean) / XScale element-wise, as
// scikit-learn does (subtract, then divide; no reciprocal, so each xs_i is
// bit-identical to NumPy's).
func (m *PLSModel) preprocess(x, xs []float64) {
	mean := m.xMean[:len(xs)]
	x = x[:len(xs)]
	if m.unitScale {
		for i := range xs {
			xs[i] = x[i] - mean[i]
		}
		return
	}
	scale := m.xScale[:len(xs)]
	for i := range xs {
		xs[i] = (x[i] - mean[i]) / scale[i]
	}
}

// diagnose fills d from the scaled spectrum xs and the fused product out.
//
//	T2 = sum_a t_a^2 / s_a^2   (Hotelling; s_a^2 calibration score variance)
//	h  = 1/n + T2/(n-1)        (leverage of a new sample, centred model)
//	Q  = ||xs - P t||^2        (SPE; Jackson & Mudholkar, Technometrics 21 (1979) 341-349)
func (m *PLSModel) diagnose(xs, out []float64, d *Diagnostics) {
	if m.a == 0 {
		return
	}
	t := out[m.q : m.q+m.a]
	if m.hasT2 {
		var t2 float64
		for i, v := range t {
			t2 += v * v * m.invScoreVar[i]
		}
		d.HasT2 = true
		d.T2 = t2
		d.T2Limit = m.t2Limit
		d.ReducedT2 = t2 / m.t2Limit
		d.Leverage = 1/float64(m.nCal) + t2/float64(m.nCal-1)
	}
	if m.hasQ {
		d.HasQ = true
		d.Q = m.qResidual(xs, t, out[m.q+m.a:m.q+2*m.a])
		if m.hasQLim {
			d.HasQLim = true
			d.QLimit = m.qLimit
			d.ReducedQ = d.Q / m.qLimit
		}
	}
}

// qCancellationRatio: when the expanded Q falls below this fraction of
// xs'xs, the expansion has lost too many digits to cancellation and Q is
// recomputed directly.
const qCancellationRatio = 1e-7

// qResidual returns Q = ||xs - P t||^2 given u = P'xs, by the expansion
//
//	Q = xs'xs - 2 t'u + t'(P'P)t
//
// which needs no second pass over the p features. The expansion subtracts
// quantities of the size of xs'xs, so its absolute rounding error is about
// eps * xs'xs: relative to Q that is eps * xs'xs / Q. When Q is a tiny
// fraction of xs'xs (a spectrum the model reconstructs almost exactly) the
// result is recomputed directly, and it is never negative.
func (m *PLSModel) qResidual(xs, t, u []float64) float64 {
	xx := dot(xs, xs)
	var tu, tGt float64
	a := m.a
	for i := range a {
		tu += t[i] * u[i]
		row := m.loadingsGram[i*a : (i+1)*a]
		var g float64
		for j := range a {
			g += row[j] * t[j]
		}
		tGt += t[i] * g
	}
	q := xx - 2*tu + tGt
	if q > qCancellationRatio*xx {
		return q
	}
	return m.qDirect(xs, t)
}

func dot(a, b []float64) float64 { return floats.Dot(a, b) }

// qDirect computes ||xs - P t||^2 element by element.
func (m *PLSModel) qDirect(xs, t []float64) float64 {
	a := m.a
	var q float64
	for i, x := range xs {
		row := m.loadingsByFeat[i*a : (i+1)*a]
		e := x
		for j, v := range row {
			e -= v * t[j]
		}
		q += e * e
	}
	return q
}

// confidence fills c per target; see the formula in confidence.go.
func (m *PLSModel) confidence(d *Diagnostics, c *Breakdown) {
	domainKnown := d.HasT2 || d.HasQLim || d.HasScale
	var r float64
	if d.HasT2 {
		r = d.ReducedT2
	}
	if d.HasQLim && d.ReducedQ > r {
		r = d.ReducedQ
	}
	if d.HasScale && !(d.ReducedScale <= r) { // also NaN: out of domain
		r = d.ReducedScale
	}
	domain := 1.0
	if domainKnown {
		domain = domainFactor(r)
	}
	inflation := 1.0
	if d.HasT2 {
		inflation = math.Sqrt((1 + d.Leverage) / (1 + m.meanLeverage))
	}
	for i, t := range m.targets {
		rmse := m.rmsecv[i]
		switch {
		case !math.IsNaN(rmse):
			c.Set(t, withinToleranceProbability(m.tolerance[i], rmse*inflation)*domain)
		case domainKnown:
			c.Set(t, domain)
		}
	}
}
