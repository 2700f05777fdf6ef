// Package preprocess applies a model's preprocessing recipe to one spectrum:
// the ordered steps of TrainingMeta.preprocessing (despike, savgol, snv,
// als_baseline, normalize), identically at training and at predict time,
// and the selection of wavenumber regions.
//
// A Recipe is plain data (what the contract and the model artifact carry):
// ParseRecipe reads its JSON form strictly and fills in defaults, and
// Recipe.MarshalJSON writes it back with every parameter explicit. Compile
// checks it against an axis and returns a Pipeline, which is immutable and
// safe for concurrent use; each caller brings its own Workspace, so that
// Pipeline.Apply, which works in place, allocates nothing.
//
// The steps, on a spectrum x of n points over the axis a (cm-1):
//
//   - despike: narrow positive spikes of 1 to width+1 points. With the
//     first differences d_i = x_{i+1} - x_i, e_i = d_i - median(d) and
//     c = threshold * median(|e|) / 0.6745 (the modified z-score of the
//     differences, the scale of Whitaker & Hayes, Chemometr. Intell. Lab.
//     Syst. 179 (2018) 82-84; 1.253314 mean(|e|) takes the MAD's place
//     when it is 0, and when that is 0 too nothing is a spike): a rising
//     edge is an e_i > c with e_{i-1} < e_i/2, a falling edge an e_j < -c
//     with e_{j+1} > e_j/2. Scanning i upwards, a rising edge at i and the
//     last falling edge j in (i, i+width+1] make points i+1..j a spike,
//     replaced by the straight line over a between x_i and x_{j+1}; the
//     scan goes on after j. A band's slope changes gradually, so its
//     flanks and top are no spike however high its signal-to-noise.
//     Stats.Repaired counts the replaced points.
//   - savgol (Savitzky & Golay, Anal. Chem. 36 (1964) 1627-1639): the
//     deriv-th derivative, over the point index, of the least-squares
//     polynomial of degree polyorder through the window around each point;
//     the first and last window/2 points take the polynomial fitted to the
//     first or last window points. This is
//     scipy.signal.savgol_filter(x, window, polyorder, deriv, delta=1,
//     mode="interp"); the coefficients here are exact to 1e-13 for every
//     window and order (SciPy's own lose digits at large windows and
//     orders). The first derivative with polyorder 1 or 2, the common
//     case, runs on running sums in O(1) per point.
//   - snv (Barnes, Dhanoa & Lister, Appl. Spectrosc. 43 (1989) 772-777):
//     (x - mean(x)) / std(x), population standard deviation; a flat
//     spectrum becomes all zeros.
//   - als_baseline (Eilers & Boelens, 2005): iterations rounds of solving
//     (W + lam D'D) z = W x, D the second differences, W = I in the first
//     round and then w_i = p where x_i > z_i, 1 - p elsewhere; x - z is the
//     result. Solved by a banded (twisted) L D L' factorisation, O(n) per
//     round; a round whose weights repeat the previous round's ends the
//     rounds early, with the same result.
//   - normalize: x / area, area = the trapezoidal integral of x over the
//     axis points inside [low, high] (intensity x cm-1); a zero or
//     non-finite area is ErrDegenerateSpectrum.
//
// The helper module examples/python/ramanserve_preprocessing.py is the same
// in NumPy/SciPy; testdata/reference.py runs recipes through it, and the
// parity tests hold the two together; api/artifact.md gives a NumPy/SciPy user the
// formulas to reproduce a prediction.
package preprocess

import (
	"errors"
	"fmt"
	"math"
)

// Errors. Messages name the field, for example "preprocessing[1].window".
var (
	// ErrInvalidRecipe: a recipe or region cannot apply to the axis (the
	// trainer wraps it as trainer.ErrInvalidOptions).
	ErrInvalidRecipe = errors.New("invalid preprocessing recipe")
	// ErrDegenerateSpectrum: a spectrum the recipe cannot be applied to,
	// for example a zero band area under normalize (the model wraps it as
	// inference.ErrInvalidSpectrum).
	ErrDegenerateSpectrum = errors.New("spectrum cannot be preprocessed")
)

// Kind names a step, as in the contract's `step` field.
type Kind string

// The step kinds of the contract's PreprocessingStep.
const (
	Despike     Kind = "despike"
	Savgol      Kind = "savgol"
	SNV         Kind = "snv"
	ALSBaseline Kind = "als_baseline"
	Normalize   Kind = "normalize"
)

// Step is one step with every parameter resolved (defaults filled in);
// fields another Kind uses are zero.
type Step struct {
	Kind Kind

	// despike
	Threshold float64
	Width     int

	// savgol
	Window, PolyOrder, Deriv int

	// als_baseline
	Lambda     float64
	P          float64
	Iterations int

	// normalize: an inclusive wavenumber range, cm-1.
	Region [2]float64
}

// Recipe is an ordered list of steps.
type Recipe []Step

// Stats reports what Apply did to one spectrum.
type Stats struct {
	// Repaired is the number of points despike steps replaced.
	Repaired int
}

// Pipeline is a Recipe compiled for one axis: every step's checks done and
// its coefficients precomputed. It is immutable and safe for concurrent
// use.
type Pipeline struct {
	recipe Recipe
	axis   []float64
	stages []stage
}

