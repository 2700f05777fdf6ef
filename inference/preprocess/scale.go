package preprocess

import (
	"fmt"
	"math"
)

// snv applies the standard normal variate in place (Barnes, Dhanoa &
// Lister, Appl. Spectrosc. 43 (1989) 772-777):
//
//	x_i <- (x_i - mean(x)) / std(x),   std(x) = sqrt(sum (x_i - mean)^2 / n)
//
// with the population (ddof 0) standard deviation, as numpy.std. A flat
// spectrum (every value equal, or a standard deviation of 0) becomes all
// zeros rather than a division by zero.
func snv(x []float64) {
	n := len(x)
	if n == 0 {
		return
	}
	var s0, s1, s2, s3 float64
	flat := true
	first := x[0]
	i := 0
	for ; i+4 <= n; i += 4 {
		v0, v1, v2, v3 := x[i], x[i+1], x[i+2], x[i+3]
		s0 += v0
		s1 += v1
		s2 += v2
		s3 += v3
		flat = flat && v0 == first && v1 == first && v2 == first && v3 == first
	}
	for ; i < n; i++ {
		s0 += x[i]
		flat = flat && x[i] == first
	}
	mean := (s0 + s1 + s2 + s3) / float64(n)
	s0, s1, s2, s3 = 0, 0, 0, 0
	i = 0
	for ; i+4 <= n; i += 4 {
		d0, d1, d2, d3 := x[i]-mean, x[i+1]-mean, x[i+2]-mean, x[i+3]-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < n; i++ {
		d := x[i] - mean
		s0 += d * d
	}
	std := math.Sqrt((s0 + s1 + s2 + s3) / float64(n))
	if flat || std == 0 {
		for i := range x {
			x[i] = 0
		}
		return
	}
	inv := 1 / std
	for i := range x {
		x[i] = (x[i] - mean) * inv
	}
}

// normalizePlan divides by the band area over an inclusive region.
//
// The area is the trapezoidal rule over the axis points a_lo..a_hi inside
// [low, high] (intensity x cm-1, as numpy.trapz(x[lo:hi+1], axis[lo:hi+1])):
//
//	area = sum_{i=lo..hi-1} (x_i + x_{i+1}) (a_{i+1} - a_i) / 2 = sum_i w_i x_i
//
// Compile stores the weights w; a zero or non-finite area is an error.
type normalizePlan struct {
	lo      int
	weights []float64
	region  [2]float64
}

func newNormalizePlan(i int, region [2]float64, axis []float64) (*normalizePlan, error) {
	field := stepField(i, "region")
	lo, hi, err := regionRange(field, region, axis)
	if err != nil {
		return nil, err
	}
	if hi-lo+1 < 2 {
		return nil, fieldErr(field, "[%v, %v] holds %d axis point; the band area needs at least 2", region[0], region[1], hi-lo+1)
	}
	w := make([]float64, hi-lo+1)
	for k := lo; k < hi; k++ {
		half := (axis[k+1] - axis[k]) / 2
		w[k-lo] += half
		w[k+1-lo] += half
	}
	return &normalizePlan{lo: lo, weights: w, region: region}, nil
}

func (p *normalizePlan) apply(x []float64) error {
	band := x[p.lo : p.lo+len(p.weights)]
	var a0, a1 float64
	i := 0
	for ; i+2 <= len(band); i += 2 {
		a0 += p.weights[i] * band[i]
		a1 += p.weights[i+1] * band[i+1]
	}
	if i < len(band) {
		a0 += p.weights[i] * band[i]
	}
	area := a0 + a1
	if area == 0 || math.IsNaN(area) || math.IsInf(area, 0) {
		return fmt.Errorf("the band area over [%v, %v] is %v; normalize needs a finite, non-zero area", p.region[0], p.region[1], area)
	}
	inv := 1 / area
	for i := range x {
		x[i] *= inv
	}
	return nil
}
