package inference

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
)

// MaxTopContributions caps the number of variables a prediction may ask to
// see by contribution: enough to name the bands behind an alarm, small
// enough that the reply stays a few KiB and the selection a single pass.
const MaxTopContributions = 64

// ErrNoContributions: the model cannot explain its statistics variable by
// variable (it computes neither T2 nor Q, or its variables have no
// wavenumbers). The transport maps it to a refused request, not to a bad
// spectrum: the spectrum may be fine, the question is not one this model
// answers.
var ErrNoContributions = errors.New("the model has no contributions to report")

// VariableContribution is one model variable's share of a statistic.
type VariableContribution struct {
	Wavenumber float64 // cm-1, of the axis point the variable is
	Value      float64
}

// RegionContribution is the sum of the contributions of the variables of
// one region of the model.
type RegionContribution struct {
	Region [2]float64 // [low, high] cm-1, as the model defines it
	Value  float64
}

// ContributionSummary is what a reply carries of one statistic's
// contributions: the statistic itself, its largest contributions and its
// contributions summed per region. Regions add up to Total (to rounding):
// every variable belongs to exactly one region.
type ContributionSummary struct {
	Total   float64
	Top     []VariableContribution // largest Value first
	Regions []RegionContribution   // in the model's region order
}

// Contributions explains a prediction's T2 and Q variable by variable. A
// summary is valid only when its Has flag is set, as the statistic is in
// Diagnostics. Its slices are reused from call to call: a caller that
// keeps a Contributions across predictions allocates only on the first.
type Contributions struct {
	HasT2 bool
	T2    ContributionSummary
	HasQ  bool
	Q     ContributionSummary
}

// ContributionModel is a Model that can also say which variables make up
// its T2 and Q. It is a separate interface so that models which cannot
// (test doubles, future model kinds) stay Models.
type ContributionModel interface {
	Model
	// CanExplain returns nil when PredictWithContributions can fill at
	// least one summary, else an error wrapping ErrNoContributions that
	// says why.
	CanExplain() error
	// PredictWithContributions is Predict, and fills c with the top
	// contributions (0 <= top <= MaxTopContributions) and the region
	// sums of T2 and Q.
	PredictWithContributions(s *Spectrum, out *Prediction, top int, c *Contributions) error
}

var _ ContributionModel = (*PLSModel)(nil)

// regionRun is a stretch of consecutive variables that belong to the same
// region: region sums are then plain sums over slices, with no per-variable
// lookup on the hot path.
type regionRun struct {
	region     int
	start, end int // variables [start, end)
}

// setContributionLayout records, for each variable, its wavenumber and
// its region. A variable in two overlapping regions counts in the first
// the model lists, so that the region sums add up to the total. A model
// without axis gets no layout, and CanExplain says so.
func (m *PLSModel) setContributionLayout() {
	axis := m.meta.Wavenumbers
	if len(axis) == 0 {
		return
	}
	m.variableWavenumbers = make([]float64, m.p)
	for j := range m.variableWavenumbers {
		if m.selected != nil {
			m.variableWavenumbers[j] = axis[m.selected[j]]
		} else {
			m.variableWavenumbers[j] = axis[j]
		}
	}
	m.contributionRegions = m.regions
	if len(m.regions) == 0 {
		m.contributionRegions = [][2]float64{{axis[0], axis[len(axis)-1]}}
	}
	m.regionRuns = m.regionRuns[:0]
	for j, w := range m.variableWavenumbers {
		r := firstRegionHolding(m.contributionRegions, w)
		if n := len(m.regionRuns); n > 0 && m.regionRuns[n-1].region == r && m.regionRuns[n-1].end == j {
			m.regionRuns[n-1].end++
			continue
		}
		m.regionRuns = append(m.regionRuns, regionRun{region: r, start: j, end: j + 1})
	}
}

// firstRegionHolding returns the index of the first region whose
// inclusive range holds w, the rule preprocess.SelectRegions selects
// points by. Every selected point lies in some region; 0 is returned
// otherwise (the single whole-axis region).
func firstRegionHolding(regions [][2]float64, w float64) int {
	for i, r := range regions {
		if r[0] <= w && w <= r[1] {
			return i
		}
	}
	return 0
}

// CanExplain returns nil when the model has T2 or Q and knows the
// wavenumber of each variable.
func (m *PLSModel) CanExplain() error {
	switch {
	case !m.hasT2 && !m.hasQ:
		return fmt.Errorf("%w: it computes neither T2 nor Q (no diagnostics)", ErrNoContributions)
	case m.variableWavenumbers == nil:
		return fmt.Errorf("%w: it has no wavenumber axis to name its variables by", ErrNoContributions)
	}
	return nil
}

// PredictWithContributions implements ContributionModel. top outside
// [0, MaxTopContributions] is clamped into it (the transport refuses such
// requests before they get here).
func (m *PLSModel) PredictWithContributions(s *Spectrum, out *Prediction, top int, c *Contributions) error {
	if err := m.CanExplain(); err != nil {
		return err
	}
	top = max(0, min(top, MaxTopContributions))
	return m.predict(s, out, func(xs []float64, sc *plsScratch) {
		m.explain(xs, sc, &out.Diagnostics, top, c)
	})
}