// stage is one compiled step; only the plan of its kind is set.
type stage struct {
	index int // position in the recipe, for error messages
	step  Step
	sg    *savgolPlan
	als   *alsPlan
	norm  *normalizePlan
}

// Workspace holds one caller's scratch buffers for Apply. The zero value
// is usable (Apply then sizes it on first use); NewWorkspace sizes it up
// front so that no Apply allocates. A Workspace must not be used by two
// goroutines at once.
type Workspace struct {
	n    int
	a, b []float64 // despike differences and selection copy; savgol input copy
	// als_baseline: weights, right-hand side / solution, LDL' factors.
	w, z, d, l1, l2 []float64
}

func (ws *Workspace) size(n int) {
	if ws.n == n && len(ws.a) == n {
		return
	}
	ws.n = n
	ws.a = make([]float64, n)
	ws.b = make([]float64, n)
	ws.w = make([]float64, n)
	ws.z = make([]float64, n)
	ws.d = make([]float64, n)
	ws.l1 = make([]float64, n)
	ws.l2 = make([]float64, n)
}

// CheckAxis reports whether axis can carry a recipe or regions: at least
// one point, every value finite and strictly increasing. Errors wrap
// ErrInvalidRecipe and name the field "wavenumbers".
func CheckAxis(axis []float64) error {
	if len(axis) == 0 {
		return fieldErr("wavenumbers", "the axis has no point")
	}
	for i, v := range axis {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fieldErr(fmt.Sprintf("wavenumbers[%d]", i), "%v is not finite", v)
		}
		if i > 0 && !(v > axis[i-1]) {
			return fieldErr(fmt.Sprintf("wavenumbers[%d]", i), "%v does not increase on %v: the axis must be strictly increasing", v, axis[i-1])
		}
	}
	return nil
}

// Compile checks r against axis (strictly increasing wavenumbers, cm-1)
// and returns the pipeline that applies it to spectra of len(axis)
// points. Errors wrap ErrInvalidRecipe and name the field, for example
// "preprocessing[1].window".
//
// Besides the contract's schema bounds and the recipe's cost bound
// (checkCost, as ParseRecipe) it checks, per step: savgol's window odd,
// greater than polyorder and at most len(axis), deriv at most polyorder;
// normalize's region with low <= high, inside [axis[0], axis[len-1]] and
// holding at least two axis points.
func Compile(r Recipe, axis []float64) (*Pipeline, error) {
	if err := CheckAxis(axis); err != nil {
		return nil, err
	}
	if err := r.checkBounds(); err != nil {
		return nil, err
	}
	p := &Pipeline{
		recipe: append(Recipe(nil), r...),
		axis:   append([]float64(nil), axis...),
		stages: make([]stage, len(r)),
	}
	for i, s := range r {
		st := stage{index: i, step: s}
		var err error
		switch s.Kind {
		case Savgol:
			st.sg, err = newSavgolPlan(i, s, len(axis))
		case ALSBaseline:
			st.als = newALSPlan(s, len(axis))
		case Normalize:
			st.norm, err = newNormalizePlan(i, s.Region, p.axis)
		}
		if err != nil {
			return nil, err
		}
		p.stages[i] = st
	}
	return p, nil
}

// Recipe returns a copy of the recipe p was compiled from.
func (p *Pipeline) Recipe() Recipe { return append(Recipe(nil), p.recipe...) }

// Len is the number of points of the spectra p applies to.
func (p *Pipeline) Len() int { return len(p.axis) }

// NewWorkspace returns scratch buffers for Apply; one per goroutine.
func (p *Pipeline) NewWorkspace() *Workspace {
	ws := &Workspace{}
	ws.size(len(p.axis))
	return ws
}

// Apply preprocesses x in place, step after step. Errors wrap
// ErrDegenerateSpectrum: x of another length than the axis, or a spectrum
// a step cannot apply to (normalize over a zero or non-finite band area).
// On error x holds the steps applied so far. With a workspace from
// NewWorkspace, Apply allocates nothing; a nil ws is an error.
func (p *Pipeline) Apply(x []float64, ws *Workspace) (Stats, error) {
	var st Stats
	if len(x) != len(p.axis) {
		return st, fmt.Errorf("%w: %d points, the recipe's axis has %d", ErrDegenerateSpectrum, len(x), len(p.axis))
	}
	if ws == nil {
		return st, fmt.Errorf("%w: no workspace", ErrDegenerateSpectrum)
	}
	ws.size(len(x))
	for i := range p.stages {
		s := &p.stages[i]
		switch s.step.Kind {
		case Despike:
			st.Repaired += despike(x, p.axis, s.step.Threshold, s.step.Width, ws)
		case Savgol:
			s.sg.apply(x, ws.a)
		case SNV:
			snv(x)
		case ALSBaseline:
			s.als.apply(x, ws)
		case Normalize:
			if err := s.norm.apply(x); err != nil {
				return st, fmt.Errorf("%w: %s: %v", ErrDegenerateSpectrum, stepField(s.index, "region"), err)
			}
		}
	}
	return st, nil
}
