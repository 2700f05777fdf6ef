package sklearn

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// This file recognises Pipeline([FunctionTransformer..., (StandardScaler,)
// PLSRegression]). A FunctionTransformer is only data here: its `func` is
// a global the reader resolved by module and name from the allowlist, and
// it is mapped to the preprocess.Step that reproduces it in Go. Nothing in
// the file runs. api/sklearn-import.md lists what is accepted.

// The scikit-learn classes the reader accepts (allowedGlobals,
// instantiable) and a Pipeline may hold.
const (
	classPLS                 = "sklearn.cross_decomposition._pls.PLSRegression"
	classPipeline            = "sklearn.pipeline.Pipeline"
	classStandardScaler      = "sklearn.preprocessing._data.StandardScaler"
	classFunctionTransformer = "sklearn.preprocessing._function_transformer.FunctionTransformer"
)

// HelperModule is the Python module whose functions a FunctionTransformer
// may name (examples/python/ramanserve_preprocessing.py).
const HelperModule = "ramanserve_preprocessing"

// recogniser maps a FunctionTransformer's kw_args to the step its function
// computes. Errors wrap inference.ErrModelUnsupported.
type recogniser func(kw *kwargs) (preprocess.Step, error)

// stepFunction is an allowlisted preprocessing function.
type stepFunction struct {
	name      string // as Meta.Algorithm names the step
	recognise recogniser
}

// stepFunctions are the functions a FunctionTransformer may hold, keyed by
// module.name as pickle records them (the function's __module__ and
// __qualname__). SciPy defines savgol_filter in a private module and
// pickle records that one (scipy.signal._savitzky_golay in Debian's SciPy
// 1.10); the public spelling is accepted too, for a SciPy that sets
// __module__ to it.
var stepFunctions = map[string]stepFunction{
	"scipy.signal._savitzky_golay.savgol_filter": {"savgol_filter", savgolStep},
	"scipy.signal.savgol_filter":                 {"savgol_filter", savgolStep},
	HelperModule + ".despike":                    {"despike", despikeStep},
	HelperModule + ".snv":                        {"snv", snvStep},
	HelperModule + ".als_baseline":               {"als_baseline", alsStep},
	HelperModule + ".normalize":                  {"normalize", normalizeStep},
}

// regionFunction is the helper that keeps the points inside wavenumber
// regions: a FunctionTransformer of it is the model's Regions, not a
// recipe step.
const regionFunction = HelperModule + "." + RegionFunction

// isRegionSelection reports whether a FunctionTransformer names
// regionFunction.
func isRegionSelection(o *object) bool {
	st, ok := o.state.(*dict)
	if !ok {
		return false
	}
	fn, ok := st.get("func").(*global)
	return ok && fn.String() == regionFunction
}

// regionSelection reads FunctionTransformer(select_regions,
// kw_args={"wavenumbers": axis, "regions": [(low, high), ...]}): both
// keywords required, at most preprocess.MaxRegions ranges. Whether the
// ranges fit the axis is preprocess.SelectRegions's check.
func regionSelection(o *object) ([][2]float64, []float64, error) {
	st := o.state.(*dict) // isRegionSelection checked it
	if err := plainTransformer(st, RegionFunction); err != nil {
		return nil, nil, err
	}
	kw := &kwargs{fn: RegionFunction, used: map[string]bool{}}
	d, ok := st.get("kw_args").(*dict)
	if !ok {
		return nil, nil, unsupported("%s needs wavenumbers and regions in kw_args", RegionFunction)
	}
	kw.d = d
	v, ok := kw.get("wavenumbers")
	if !ok {
		return nil, nil, unsupported("%s needs wavenumbers in kw_args", RegionFunction)
	}
	axis, err := axisArg(RegionFunction, v)
	if err != nil {
		return nil, nil, err
	}
	r, ok := kw.get("regions")
	if !ok {
		return nil, nil, unsupported("%s needs regions in kw_args", RegionFunction)
	}
	var items []any
	switch x := r.(type) {
	case *list:
		items = x.items
	case tuple:
		items = x
	default:
		return nil, nil, unsupported("%s regions is %s, not a list of (low, high)", RegionFunction, describe(r))
	}
	if len(items) == 0 || len(items) > preprocess.MaxRegions {
		return nil, nil, unsupported("%s has %d regions, 1 to %d are supported", RegionFunction, len(items), preprocess.MaxRegions)
	}
	regions := make([][2]float64, len(items))
	for i, it := range items {
		pair, ok := floats(it)
		if !ok || len(pair) != 2 {
			return nil, nil, unsupported("%s regions[%d] is %s, not (low, high)", RegionFunction, i, describe(it))
		}
		regions[i] = [2]float64{pair[0], pair[1]}
	}
	if err := kw.noOthers(); err != nil {
		return nil, nil, err
	}
	return regions, axis, nil
}

