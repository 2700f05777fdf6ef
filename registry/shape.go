package registry

import (
	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// ShapeOf describes p; nil when p has no axis (then nothing is known).
func ShapeOf(p *inference.PLSParams) *Shape {
	if p == nil {
		return nil
	}
	return shape(p.Meta.Wavenumbers, p.Regions, p.Preprocessing)
}

// shaped is a model that tells its recipe and regions (inference.PLSModel).
type shaped interface {
	Recipe() preprocess.Recipe
	Regions() [][2]float64
}

// shapeOfModel describes a model the registry has opened (an import, an
// adopted file, an entry written before shapes were recorded); nil when it
// has no axis.
func shapeOfModel(m inference.Model) *Shape {
	var recipe preprocess.Recipe
	var regions [][2]float64
	if s, ok := m.(shaped); ok {
		recipe, regions = s.Recipe(), s.Regions()
	}
	return shape(m.Metadata().Wavenumbers, regions, recipe)
}

// shape leaves out a recipe that cannot be written rather than failing
// the staging of a model that was already built from it.
func shape(wn []float64, regions [][2]float64, recipe preprocess.Recipe) *Shape {
	if len(wn) == 0 {
		return nil
	}
	s := &Shape{WavenumberRange: [2]float64{wn[0], wn[len(wn)-1]}, WavenumberCount: len(wn)}
	if len(regions) > 0 {
		s.Regions = append([][2]float64(nil), regions...)
	}
	if len(recipe) > 0 {
		if b, err := recipe.MarshalJSON(); err == nil {
			s.Preprocessing = b
		}
	}
	return s
}
