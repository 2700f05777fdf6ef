package batches

import (
	"math"
	"sort"
)

// curve is one series of one reference batch: maturities in ascending
// order and the values at them.
type curve struct{ x, y []float64 }

// at is the curve's value at x, linear between its neighbours; false
// outside the curve's range.
func (c *curve) at(x float64) (float64, bool) {
	n := len(c.x)
	if n == 0 || x < c.x[0] || x > c.x[n-1] {
		return 0, false
	}
	i := sort.SearchFloat64s(c.x, x) // first x[i] >= x
	if c.x[i] == x {
		return c.y[i], true
	}
	x0, x1, y0, y1 := c.x[i-1], c.x[i], c.y[i-1], c.y[i]
	return y0 + (y1-y0)*(x-x0)/(x1-x0), true
}

// Bands are the control bands of the reference batches: per series, the
// mean and standard deviation across the batches at each maturity of
// Grid (NaN where fewer than MinBandBatches batches reach it).
type Bands struct {
	Maturity Maturity
	// References are the batches the bands are made of.
	References []string
	Grid       []float64
	Mean, SD   [NumSeries][]float64
	// N counts the batches that reach each grid point.
	N [NumSeries][]int
}

// BandBuilder gathers reference trajectories one at a time, keeping only
// their series, and builds the bands from them.
type BandBuilder struct {
	maturity Maturity
	ids      []string
	curves   [][NumSeries]curve
}

// NewBandBuilder returns a builder of bands over maturity m.
func NewBandBuilder(m Maturity) *BandBuilder { return &BandBuilder{maturity: m} }

// Add takes one reference batch's trajectory (of the builder's
// maturity); a trajectory without points adds nothing.
func (b *BandBuilder) Add(t Trajectory) {
	var cs [NumSeries]curve
	any := false
	for s := range NumSeries {
		for i := range t.Points {
			p := &t.Points[i]
			if !p.Has[s] {
				continue
			}
			c := &cs[s]
			// Points of one maturity (equal times, a repeated scan_seq)
			// are averaged, so that the curve is a function of maturity.
			if n := len(c.x); n > 0 && c.x[n-1] == p.Maturity {
				k := 1
				for j := i - 1; j >= 0 && t.Points[j].Maturity == p.Maturity; j-- {
					if t.Points[j].Has[s] {
						k++
					}
				}
				c.y[n-1] += (p.Values[s] - c.y[n-1]) / float64(k)
				continue
			}
			c.x, c.y = append(c.x, p.Maturity), append(c.y, p.Values[s])
			any = true
		}
	}
	if !any {
		return
	}
	b.ids = append(b.ids, t.BatchID)
	b.curves = append(b.curves, cs)
}

// Build returns the bands; nil when no reference batch had a point.
func (b *BandBuilder) Build() *Bands {
	if len(b.curves) == 0 {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, cs := range b.curves {
		for s := range cs {
			if n := len(cs[s].x); n > 0 {
				lo, hi = math.Min(lo, cs[s].x[0]), math.Max(hi, cs[s].x[n-1])
			}
		}
	}
	out := &Bands{Maturity: b.maturity, References: b.ids, Grid: make([]float64, GridPoints)}
	for g := range out.Grid {
		out.Grid[g] = lo + (hi-lo)*float64(g)/float64(GridPoints-1)
	}
	out.Grid[GridPoints-1] = hi
	for s := range NumSeries {
		mean, sd, n := make([]float64, GridPoints), make([]float64, GridPoints), make([]int, GridPoints)
		for g, x := range out.Grid {
			// Welford's running mean and sum of squares.
			var k int
			var m, m2 float64
			for _, cs := range b.curves {
				v, ok := cs[s].at(x)
				if !ok {
					continue
				}
				k++
				d := v - m
				m += d / float64(k)
				m2 += d * (v - m)
			}
			n[g] = k
			if k < MinBandBatches {
				mean[g], sd[g] = math.NaN(), math.NaN()
				continue
			}
			mean[g], sd[g] = m, math.Sqrt(m2/float64(k-1))
		}
		out.Mean[s], out.SD[s], out.N[s] = mean, sd, n
	}
	return out
}

// At is series s's band at maturity x: mean and standard deviation,
// linear between the grid points around x; false where the band does
// not reach (outside the grid, or next to a grid point with too few
// batches).
func (b *Bands) At(s Series, x float64) (mean, sd float64, ok bool) {
	if b == nil {
		return 0, 0, false
	}
	g := b.Grid
	n := len(g)
	if n == 0 || s < 0 || s >= NumSeries || !(x >= g[0] && x <= g[n-1]) {
		return 0, 0, false
	}
	i := sort.SearchFloat64s(g, x)
	if g[i] == x {
		mean, sd = b.Mean[s][i], b.SD[s][i]
		return mean, sd, finite(mean) && finite(sd)
	}
	f := (x - g[i-1]) / (g[i] - g[i-1])
	mean = b.Mean[s][i-1] + f*(b.Mean[s][i]-b.Mean[s][i-1])
	sd = b.SD[s][i-1] + f*(b.SD[s][i]-b.SD[s][i-1])
	return mean, sd, finite(mean) && finite(sd)
}

// Judgement is how a trajectory's points stand against the bands, per
// series: Judged counts the points a band reaches, Outside lists those
// beyond mean ± BandWidth standard deviations (indexes into Points).
type Judgement struct {
	Judged  [NumSeries]int
	Outside [NumSeries][]int
}

// Judge compares t's points with b (nil bands judge nothing).
func Judge(t *Trajectory, b *Bands) Judgement {
	var j Judgement
	if b == nil {
		return j
	}
	for i := range t.Points {
		p := &t.Points[i]
		for s := range NumSeries {
			if !p.Has[s] {
				continue
			}
			mean, sd, ok := b.At(s, p.Maturity)
			if !ok {
				continue
			}
			j.Judged[s]++
			if math.Abs(p.Values[s]-mean) > BandWidth*sd {
				j.Outside[s] = append(j.Outside[s], i)
			}
		}
	}
	return j
}