// unsupported wraps inference.ErrModelUnsupported.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", inference.ErrModelUnsupported, fmt.Sprintf(format, args...))
}

// pipelineParams maps Pipeline([FunctionTransformer..., (StandardScaler,)
// PLSRegression]) to PLSParams with its Preprocessing recipe.
func pipelineParams(obj *object, opts Options, info *Info) (*inference.PLSParams, error) {
	st, ok := obj.state.(*dict)
	if !ok {
		return nil, corrupt("Pipeline state %T", obj.state)
	}
	steps, ok := st.get("steps").(*list)
	if !ok || len(steps.items) == 0 {
		return nil, corrupt("Pipeline without steps")
	}
	objs := make([]*object, len(steps.items))
	for i, it := range steps.items {
		pair, ok := it.(tuple)
		if !ok || len(pair) != 2 {
			return nil, corrupt("Pipeline step %d is %T", i, it)
		}
		if objs[i], ok = pair[1].(*object); !ok {
			return nil, unsupported("Pipeline step %d is %s; only FunctionTransformer, StandardScaler and PLSRegression are supported", i, describe(pair[1]))
		}
	}
	last := objs[len(objs)-1]
	if last.class.String() != classPLS {
		return nil, unsupported("a Pipeline must end with PLSRegression, not %s", last.class.name)
	}
	var scaler *object
	front := objs[:len(objs)-1]
	if n := len(front); n > 0 && front[n-1].class.String() == classStandardScaler {
		scaler, front = front[n-1], front[:n-1]
	}
	var recipe preprocess.Recipe
	names := make([]string, 0, len(objs))
	var axis []float64
	var regions [][2]float64
	for i, o := range front {
		if o.class.String() != classFunctionTransformer {
			return nil, unsupported("Pipeline step %d is %s; before the PLSRegression only FunctionTransformer steps, then at most one StandardScaler, are supported", i, o.class.name)
		}
		if isRegionSelection(o) {
			if i != len(front)-1 {
				return nil, unsupported("Pipeline step %d: %s must be the last FunctionTransformer (the recipe applies to the whole spectrum, then the regions are kept)", i, RegionFunction)
			}
			r, regionAxis, err := regionSelection(o)
			if err != nil {
				return nil, fmt.Errorf("%w (Pipeline step %d)", err, i)
			}
			if axis != nil && !slices.Equal(axis, regionAxis) {
				return nil, unsupported("Pipeline step %d names other wavenumbers than an earlier step", i)
			}
			axis, regions = regionAxis, r
			names = append(names, RegionFunction)
			continue
		}
		step, name, stepAxis, err := functionStep(o)
		if err != nil {
			return nil, fmt.Errorf("%w (Pipeline step %d)", err, i)
		}
		if stepAxis != nil {
			if axis != nil && !slices.Equal(axis, stepAxis) {
				return nil, unsupported("Pipeline step %d names other wavenumbers than an earlier step", i)
			}
			axis = stepAxis
		}
		recipe = append(recipe, step)
		names = append(names, name)
	}
	if scaler != nil {
		names = append(names, "StandardScaler")
	}
	names = append(names, "PLSRegression")

	params, err := plsParams(last, scaler, opts, info)
	if err != nil {
		return nil, err
	}
	points := len(params.XMean) // of a spectrum, before any region selection
	if regions != nil {
		points = len(axis)
		sel, err := preprocess.SelectRegions(axis, regions)
		if err != nil {
			return nil, unsupported("%v", err)
		}
		if len(sel) != len(params.XMean) {
			return nil, corrupt("%s keeps %d points, the PLSRegression has %d features", RegionFunction, len(sel), len(params.XMean))
		}
		params.Regions = regions
		params.Meta.Wavenumbers = axis
	}
	if len(recipe) > 0 {
		steps := front
		if regions != nil {
			steps = front[:len(front)-1]
		}
		if err := checkFeatureCount(steps, points); err != nil {
			return nil, err
		}
		if axis != nil && len(axis) != points {
			return nil, unsupported("the steps' wavenumbers have %d points, the model %d features", len(axis), points)
		}
		if err := checkRecipe(recipe, axis, points); err != nil {
			return nil, err
		}
		params.Preprocessing = recipe
		params.Meta.Wavenumbers = axis
	}
	params.Meta.Algorithm = "sklearn-Pipeline(" + strings.Join(names, ",") + ")"
	info.Pipeline = true
	info.Steps = names
	return params, nil
}

