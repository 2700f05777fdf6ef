package registry

import (
	"encoding/json"

	"ramanserve/inference"
)

// Shape is what a model expects of a spectrum and does to it before the
// regression, recorded in the index entry when the registry stages a
// trained model, so that GET /model/{version} answers without opening the
// artifact.
type Shape struct {
	// WavenumberRange is the first and last point of the model's axis
	// (cm-1) and WavenumberCount its length, the spectrum's point count.
	WavenumberRange [2]float64 `json:"wavenumber_range"`
	WavenumberCount int        `json:"wavenumber_count"`
	// Regions are the inclusive wavenumber ranges that enter the model;
	// nil when every point does.
	Regions [][2]float64 `json:"regions,omitempty"`
	// Preprocessing is the recipe in the contract's JSON form
	// (preprocess.Recipe.MarshalJSON); absent for raw intensities.
	Preprocessing json.RawMessage `json:"preprocessing,omitempty"`
}

// ShapeOf describes p; nil when p has no axis (then nothing is known).
// A recipe that cannot be written is left out rather than failing the
// staging of a model that was already built from it.
func ShapeOf(p *inference.PLSParams) *Shape {
	if p == nil || len(p.Meta.Wavenumbers) == 0 {
		return nil
	}
	wn := p.Meta.Wavenumbers
	s := &Shape{WavenumberRange: [2]float64{wn[0], wn[len(wn)-1]}, WavenumberCount: len(wn)}
	if len(p.Regions) > 0 {
		s.Regions = append([][2]float64(nil), p.Regions...)
	}
	if len(p.Preprocessing) > 0 {
		if b, err := p.Preprocessing.MarshalJSON(); err == nil {
			s.Preprocessing = b
		}
	}
	return s
}
