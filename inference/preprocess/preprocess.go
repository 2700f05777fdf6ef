// Package preprocess applies a model's preprocessing recipe to one spectrum:
// the ordered steps of TrainingMeta.preprocessing (despike, savgol, snv,
// als_baseline, normalize), identically at training and at predict time,
// and the selection of wavenumber regions.
//
// A Recipe is plain data (what the contract and the model artifact carry).
// Compile checks it against an axis and returns a Pipeline, which is
// immutable and safe for concurrent use; each caller brings its own
// Workspace, so the hot path allocates nothing.
//
// The formulas, with references, are on each step's function and in
// api/artifact.md, which a NumPy/SciPy user follows to reproduce a
// prediction.
package preprocess

import "errors"

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

// Pipeline is a Recipe compiled for one axis.
type Pipeline struct {
	// filled in by Compile
}

// Workspace holds one caller's scratch buffers for Apply.
type Workspace struct {
	// filled in by Compile's pipeline
}

// errNotBuilt marks the skeleton until the steps are implemented.
var errNotBuilt = errors.New("preprocess: not implemented yet")

// ParseRecipe reads the JSON form of a recipe (an array of the contract's
// PreprocessingStep objects), fills in defaults and checks each step's
// bounds that do not depend on an axis. Errors wrap ErrInvalidRecipe.
func ParseRecipe(b []byte) (Recipe, error) { return nil, errNotBuilt }

// MarshalJSON writes the recipe in the contract's form with every
// parameter explicit, so that ParseRecipe reads back the same Recipe.
func (r Recipe) MarshalJSON() ([]byte, error) { return nil, errNotBuilt }

// Compile checks r against axis (strictly increasing wavenumbers, cm-1)
// and returns the pipeline that applies it to spectra of len(axis)
// points. Errors wrap ErrInvalidRecipe and name the field.
func Compile(r Recipe, axis []float64) (*Pipeline, error) { return nil, errNotBuilt }

// NewWorkspace returns scratch buffers for Apply; one per goroutine.
func (p *Pipeline) NewWorkspace() *Workspace { return &Workspace{} }

// Apply preprocesses x in place. Errors wrap ErrDegenerateSpectrum.
func (p *Pipeline) Apply(x []float64, ws *Workspace) (Stats, error) { return Stats{}, errNotBuilt }

// SelectRegions returns the sorted indices of the axis points inside any
// of the inclusive ranges (overlaps merged). Errors wrap ErrInvalidRecipe:
// low > high, a range outside the axis or holding no point.
func SelectRegions(axis []float64, regions [][2]float64) ([]int, error) { return nil, errNotBuilt }
