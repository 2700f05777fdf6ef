package inference_test

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"

	"ramanserve/inference"
	"ramanserve/trainer/synth"
)

// TestExplainSpectrumAddsUp: the per-variable contributions of
// ExplainSpectrum add up to the prediction's T2 and Q, agree with the
// top entries of PredictWithContributions, and the spectrum minus the
// mean, scaled, is what the residual and scores come from (the residual's
// squares are the Q contributions).
func TestExplainSpectrumAddsUp(t *testing.T) {
	numericOnly(t)
	for name, params := range explainedModels(t) {
		t.Run(name, func(t *testing.T) { explainAddsUp(t, params) })
	}
}

func explainAddsUp(t *testing.T, params *inference.PLSParams) {
	m, err := inference.NewPLSModel(params, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range contributionSpectra() {
		s := inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: x}
		e, err := m.ExplainSpectrum(&s)
		if err != nil {
			t.Fatal(err)
		}
		d := e.Prediction.Diagnostics
		if got := floats.Sum(e.T2); math.Abs(got-d.T2) > 1e-9*math.Max(1, d.T2) {
			t.Errorf("spectrum %d: T2 contributions sum to %v, T2 is %v", i, got, d.T2)
		}
		if got := floats.Sum(e.Q); math.Abs(got-d.Q) > 1e-9*math.Max(1, d.Q) {
			t.Errorf("spectrum %d: Q contributions sum to %v, Q is %v", i, got, d.Q)
		}
		var p inference.Prediction
		var c inference.Contributions
		if err := m.PredictWithContributions(&s, &p, 3, &c); err != nil {
			t.Fatal(err)
		}
		if p != e.Prediction {
			t.Errorf("spectrum %d: the explained prediction differs from the predicted one", i)
		}
		best := floats.MaxIdx(e.Q)
		if c.Q.Top[0].Wavenumber != e.Wavenumbers[best] || c.Q.Top[0].Value != e.Q[best] {
			t.Errorf("spectrum %d: largest Q contribution %+v, the explanation's is %v at %v", i, c.Q.Top[0], e.Q[best], e.Wavenumbers[best])
		}
		for j, r := range e.Residual {
			if r*r != e.Q[j] {
				t.Fatalf("spectrum %d: residual %v at variable %d, Q contribution %v", i, r, j, e.Q[j])
			}
		}
		if len(e.Spectrum) != len(e.Mean) || len(e.Spectrum) != len(e.Wavenumbers) {
			t.Fatalf("spectrum %d: %d points, mean %d, axis %d", i, len(e.Spectrum), len(e.Mean), len(e.Wavenumbers))
		}
	}
}
