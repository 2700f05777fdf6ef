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
// A cosmic ray leaves a narrow positive spike: one to width+1 points that
// jump up from the spectrum and drop back down to it, both edges far
// steeper than the spectrum's slope beside them. A Raman band rises and
// falls over many points and its slope changes gradually, so that the
// test below, unlike marking every outlying difference (Whitaker & Hayes,
// Chemometr. Intell. Lab. Syst. 179 (2018) 82-84), leaves the flanks and
// tops of strong, sharp bands alone however high their signal-to-noise.
//
// The scale is the modified z-score (Iglewicz & Hoaglin) of the n-1 first
// differences d_i = x[i+1] - x[i]:
//
//	e_i = d_i - median(d),   s = MAD / 0.6745,   MAD = median(|e|),
//	cut = threshold * s
//
// (|e_i| > cut is |z_i| > threshold). When MAD is 0 (more than half of the
// differences equal, as in flat or quantised stretches) the mean absolute
// deviation takes its place, s = 1.253314 mean(|e|); when that is 0 too,
// or cut is not finite, nothing is a spike. Medians of an even count are
// the mean of the two middle values. Fewer than 3 differences mark
// nothing.
//
//   - A rising edge at i: e_i > cut, and i = 0 or e_{i-1} < e_i / 2 (the
//     jump is more than twice the slope before it).
//   - A falling edge at j: e_j < -cut, and j = n-2 or e_{j+1} > e_j / 2
//     (the drop is more than twice the slope after it).
//   - Scanning i = 0, 1, ...: a rising edge at i followed by a falling edge
//     at some j with i < j <= i+width+1 is a spike over the points
//     i+1..j, with j the last such falling edge; those points are
//     replaced by the straight line, over the wavenumber axis, between
//     x[i] and x[j+1], and the scan goes on at i = j+1. A rising edge with
//     no falling edge in reach is not a spike.
//
// All edges are tested on the differences of the input spectrum. Spikes
// never touch the first or last point (those have only one edge, and are
// left as they are), and repaired runs never touch each other, so that
// every line is drawn between two unrepaired points.
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
	var cut float64 // |d_i - med| > cut is an outlying difference
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
	repaired := 0
	for i := 0; i < m; i++ {
		if !isRise(d, i, med, cut) {
			continue
		}
		j := fallAfter(d, i, width, med, cut)
		if j < 0 {
			continue
		}
		interpolate(x, axis, i, j+1)
		repaired += j - i
		i = j // d[j] falls: the next rise is at j+1 or later
	}
	return repaired
}

// isRise reports whether d[i] is the rising edge of a spike: an outlying
// positive difference more than twice the one before it (both taken from
// the median difference).
func isRise(d []float64, i int, med, cut float64) bool {
	e := d[i] - med
	return e > cut && (i == 0 || d[i-1]-med < e/2)
}

// fallAfter returns the falling edge that closes a spike rising at d[i]:
// the last j in (i, i+width+1] where d[j] is an outlying negative
// difference more than twice the one after it; -1 when there is none.
func fallAfter(d []float64, i, width int, med, cut float64) int {
	for j := min(i+width+1, len(d)-1); j > i; j-- {
		e := d[j] - med
		if e < -cut && (j == len(d)-1 || d[j+1]-med > e/2) {
			return j
		}
	}
	return -1
}

// interpolate replaces x[l+1..r-1] by the straight line, over the axis,
// between x[l] and x[r].
func interpolate(x, axis []float64, l, r int) {
	x0, x1 := x[l], x[r]
	a0, span := axis[l], axis[r]-axis[l]
	for k := l + 1; k < r; k++ {
		x[k] = x0 + (x1-x0)*((axis[k]-a0)/span)
	}
}
