package shadow

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/inference"
)

// Comparison is how the shadow's predictions differ from the active
// model's since the shadow was set (the server maps it to the contract's
// ShadowComparison).
type Comparison struct {
	// N counts the spectra scored by both models.
	N int64
	// Dropped counts the spectra the shadow did not score because the
	// queue was full (or the spectrum too long); the reply never waits.
	Dropped int64
	// Failed counts the spectra the shadow could not score (it refused
	// them: another axis, out of its range); they are not in N.
	Failed   int64
	Analytes [inference.NumAnalytes]AnalyteComparison
}

// AnalyteComparison summarises the differences d = shadow - active of one
// analyte. The figures are meaningful only when N > 0.
type AnalyteComparison struct {
	// N counts the spectra on which both models predicted the analyte.
	N int64
	// MeanDifference is the mean of d (g/L).
	MeanDifference float64
	// RMSD is the root mean square of d (g/L).
	RMSD float64
	// DisagreeShare is the share of the N spectra with |d| > Tolerance.
	DisagreeShare float64
	// Tolerance is the active model's tolerance for the analyte (g/L), as
	// used for the latest spectrum (it changes only when another active
	// model, with another tolerance, is swapped in while the shadow runs);
	// 0 while N is 0.
	Tolerance float64
}

// generation is one shadow from Set to the next Set or Clear: its model
// and its comparison. Items carry the generation they were offered under,
// so a Set never mixes two shadows' figures.
type generation struct {
	model   inference.Model
	version string
	since   time.Time

	dropped atomic.Int64

	mu         sync.Mutex // guards the fields below (the worker writes, Status reads)
	n          int64
	failed     int64
	warned     bool // a failure was logged
	sinkWarned bool // a sink panic was logged
	analytes   [inference.NumAnalytes]runningDifference
}

// runningDifference accumulates d = shadow - active with Welford's
// update: the mean and the sum of squared deviations from it (m2) stay
// accurate over millions of spectra, where running sums of d and d^2
// would lose a small spread around a large offset to cancellation. The
// RMSD follows from both (mean(d^2) = m2/n + mean^2, a sum of two
// non-negative terms).
type runningDifference struct {
	n         int64
	mean      float64
	m2        float64
	disagree  int64
	tolerance float64
}

func (r *runningDifference) add(d, tol float64) {
	r.n++
	delta := d - r.mean
	r.mean += delta / float64(r.n)
	r.m2 += delta * (d - r.mean)
	if math.Abs(d) > tol {
		r.disagree++
	}
	r.tolerance = tol
}

func (r *runningDifference) summary() AnalyteComparison {
	c := AnalyteComparison{N: r.n, Tolerance: r.tolerance}
	if r.n == 0 {
		return c
	}
	n := float64(r.n)
	c.MeanDifference = r.mean
	// mean(d^2) = variance + mean^2, both accurate.
	c.RMSD = math.Sqrt(r.m2/n + r.mean*r.mean)
	c.DisagreeShare = float64(r.disagree) / n
	return c
}

// record adds one spectrum scored by both models.
func (g *generation) record(active, shadow *inference.Prediction, tol inference.Breakdown) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	for a := range inference.NumAnalytes {
		if !active.Concentrations.Valid[a] || !shadow.Concentrations.Valid[a] {
			continue
		}
		g.analytes[a].add(shadow.Concentrations.Value[a]-active.Concentrations.Value[a], tol.Value[a])
	}
}

// fail counts a spectrum the shadow refused; it reports whether this was
// the first.
func (g *generation) fail() (first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed++
	first = !g.warned
	g.warned = true
	return first
}

// firstSinkPanic reports whether no sink panic was logged for this shadow
// yet, and marks one logged.
func (g *generation) firstSinkPanic() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	first := !g.sinkWarned
	g.sinkWarned = true
	return first
}

// snapshot returns the comparison so far, consistent across analytes.
func (g *generation) snapshot() Comparison {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := Comparison{N: g.n, Failed: g.failed, Dropped: g.dropped.Load()}
	for a := range g.analytes {
		c.Analytes[a] = g.analytes[a].summary()
	}
	return c
}
