package sklearn

import (
	"fmt"
	"io"
	"slices"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// This file builds a model's scikit-learn Pipeline as the values the
// restricted reader builds, and writes them with the pickle writer
// (pickle_write.go): the export is made of exactly what the reader
// accepts, so importing it again gives back the same model.
//
// The pipeline is
//
//	Pipeline([FunctionTransformer(step)...,             # the recipe, in order
//	          FunctionTransformer(select_regions),       # when the model has regions
//	          StandardScaler(),                          # when the model scales x
//	          PLSRegression()])
//
// The PLSRegression holds x_mean (or zeros behind a StandardScaler), unit
// x_std and the coefficients (q, p) in the units they apply to, as both
// _coef_ (scikit-learn 1.1-1.2) and coef_ (1.3 on): with a unit x_std the
// attribute layouts of every version from 1.1 on predict the same.

// RegionFunction is the helper module's function that keeps the points
// inside a model's wavenumber regions.
const RegionFunction = "select_regions"

// exportVersion is the scikit-learn version recorded in the export, the
// one whose attribute names (_coef_) it is written in; it only silences
// the warning scikit-learn gives for a file pickled by another version.
const exportVersion = "1.2.1"

// WriteJoblib writes the model as a scikit-learn Pipeline in a file that
// joblib.load reads (with examples/python/ramanserve_preprocessing.py
// importable as ramanserve_preprocessing) and this package's Load reads
// back to the same model. Errors: a model that has regions but no
// wavenumber axis cannot be written.
func WriteJoblib(w io.Writer, p *inference.PLSParams) error {
	v, err := pipelineValue(p)
	if err != nil {
		return err
	}
	b, err := writePickle(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// exportDtype is float64, little-endian: every array of the export.
var exportDtype = &dtype{kind: "f8", order: '<'}

func array(v []float64, shape ...int) *ndarray {
	return &ndarray{shape: shape, dtype: exportDtype, floats: slices.Clone(v)}
}

func newDict(pairs ...any) *dict {
	d := &dict{}
	for i := 0; i < len(pairs); i += 2 {
		d.keys = append(d.keys, pairs[i])
		d.values = append(d.values, pairs[i+1])
	}
	return d
}

func class(full string) *global {
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '.' {
			return &global{module: full[:i], name: full[i+1:]}
		}
	}
	return &global{name: full}
}

func estimator(cls string, state *dict) *object {
	state.keys = append(state.keys, "_sklearn_version")
	state.values = append(state.values, exportVersion)
	return &object{class: class(cls), state: state}
}

// functionTransformer is FunctionTransformer(func, kw_args=kw) as fitted.
func functionTransformer(fn *global, kw *dict) *object {
	var kwArgs any
	if kw != nil {
		kwArgs = kw
	}
	return estimator(classFunctionTransformer, newDict(
		"func", fn, "inverse_func", nil, "validate", false, "accept_sparse", false,
		"check_inverse", true, "feature_names_out", nil, "kw_args", kwArgs, "inv_kw_args", nil))
}

// pipelineValue builds the Pipeline of p.
func pipelineValue(p *inference.PLSParams) (*object, error) {
	nFeat := len(p.XMean)
	q := len(p.Targets)
	if nFeat == 0 || q == 0 || p.Coef == nil {
		return nil, fmt.Errorf("%w: the model has no coefficients to export", inference.ErrModelCorrupted)
	}
	if r, c := p.Coef.Dims(); r != nFeat || c != q || len(p.XScale) != nFeat || len(p.Intercept) != q {
		return nil, fmt.Errorf("%w: the model's coefficients are %dx%d for %d features and %d targets", inference.ErrModelCorrupted, r, c, nFeat, q)
	}
	axis := p.Meta.Wavenumbers
	var axisValue any
	if len(axis) > 0 {
		axisValue = array(axis, len(axis))
	}
	var steps []any
	names := map[string]int{}
	add := func(name string, est *object) {
		names[name]++
		if n := names[name]; n > 1 {
			name = fmt.Sprintf("%s_%d", name, n)
		}
		steps = append(steps, tuple{name, est})
	}
	helper := func(name string) *global { return &global{module: HelperModule, name: name} }
	for i, s := range p.Preprocessing {
		switch s.Kind {
		case preprocess.Savgol:
			add("savgol", functionTransformer(&global{module: "scipy.signal", name: "savgol_filter"}, newDict(
				"window_length", int64(s.Window), "polyorder", int64(s.PolyOrder), "deriv", int64(s.Deriv), "axis", int64(-1))))
		case preprocess.Despike:
			kw := newDict("threshold", s.Threshold, "width", int64(s.Width))
			if axisValue != nil {
				kw.keys, kw.values = append(kw.keys, "wavenumbers"), append(kw.values, axisValue)
			}
			add("despike", functionTransformer(helper("despike"), kw))
		case preprocess.SNV:
			add("snv", functionTransformer(helper("snv"), nil))
		case preprocess.ALSBaseline:
			add("als_baseline", functionTransformer(helper("als_baseline"), newDict(
				"lam", s.Lambda, "p", s.P, "iterations", int64(s.Iterations))))
		case preprocess.Normalize:
			if axisValue == nil {
				return nil, fmt.Errorf("%w: preprocessing[%d] normalize without a wavenumber axis", inference.ErrModelCorrupted, i)
			}
			add("normalize", functionTransformer(helper("normalize"), newDict(
				"wavenumbers", axisValue, "region", tuple{s.Region[0], s.Region[1]})))
		default:
			return nil, fmt.Errorf("%w: preprocessing[%d] is a step the export does not know (%v)", inference.ErrModelUnsupported, i, s.Kind)
		}
	}
	if p.Regions != nil {
		if axisValue == nil {
			return nil, fmt.Errorf("%w: the model selects regions but has no wavenumber axis", inference.ErrModelCorrupted)
		}
		regions := &list{}
		for _, r := range p.Regions {
			regions.items = append(regions.items, tuple{r[0], r[1]})
		}
		add("regions", functionTransformer(helper(RegionFunction), newDict("wavenumbers", axisValue, "regions", regions)))
	}

	// A model that scales x gets a StandardScaler with its mean and scale,
	// and the PLS zero means: the reader folds the two back into exactly
	// the same mean and scale.
	plsMean := p.XMean
	if !allOnes(p.XScale) {
		variance := make([]float64, nFeat)
		for i, s := range p.XScale {
			variance[i] = s * s
		}
		add("scale", estimator(classStandardScaler, newDict(
			"with_mean", true, "with_std", true, "copy", true, "n_features_in_", int64(nFeat),
			"n_samples_seen_", int64(max(p.NCalibration, 1)),
			"mean_", array(p.XMean, nFeat), "var_", array(variance, nFeat), "scale_", array(p.XScale, nFeat))))
		plsMean = make([]float64, nFeat)
	}
	add("pls", plsValue(p, plsMean))
	return estimator(classPipeline, newDict("steps", &list{items: steps}, "memory", nil, "verbose", false)), nil
}

func allOnes(v []float64) bool {
	for _, x := range v {
		if x != 1 {
			return false
		}
	}
	return true
}

// plsValue is the fitted PLSRegression of p, with xMean as its _x_mean.
func plsValue(p *inference.PLSParams, xMean []float64) *object {
	nFeat, q := len(p.XMean), len(p.Targets)
	coef := make([]float64, 0, q*nFeat) // (q, p): row k is target k's vector
	for k := 0; k < q; k++ {
		for i := 0; i < nFeat; i++ {
			coef = append(coef, p.Coef.At(i, k))
		}
	}
	ones := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = 1
		}
		return v
	}
	a := p.Meta.LatentComponents
	if p.Rotations != nil {
		_, a = p.Rotations.Dims()
	}
	state := newDict(
		"n_components", int64(max(a, 1)), "deflation_mode", "regression", "mode", "A", "scale", false,
		"algorithm", "nipals", "max_iter", int64(500), "tol", 1e-06, "copy", true,
		"n_features_in_", int64(nFeat),
		"_x_mean", array(xMean, nFeat), "_y_mean", array(p.Intercept, q),
		"_x_std", array(ones(nFeat), nFeat), "_y_std", array(ones(q), q),
		"_coef_", array(coef, q, nFeat), "coef_", array(coef, q, nFeat),
		"intercept_", array(p.Intercept, q), "_predict_1d", false,
	)
	// The latent structure gives scores and Q; the training scores give
	// T2 (the reader computes their variances again).
	if p.Rotations != nil && p.Loadings != nil {
		r, c := p.Rotations.Dims()
		if lr, lc := p.Loadings.Dims(); lr == r && lc == c && r == nFeat {
			state.keys = append(state.keys, "x_rotations_", "x_loadings_")
			state.values = append(state.values, array(denseData(p.Rotations), r, c), array(denseData(p.Loadings), r, c))
			if p.Review != nil && p.Review.Scores != nil {
				if n, sc := p.Review.Scores.Dims(); sc == c && n > c+1 {
					state.keys = append(state.keys, "_x_scores")
					state.values = append(state.values, array(denseData(p.Review.Scores), n, c))
				}
			}
		}
	}
	return estimator(classPLS, state)
}

// denseData is a matrix's values in row-major order.
func denseData(m interface {
	Dims() (int, int)
	At(i, j int) float64
}) []float64 {
	r, c := m.Dims()
	out := make([]float64, 0, r*c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out = append(out, m.At(i, j))
		}
	}
	return out
}
