package inference

import (
	"fmt"
	"math"
	"slices"

	"ramanserve/inference/preprocess"
)

// compileRecipe compiles the model's preprocessing recipe and region
// selection against axis (the full axis, which spectra have, checked by
// setAxis). A recipe that does not apply to the axis, or regions whose
// point count is not the model's feature count, make the model corrupt:
// the parameters were fitted on something else.
func (m *PLSModel) compileRecipe(p *PLSParams, axis []float64) error {
	if len(p.Preprocessing) > 0 {
		pl, err := preprocess.Compile(p.Preprocessing, axis)
		if err != nil {
			return corrupted("preprocessing: %v", err)
		}
		m.pipeline = pl
		m.recipe = slices.Clone(p.Preprocessing)
	}
	if p.Regions == nil {
		return nil // setAxis checked that every point is a feature
	}
	sel, err := preprocess.SelectRegions(axis, p.Regions)
	if err != nil {
		return corrupted("regions: %v", err)
	}
	if len(sel) != m.p {
		return corrupted("regions select %d points of the axis, model has %d features", len(sel), m.p)
	}
	m.selected = sel
	m.regions = slices.Clone(p.Regions)
	return nil
}

// newScratch allocates one caller's buffers (the sync.Pool's New).
func (m *PLSModel) newScratch() any {
	sc := &plsScratch{xs: make([]float64, m.p), out: make([]float64, m.k)}
	if m.pipeline != nil {
		sc.x = make([]float64, m.limits.points)
		sc.ws = m.pipeline.NewWorkspace()
	}
	return sc
}

// applyRecipe fills sc.xs from a validated spectrum's intensities: a copy
// goes through the pipeline (the caller's spectrum is left as it was), the
// selected points are gathered, then centred and scaled as in preprocess.
// A spectrum the recipe cannot apply to (say, a zero band area under
// normalize: every Apply error is a preprocess.ErrDegenerateSpectrum) is
// an invalid spectrum.
func (m *PLSModel) applyRecipe(in []float64, sc *plsScratch) error {
	x := in
	if m.pipeline != nil {
		x = sc.x[:len(in)]
		copy(x, in)
		if _, err := m.pipeline.Apply(x, sc.ws); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidSpectrum, err)
		}
	}
	if m.selected == nil {
		m.preprocess(x, sc.xs)
		return nil
	}
	m.gather(x, sc.xs)
	return nil
}

// gather computes xs_i = (x[selected_i] - XMean_i) / XScale_i, the
// selection and preprocess in one pass.
func (m *PLSModel) gather(x, xs []float64) {
	sel := m.selected[:len(xs)]
	mean := m.xMean[:len(xs)]
	if m.unitScale {
		for i, j := range sel {
			xs[i] = x[j] - mean[i]
		}
		return
	}
	scale := m.xScale[:len(xs)]
	for i, j := range sel {
		xs[i] = (x[j] - mean[i]) / scale[i]
	}
}

// Recipe returns the model's preprocessing recipe (nil for raw
// intensities). The returned value must not be modified.
func (m *PLSModel) Recipe() preprocess.Recipe { return m.recipe }

// Regions returns the model's wavenumber regions (nil when every point of
// the axis enters the model). The returned value must not be modified.
func (m *PLSModel) Regions() [][2]float64 { return m.regions }

// finite reports whether every figure a reply carries is a finite number
// (ReducedScale is not sent, and is +Inf by design for a flat spectrum,
// whose confidence it makes 0).
func (p *Prediction) finite() bool {
	d := &p.Diagnostics
	return allFinite(p.Concentrations.Value[:]) && allFinite(p.Confidence.Value[:]) &&
		allFinite([]float64{d.T2, d.T2Limit, d.ReducedT2, d.Leverage, d.Q, d.QLimit, d.ReducedQ})
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
