package inference

import (
	"fmt"
	"math"
)

// Defaults of ModelOptions. Each one is used when the corresponding option
// is left at its zero value.
const (
	// DefaultAxisTolerance (cm-1) is the largest accepted difference between
	// a spectrum's wavenumber and the model's wavenumber at the same index.
	// 0.5 cm-1 is about a third of the spacing of a 2048-point axis over
	// 200-3200 cm-1 and well inside the +-1 cm-1 wavenumber accuracy
	// instruments are usually specified to; a larger shift moves band
	// positions by a sizeable fraction of a pixel, which a PLS model does
	// not tolerate.
	DefaultAxisTolerance = 0.5
	// DefaultMaxAbsIntensity bounds |intensity|. 1e7 is far above any
	// detector count (16- to 20-bit ADCs, a few accumulations) and any
	// baseline-corrected float, so only garbage (wrong units, overflowed
	// integrations) hits it.
	DefaultMaxAbsIntensity = 1e7
	// DefaultSaturationRun is the number of consecutive points at or above
	// SaturationLevel that marks a spectrum as saturated. A single hot pixel
	// (cosmic ray spike) at full scale is not saturation of a band; a
	// clipped band top spans several pixels.
	DefaultSaturationRun = 3
	// DefaultTolerance (g/L) is the acceptable absolute prediction error per
	// analyte used by the confidence when neither the model nor the server
	// configuration sets one. The analytes are present at tens of g/L, and
	// the HPLC reference method behind the labels repeats to about 1-2 %
	// RSD, i.e. 0.5-1 g/L at 50 g/L: a prediction within 1 g/L agrees with
	// the reference as well as the reference agrees with itself, which is
	// the usual acceptance criterion for a process analyser.
	DefaultTolerance = 1.0
)

// ModelOptions are server-side settings that apply to a model when it is
// built (NewPLSModel). The zero value gives the documented defaults.
type ModelOptions struct {
	// InstrumentAxis is the wavenumber axis (cm-1) of the instrument, from
	// the server configuration. It is used as the model's axis when the
	// model carries none (scikit-learn files carry no axis; the registry may
	// instead supply one from a sidecar in PLSParams.Meta.Wavenumbers, which
	// takes precedence). nil and a model without axis: the axis is not
	// checked, only the number of points.
	InstrumentAxis []float64
	// AxisTolerance (cm-1): see DefaultAxisTolerance. Negative is invalid.
	AxisTolerance float64
	// MaxAbsIntensity: see DefaultMaxAbsIntensity. Negative is invalid.
	MaxAbsIntensity float64
	// SaturationLevel is the detector's full-scale value (e.g. 65535 for a
	// 16-bit ADC). A run of SaturationRun consecutive intensities >= this
	// level is rejected as saturated. 0 disables the check: the full-scale
	// value depends on the detector and cannot be guessed.
	SaturationLevel float64
	// SaturationRun: see DefaultSaturationRun. Negative is invalid.
	SaturationRun int
	// Tolerance per analyte (g/L) for the confidence. A valid entry applies
	// when the model itself (PLSParams.Tolerance) sets none.
	Tolerance Breakdown
}

// resolvedOptions are ModelOptions with defaults filled in.
type resolvedOptions struct {
	axisTolerance   float64
	maxAbsIntensity float64
	saturationLevel float64
	saturationRun   int
}

func (o *ModelOptions) resolve() (resolvedOptions, error) {
	r := resolvedOptions{
		axisTolerance:   o.AxisTolerance,
		maxAbsIntensity: o.MaxAbsIntensity,
		saturationLevel: o.SaturationLevel,
		saturationRun:   o.SaturationRun,
	}
	if !(r.axisTolerance >= 0) || math.IsInf(r.axisTolerance, 0) {
		return r, fmt.Errorf("axis tolerance %v must be finite and >= 0", o.AxisTolerance)
	}
	if r.axisTolerance == 0 {
		r.axisTolerance = DefaultAxisTolerance
	}
	if !(r.maxAbsIntensity >= 0) {
		return r, fmt.Errorf("max intensity %v must be >= 0", o.MaxAbsIntensity)
	}
	if r.maxAbsIntensity == 0 {
		r.maxAbsIntensity = DefaultMaxAbsIntensity
	}
	if math.IsNaN(r.saturationLevel) || math.IsInf(r.saturationLevel, 0) || r.saturationLevel < 0 {
		return r, fmt.Errorf("saturation level %v must be finite and >= 0", o.SaturationLevel)
	}
	if r.saturationRun < 0 {
		return r, fmt.Errorf("saturation run %d must be >= 0", o.SaturationRun)
	}
	if r.saturationRun == 0 {
		r.saturationRun = DefaultSaturationRun
	}
	for a := range NumAnalytes {
		if !o.Tolerance.Valid[a] {
			continue
		}
		if v := o.Tolerance.Value[a]; !(v > 0) || math.IsInf(v, 0) {
			return r, fmt.Errorf("tolerance for %v is %v, must be finite and > 0", Analyte(a), v)
		}
	}
	return r, nil
}