// checkRecipe compiles the recipe for p points, so that what depends on
// the spectrum's length (a savgol window longer than it, a normalize
// region holding fewer than two points) fails the load rather than the
// model's activation. Without an axis from the steps, an evenly spaced
// stand-in serves: no other step's parameters depend on the axis values.
func checkRecipe(recipe preprocess.Recipe, axis []float64, p int) error {
	if axis == nil {
		axis = make([]float64, p)
		for i := range axis {
			axis[i] = float64(i)
		}
	}
	if _, err := preprocess.Compile(recipe, axis); err != nil {
		return unsupported("%v", err)
	}
	return nil
}

// checkFeatureCount compares each FunctionTransformer's n_features_in_,
// when stored, with the PLS's feature count: every supported step keeps
// the spectrum's length.
func checkFeatureCount(fts []*object, p int) error {
	for i, o := range fts {
		st := o.state.(*dict) // functionStep checked it
		if v, ok := st.lookup("n_features_in_"); ok {
			if n, ok := v.(int64); !ok || n != int64(p) {
				return corrupt("Pipeline step %d was fitted on %v features, the PLSRegression on %d", i, v, p)
			}
		}
	}
	return nil
}

// functionStep recognises one FunctionTransformer. It returns the step,
// the function's name and the wavenumber axis it names (normalize, and
// despike when given one), else nil.
func functionStep(o *object) (preprocess.Step, string, []float64, error) {
	st, ok := o.state.(*dict)
	if !ok {
		return preprocess.Step{}, "", nil, corrupt("FunctionTransformer state %T", o.state)
	}
	fn, ok := st.get("func").(*global)
	if !ok {
		return preprocess.Step{}, "", nil, unsupported("FunctionTransformer func is %s, not a module-level function", describe(st.get("func")))
	}
	sf, ok := stepFunctions[fn.String()]
	if !ok {
		// Resolving it was allowed (the allowlist also holds classes) but
		// it is no preprocessing function.
		return preprocess.Step{}, "", nil, unsafeGlobal(fn.String() + " (as a FunctionTransformer func)")
	}
	if err := plainTransformer(st, sf.name); err != nil {
		return preprocess.Step{}, "", nil, err
	}
	kw := &kwargs{fn: sf.name, used: map[string]bool{}}
	switch v := st.get("kw_args").(type) {
	case nil:
	case *dict:
		kw.d = v
	default:
		return preprocess.Step{}, "", nil, unsupported("FunctionTransformer(%s) kw_args is %s", sf.name, describe(v))
	}
	step, err := sf.recognise(kw)
	if err != nil {
		return preprocess.Step{}, "", nil, err
	}
	if err := kw.noOthers(); err != nil {
		return preprocess.Step{}, "", nil, err
	}
	return step, sf.name, kw.axis, nil
}

// plainTransformer checks the FunctionTransformer's own settings: no
// inverse, and a validate that leaves a float64 array as it is.
func plainTransformer(st *dict, fn string) error {
	if v := st.get("inverse_func"); v != nil {
		return unsupported("FunctionTransformer(%s) has inverse_func set (%s)", fn, describe(v))
	}
	if v := st.get("inv_kw_args"); v != nil {
		if d, ok := v.(*dict); !ok || len(d.keys) != 0 {
			return unsupported("FunctionTransformer(%s) has inv_kw_args set", fn)
		}
	}
	switch v := st.get("validate").(type) {
	case nil, bool: // check_array keeps a float64 array as it is
	default:
		return unsupported("FunctionTransformer(%s) validate=%v", fn, describe(v))
	}
	return nil
}

// kwargs reads a FunctionTransformer's kw_args, remembering which keys
// were read so that any other key fails the load.
type kwargs struct {
	fn   string
	d    *dict
	used map[string]bool
	axis []float64 // normalize's wavenumbers
}