// explain fills c from the preprocessed spectrum xs and the fused product
// in sc.out, the same numbers Diagnostics were computed from, so that the
// contributions add up to the T2 and Q the reply reports.
//
// Q (Jackson & Mudholkar 1979; the contribution of variable j as in
// Westerhuis, Gurden & Smilde, Chemometr. Intell. Lab. Syst. 51 (2000)
// 95-114): with the residual e = xs - P t,
//
//	Q = sum_j e_j^2,  cont_j = e_j^2 >= 0.
//
// T2 (Kourti & MacGregor, J. Quality Technology 28 (1996) 409-428): the
// scores are t = R' xs with R = W (P'W)^-1 the x rotations (W*), so
//
//	T2 = sum_a t_a^2 / s_a^2 = sum_j xs_j sum_a (t_a / s_a^2) R_ja,
//	cont_j = xs_j sum_a (t_a / s_a^2) R_ja,
//
// which may be negative (a variable pulling the spectrum back towards the
// calibration centre). Both are two matrix-vector products with blocks of
// the fused matrix (a x p each), read row by row.
func (m *PLSModel) explain(xs []float64, sc *plsScratch, d *Diagnostics, top int, c *Contributions) {
	sc.ensureContributionBuffers(m.p, m.a)
	t := sc.out[m.q : m.q+m.a]
	cont := sc.contributions[:len(xs)] // the same length: no bounds checks in the scans
	*c = Contributions{T2: c.T2, Q: c.Q}
	if m.hasT2 {
		w := sc.scoreWeights
		for i, v := range t {
			w[i] = v * m.invScoreVar[i]
		}
		blas64.Gemv(blas.Trans, 1, m.fusedBlock(m.q), blas64.Vector{N: m.a, Inc: 1, Data: w}, 0,
			blas64.Vector{N: m.p, Inc: 1, Data: cont})
		// cont holds R w; one pass finishes each contribution and keeps
		// the largest.
		s := &c.T2
		s.Top = s.Top[:0]
		floor := topFloor(s.Top, top)
		for j, x := range xs {
			v := cont[j] * x
			cont[j] = v
			if v > floor {
				s.Top, floor = m.keepTop(s.Top, top, j, v)
			}
		}
		c.HasT2 = true
		m.sumRegions(cont, d.T2, s)
	}
	if m.hasQ {
		blas64.Gemv(blas.Trans, 1, m.fusedBlock(m.q+m.a), blas64.Vector{N: m.a, Inc: 1, Data: t}, 0,
			blas64.Vector{N: m.p, Inc: 1, Data: cont})
		// cont holds P t; the residual is e = xs - P t.
		s := &c.Q
		s.Top = s.Top[:0]
		floor := topFloor(s.Top, top)
		for j, x := range xs {
			e := x - cont[j]
			v := e * e
			cont[j] = v
			if v > floor {
				s.Top, floor = m.keepTop(s.Top, top, j, v)
			}
		}
		c.HasQ = true
		m.sumRegions(cont, d.Q, s)
	}
}

// fusedBlock is the a x p block of the fused matrix starting at row:
// the rotations' (row q) or the loadings' (row q+a) transpose.
func (m *PLSModel) fusedBlock(row int) blas64.General {
	return blas64.General{Rows: m.a, Cols: m.p, Stride: m.p, Data: m.fused[row*m.p : (row+m.a)*m.p]}
}

// topFloor is the value a contribution must exceed to enter a top list
// of at most k entries holding top: -Inf while it has room (NaN never
// enters), +Inf when k is 0, else its last entry. The scan compares
// against it inline and calls keepTop only for the few that enter.
func topFloor(top []VariableContribution, k int) float64 {
	switch {
	case k == 0:
		return math.Inf(1)
	case len(top) < k:
		return math.Inf(-1)
	}
	return top[len(top)-1].Value
}

// keepTop inserts variable j's contribution v into the list top (largest
// first, at most k entries; v exceeds its floor), the smallest entry
// falling out when it is full. Of equal values the lower variable stays
// first. It returns the list and its new floor.
func (m *PLSModel) keepTop(top []VariableContribution, k, j int, v float64) ([]VariableContribution, float64) {
	n := len(top)
	if n < k {
		top = append(top, VariableContribution{})
	} else {
		n--
	}
	i := n
	for i > 0 && top[i-1].Value < v {
		top[i] = top[i-1]
		i--
	}
	top[i] = VariableContribution{Wavenumber: m.variableWavenumbers[j], Value: v}
	return top, topFloor(top, k)
}

// sumRegions sets the total and the region sums of s from the
// per-variable contributions.
func (m *PLSModel) sumRegions(cont []float64, total float64, s *ContributionSummary) {
	s.Total = total
	if cap(s.Regions) < len(m.contributionRegions) {
		s.Regions = make([]RegionContribution, len(m.contributionRegions))
	}
	s.Regions = s.Regions[:len(m.contributionRegions)]
	for i, r := range m.contributionRegions {
		s.Regions[i] = RegionContribution{Region: r}
	}
	for _, run := range m.regionRuns {
		s.Regions[run.region].Value += floats.Sum(cont[run.start:run.end])
	}
}

// ensureContributionBuffers sizes the per-call buffers contributions need;
// they stay with the pooled scratch, so only a scratch's first explained
// prediction allocates them.
func (sc *plsScratch) ensureContributionBuffers(p, a int) {
	if len(sc.contributions) != p {
		sc.contributions = make([]float64, p)
	}
	if len(sc.scoreWeights) != a {
		sc.scoreWeights = make([]float64, a)
	}
}
