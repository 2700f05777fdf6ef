package preprocess

import "math"

// Modified z-score constants (Iglewicz & Hoaglin 1993): 0.6745 is the
// 0.75 quantile of the standard normal, so that MAD/0.6745 estimates the
// standard deviation; 1.253314 = sqrt(pi/2) does the same for the mean
// absolute deviation, the fallback when the MAD is zero.
const (
	madConstant    = 0.6745
	meanADConstant = 1.253314
)

// despike removes cosmic-ray spikes from x in place and returns the
// number of points it replaced.
//
// The rule (Whitaker & Hayes, Chemometr. Intell. Lab. Syst. 179 (2018)
// 82-84), over the n-1 first differences d_i = x[i+1] - x[i]:
//
//	z_i = 0.6745 (d_i - median(d)) / MAD,   MAD = median(|d - median(d)|)
//
// and |z_i| > threshold marks point i+1 as a spike. When MAD is 0 (more
// than half of the differences equal, as in flat or quantised stretches)
// the mean absolute deviation takes its place:
// z_i = (d_i - median(d)) / (1.253314 mean(|d - median(d)|)); when that is
// 0 too, the differences are all equal and nothing is a spike. Medians of
// an even count are the mean of the two middle values. Fewer than 3
// differences mark nothing.
//
// Repair: every spike marks itself and width neighbours on each side
// (clipped to the spectrum). Each maximal run of marked points [a, b] is
// replaced by the straight line, over the wavenumber axis, between the
// nearest clean points x[a-1] and x[b+1]; a run touching an end takes the
// value of its one clean neighbour; a spectrum marked everywhere is left
// as it is.
func despike(x, axis []float64, threshold float64, width int, ws *Workspace) int {
	n := len(x)
	m := n - 1
	if m < 3 {
		return 0
	}
	d, sel := ws.a[:m], ws.b[:m]
	for i := range d {
		d[i] = x[i+1] - x[i]
	}
	copy(sel, d)
	med := median(sel)
	var sumAbs float64
	for i, v := range d {
		sel[i] = math.Abs(v - med)
		sumAbs += sel[i]
	}
	mad := median(sel)
	var cut float64 // |d_i - med| > cut marks a spike
	switch {
	case mad > 0:
		cut = threshold * mad / madConstant
	case sumAbs > 0:
		cut = threshold * meanADConstant * sumAbs / float64(m)
	default:
		return 0
	}
	if math.IsNaN(cut) || math.IsInf(cut, 0) {
		return 0
	}
	mask := ws.mask[:n]
	for i := range mask {
		mask[i] = false
	}
	spikes := false
	for i, v := range d {
		if math.Abs(v-med) > cut {
			spikes = true
			lo, hi := max(i+1-width, 0), min(i+1+width, n-1)
			for j := lo; j <= hi; j++ {
				mask[j] = true
			}
		}
	}
	if !spikes {
		return 0
	}
	return repairRuns(x, axis, mask)
}

// repairRuns replaces each run of masked points by linear interpolation
// between its clean neighbours and returns the number of points replaced.
func repairRuns(x, axis []float64, mask []bool) int {
	n := len(x)
	repaired := 0
	for a := 0; a < n; {
		if !mask[a] {
			a++
			continue
		}
		b := a
		for b+1 < n && mask[b+1] {
			b++
		}
		left, right := a-1, b+1
		switch {
		case left >= 0 && right < n:
			x0, x1 := x[left], x[right]
			a0, span := axis[left], axis[right]-axis[left]
			for j := a; j <= b; j++ {
				x[j] = x0 + (x1-x0)*((axis[j]-a0)/span)
			}
		case left >= 0:
			for j := a; j <= b; j++ {
				x[j] = x[left]
			}
		case right < n:
			for j := a; j <= b; j++ {
				x[j] = x[right]
			}
		default:
			return 0
		}
		repaired += b - a + 1
		a = b + 1
	}
	return repaired
}
