package inference

import (
	"fmt"
	"math"
)

// spectrumLimits is what a model checks a spectrum against before applying
// itself to it.
type spectrumLimits struct {
	points          int       // p, the model's wavenumber_count
	axis            []float64 // model axis (cm-1), nil when unknown
	axisTolerance   float64   // cm-1
	maxAbsIntensity float64
	saturationLevel float64 // 0: check disabled
	saturationRun   int
}

// validateSpectrum checks s against the limits. The checks and their order
// (the first failing one is reported) are:
//
//	INVALID_SPECTRUM (ErrInvalidSpectrum):
//	 1. no intensities (nil spectrum or empty array)
//	 2. no wavenumbers
//	 3. wavenumbers and intensities of different lengths
//	 4. length other than the model's wavenumber_count
//	 5. a NaN or Inf wavenumber (first index named)
//	 6. a NaN or Inf intensity (first index named)
//	 7. wavenumbers not strictly increasing (first index named)
//	SPECTRUM_OUT_OF_RANGE (ErrSpectrumOutOfRange), only when the model has an axis:
//	 8. first or last wavenumber outside the model's wavenumber_range widened
//	    by the axis tolerance
//	 9. |wavenumber[i] - model_axis[i]| > axis tolerance (first index named)
//	SPECTRUM_OUT_OF_RANGE, always:
//	10. |intensity[i]| > max intensity (first index named)
//	11. SaturationRun consecutive intensities >= SaturationLevel, when a
//	    saturation level is configured (first run named)
//
// The common case (a valid spectrum) is decided by one pass over the data;
// only a failing spectrum pays for the ordered, detailed re-check.
func (l *spectrumLimits) validateSpectrum(s *Spectrum) error {
	if s == nil || len(s.Intensities) == 0 || len(s.Wavenumbers) == 0 ||
		len(s.Wavenumbers) != len(s.Intensities) || len(s.Intensities) != l.points {
		return l.explain(s)
	}
	if !l.quickCheck(s.Wavenumbers, s.Intensities) {
		return l.explain(s)
	}
	return nil
}

// quickCheck reports whether the spectrum passes every check; both slices
// have length l.points.
func (l *spectrumLimits) quickCheck(wn, in []float64) bool {
	in = in[:len(wn)]
	maxAbs := l.maxAbsIntensity
	prev := math.Inf(-1)
	if axis := l.axis; axis != nil {
		axis = axis[:len(wn)]
		tol := l.axisTolerance
		for i, w := range wn {
			// Negated comparisons are false for NaN, so they catch NaN and,
			// with the bounds, Inf.
			if !(w > prev) || !(math.Abs(w-axis[i]) <= tol) || !(math.Abs(in[i]) <= maxAbs) {
				return false
			}
			prev = w
		}
	} else {
		for i, w := range wn {
			if !(w > prev) || !(w <= math.MaxFloat64) || !(math.Abs(in[i]) <= maxAbs) {
				return false
			}
			prev = w
		}
	}
	if l.saturationLevel > 0 {
		if _, _, found := l.saturatedRun(in); found {
			return false
		}
	}
	return true
}

// saturatedRun finds the first run of at least saturationRun consecutive
// intensities >= saturationLevel and returns its bounds [from, to].
func (l *spectrumLimits) saturatedRun(in []float64) (from, to int, found bool) {
	run := 0
	for i, x := range in {
		if x >= l.saturationLevel {
			run++
			continue
		}
		if run >= l.saturationRun {
			return i - run, i - 1, true
		}
		run = 0
	}
	if run >= l.saturationRun {
		return len(in) - run, len(in) - 1, true
	}
	return 0, 0, false
}

func invalidSpectrum(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidSpectrum, fmt.Sprintf(format, args...))
}

func spectrumOutOfRange(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSpectrumOutOfRange, fmt.Sprintf(format, args...))
}

// explain runs the checks in their documented order and returns the first
// failure. It is the slow path, used only for spectra that fail.
func (l *spectrumLimits) explain(s *Spectrum) error {
	switch {
	case s == nil || len(s.Intensities) == 0:
		return invalidSpectrum("spectrum has no intensities")
	case len(s.Wavenumbers) == 0:
		return invalidSpectrum("spectrum has no wavenumbers")
	case len(s.Wavenumbers) != len(s.Intensities):
		return invalidSpectrum("wavenumbers has %d values but intensities has %d",
			len(s.Wavenumbers), len(s.Intensities))
	case len(s.Intensities) != l.points:
		return invalidSpectrum("spectrum has %d points, the model's wavenumber_count is %d",
			len(s.Intensities), l.points)
	}
	wn, in := s.Wavenumbers, s.Intensities
	for i, w := range wn {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return invalidSpectrum("wavenumbers[%d] is %v", i, w)
		}
	}
	for i, x := range in {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return invalidSpectrum("intensities[%d] is %v", i, x)
		}
	}
	for i := 1; i < len(wn); i++ {
		if !(wn[i] > wn[i-1]) {
			return invalidSpectrum("wavenumbers not strictly increasing at index %d (%v after %v)",
				i, wn[i], wn[i-1])
		}
	}
	if axis := l.axis; axis != nil {
		lo, hi, tol := axis[0], axis[len(axis)-1], l.axisTolerance
		if wn[0] < lo-tol || wn[len(wn)-1] > hi+tol {
			return spectrumOutOfRange("spectrum axis [%v, %v] cm-1 lies outside the model's wavenumber_range [%v, %v] (tolerance %v cm-1)",
				wn[0], wn[len(wn)-1], lo, hi, tol)
		}
		for i, w := range wn {
			if d := w - axis[i]; math.Abs(d) > tol {
				return spectrumOutOfRange("wavenumbers[%d] = %v cm-1 departs from the model axis (%v cm-1) by %.4g cm-1, more than the tolerance %v cm-1",
					i, w, axis[i], d, tol)
			}
		}
	}
	for i, x := range in {
		if math.Abs(x) > l.maxAbsIntensity {
			return spectrumOutOfRange("intensities[%d] = %v exceeds the bound |intensity| <= %v",
				i, x, l.maxAbsIntensity)
		}
	}
	if l.saturationLevel > 0 {
		if from, to, found := l.saturatedRun(in); found {
			return spectrumOutOfRange("intensities[%d..%d] are at or above the saturation level %v (%d or more consecutive points mean a clipped band)",
				from, to, l.saturationLevel, l.saturationRun)
		}
	}
	// quickCheck and explain disagree; report rather than predict on data
	// nothing vouched for.
	return invalidSpectrum("spectrum failed validation")
}