func (k *kwargs) get(name string) (any, bool) {
	k.used[name] = true
	if k.d == nil {
		return nil, false
	}
	return k.d.lookup(name)
}

// noOthers fails on a key no recogniser read.
func (k *kwargs) noOthers() error {
	if k.d == nil {
		return nil
	}
	var extra []string
	for _, key := range k.d.keys {
		s, ok := key.(string)
		if !ok {
			return unsupported("%s kw_args has a key of type %T", k.fn, key)
		}
		if !k.used[s] {
			extra = append(extra, s)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		known := make([]string, 0, len(k.used))
		for key := range k.used {
			known = append(known, key)
		}
		sort.Strings(known)
		accepted := "none"
		if len(known) > 0 {
			accepted = strings.Join(known, ", ")
		}
		return unsupported("%s kw_args %s not supported (accepted: %s)", k.fn, strings.Join(extra, ", "), accepted)
	}
	return nil
}

// integer reads an int keyword in [lo, hi]; def when absent (required
// keywords pass required=true).
func (k *kwargs) integer(name string, def, lo, hi int64, required bool) (int, error) {
	v, ok := k.get(name)
	if !ok {
		if required {
			return 0, unsupported("%s needs %s in kw_args", k.fn, name)
		}
		return int(def), nil
	}
	n, isInt := v.(int64)
	if !isInt {
		return 0, unsupported("%s %s=%s: a Python int is required", k.fn, name, describe(v))
	}
	if n < lo || n > hi {
		return 0, unsupported("%s %s=%d outside [%d, %d]", k.fn, name, n, lo, hi)
	}
	return int(n), nil
}

// number reads a float (or int) keyword; within [lo, hi], or (lo, hi)
// when open.
func (k *kwargs) number(name string, def, lo, hi float64, open bool) (float64, error) {
	v, ok := k.get(name)
	if !ok {
		return def, nil
	}
	x, ok := asFloat(v)
	if !ok {
		return 0, unsupported("%s %s=%s: a number is required", k.fn, name, describe(v))
	}
	if open && !(x > lo && x < hi) {
		return 0, unsupported("%s %s=%v outside (%v, %v)", k.fn, name, x, lo, hi)
	}
	if !open && !(x >= lo && x <= hi) {
		return 0, unsupported("%s %s=%v outside [%v, %v]", k.fn, name, x, lo, hi)
	}
	return x, nil
}

// fixed accepts a keyword only at the value that does not change the
// result as the Go step computes it.
func (k *kwargs) fixed(name string, accept func(any) bool, want string) error {
	v, ok := k.get(name)
	if ok && !accept(v) {
		return unsupported("%s %s=%s: only %s is supported", k.fn, name, describe(v), want)
	}
	return nil
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return 0, false
}

// savgolStep: scipy.signal.savgol_filter(X, window_length, polyorder,
// deriv=0, delta=1.0, axis=-1, mode="interp", cval=0.0) on the samples x
// features array, so axis must be the feature axis.
func savgolStep(kw *kwargs) (preprocess.Step, error) {
	w, err := kw.integer("window_length", 0, 3, 2047, true)
	if err != nil {
		return preprocess.Step{}, err
	}
	k, err := kw.integer("polyorder", 0, 0, 10, true)
	if err != nil {
		return preprocess.Step{}, err
	}
	d, err := kw.integer("deriv", 0, 0, 4, false)
	if err != nil {
		return preprocess.Step{}, err
	}
	if w%2 == 0 || k >= w || d > k {
		return preprocess.Step{}, unsupported("savgol_filter window_length=%d, polyorder=%d, deriv=%d: the window must be odd and greater than polyorder, deriv at most polyorder", w, k, d)
	}
	for _, f := range []struct {
		name   string
		accept func(any) bool
		want   string
	}{
		{"delta", func(v any) bool { x, ok := asFloat(v); return ok && x == 1 }, "1"},
		{"axis", func(v any) bool { n, ok := v.(int64); return ok && (n == 1 || n == -1) }, "1 or -1 (the feature axis)"},
		{"mode", func(v any) bool { s, ok := v.(string); return ok && s == "interp" }, `"interp"`},
		{"cval", func(v any) bool { x, ok := asFloat(v); return ok && x == 0 }, "0 (the default; it only matters for mode=\"constant\")"},
	} {
		if err := kw.fixed(f.name, f.accept, f.want); err != nil {
			return preprocess.Step{}, err
		}
	}
	return preprocess.Step{Kind: preprocess.Savgol, Window: w, PolyOrder: k, Deriv: d}, nil
}

// despikeStep: ramanserve_preprocessing.despike(X, threshold=6, width=2,
// wavenumbers=None). Without wavenumbers Python interpolates over the
// point index, which is the model's axis when that is evenly spaced.
func despikeStep(kw *kwargs) (preprocess.Step, error) {
	if v, ok := kw.get("wavenumbers"); ok && v != nil {
		axis, err := axisArg(kw.fn, v)
		if err != nil {
			return preprocess.Step{}, err
		}
		kw.axis = axis
	}
	th, err := kw.number("threshold", 6, 1, 1000, false)
	if err != nil {
		return preprocess.Step{}, err
	}
	w, err := kw.integer("width", 2, 0, 16, false)
	if err != nil {
		return preprocess.Step{}, err
	}
	return preprocess.Step{Kind: preprocess.Despike, Threshold: th, Width: w}, nil
}

// snvStep: ramanserve_preprocessing.snv(X), no keywords.
func snvStep(kw *kwargs) (preprocess.Step, error) {
	return preprocess.Step{Kind: preprocess.SNV}, nil
}

// alsStep: ramanserve_preprocessing.als_baseline(X, lam=1e5, p=0.01,
// iterations=10).
func alsStep(kw *kwargs) (preprocess.Step, error) {
	lam, err := kw.number("lam", 1e5, 1, 1e12, false)
	if err != nil {
		return preprocess.Step{}, err
	}
	p, err := kw.number("p", 0.01, 0, 0.5, true)
	if err != nil {
		return preprocess.Step{}, err
	}
	it, err := kw.integer("iterations", 10, 1, 50, false)
	if err != nil {
		return preprocess.Step{}, err
	}
	return preprocess.Step{Kind: preprocess.ALSBaseline, Lambda: lam, P: p, Iterations: it}, nil
}

// normalizeStep: ramanserve_preprocessing.normalize(X, wavenumbers,
// region); both keywords are required. The wavenumbers become the model's
// axis.
func normalizeStep(kw *kwargs) (preprocess.Step, error) {
	v, ok := kw.get("wavenumbers")
	if !ok {
		return preprocess.Step{}, unsupported("normalize needs wavenumbers in kw_args")
	}
	axis, err := axisArg(kw.fn, v)
	if err != nil {
		return preprocess.Step{}, err
	}
	r, ok := kw.get("region")
	if !ok {
		return preprocess.Step{}, unsupported("normalize needs region in kw_args")
	}
	region, ok := floats(r)
	if !ok || len(region) != 2 || !(region[0] <= region[1]) {
		return preprocess.Step{}, unsupported("normalize region is %s, not (low, high)", describe(r))
	}
	kw.axis = axis
	return preprocess.Step{Kind: preprocess.Normalize, Region: [2]float64{region[0], region[1]}}, nil
}

// axisArg reads a wavenumbers keyword: a list or 1-D array of at least
// two finite numbers. That they increase strictly is the recipe's own
// check of its axis (preprocess.CheckAxis, run by checkRecipe).
func axisArg(fn string, v any) ([]float64, error) {
	axis, ok := floats(v)
	if !ok || len(axis) < 2 {
		return nil, unsupported("%s wavenumbers is %s, not a list or 1-D array of numbers", fn, describe(v))
	}
	return axis, nil
}

// floats reads a 1-D float array, a list or a tuple of finite numbers.
func floats(v any) ([]float64, bool) {
	var items []any
	switch x := v.(type) {
	case *ndarray:
		if x.floats == nil || len(x.shape) != 1 {
			return nil, false
		}
		for _, f := range x.floats {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, false
			}
		}
		return append([]float64(nil), x.floats...), true
	case *list:
		items = x.items
	case tuple:
		items = x
	default:
		return nil, false
	}
	out := make([]float64, len(items))
	for i, it := range items {
		f, ok := asFloat(it)
		if !ok {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

// describe names a value in an error message without echoing its content.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case *global:
		return x.String()
	case *object:
		return "a " + x.class.name
	case string:
		if len(x) > 40 {
			x = x[:40] + "..."
		}
		return fmt.Sprintf("%q", x)
	case int64, float64, bool:
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("a %T", v)
}
