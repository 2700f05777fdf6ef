package inference

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Explanation is one prediction laid out variable by variable, for a
// page that shows why a spectrum got its figures: each variable's
// wavenumber, the spectrum after the recipe and region selection beside
// the calibration mean, the residual the components leave, and every
// variable's contribution to T2 and Q (messages.md section 8.1). It is
// for reading, not for the hot path: every slice is allocated.
type Explanation struct {
	Prediction  Prediction
	Wavenumbers []float64 // p, cm-1
	// Spectrum is x after the recipe, at the model's variables; Mean the
	// calibration mean in the same units (XMean). Their difference,
	// divided by XScale, is what the model scores.
	Spectrum, Mean []float64
	// Residual is e = xs - P t in the model's scaled units: Q = sum e^2.
	// Nil when the model has no Q.
	Residual []float64
	// T2 and Q are each variable's contribution; nil when the model does
	// not compute the statistic.
	T2, Q []float64
}

// SpectrumExplainer is a model that lays a prediction out variable by
// variable (PLSModel).
type SpectrumExplainer interface {
	ContributionModel
	ExplainSpectrum(s *Spectrum) (*Explanation, error)
}

var _ SpectrumExplainer = (*PLSModel)(nil)

// ExplainSpectrum predicts s and returns the prediction with its
// variable-by-variable layout, from the very numbers the prediction was
// made of, so the contributions add up to its T2 and Q as in
// PredictWithContributions.
func (m *PLSModel) ExplainSpectrum(s *Spectrum) (*Explanation, error) {
	if err := m.CanExplain(); err != nil {
		return nil, err
	}
	e := &Explanation{
		Wavenumbers: append([]float64(nil), m.variableWavenumbers...),
		Mean:        append([]float64(nil), m.xMean...),
		Spectrum:    make([]float64, m.p),
	}
	err := m.predict(s, &e.Prediction, func(xs []float64, sc *plsScratch) {
		for j, v := range xs {
			x := v
			if !m.unitScale {
				x *= m.xScale[j]
			}
			e.Spectrum[j] = x + m.xMean[j]
		}
		t := sc.out[m.q : m.q+m.a]
		if m.hasT2 {
			w := make([]float64, m.a)
			for i, v := range t {
				w[i] = v * m.invScoreVar[i]
			}
			e.T2 = make([]float64, m.p)
			blas64.Gemv(blas.Trans, 1, m.fusedBlock(m.q), blas64.Vector{N: m.a, Inc: 1, Data: w}, 0,
				blas64.Vector{N: m.p, Inc: 1, Data: e.T2})
			for j, x := range xs {
				e.T2[j] *= x
			}
		}
		if m.hasQ {
			e.Residual = make([]float64, m.p)
			blas64.Gemv(blas.Trans, 1, m.fusedBlock(m.q+m.a), blas64.Vector{N: m.a, Inc: 1, Data: t}, 0,
				blas64.Vector{N: m.p, Inc: 1, Data: e.Residual})
			e.Q = make([]float64, m.p)
			for j, x := range xs {
				r := x - e.Residual[j]
				e.Residual[j], e.Q[j] = r, r*r
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}
