package inference_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"ramanserve/inference"
	"ramanserve/trainer/synth"
)

func model(t testing.TB, opts inference.ModelOptions) *inference.PLSModel {
	t.Helper()
	m, err := inference.NewPLSModel(trainedModel(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPredictMatchesFormula checks the fused hot path against the textbook
// formula y = ((x - mean) / scale) @ Coef + intercept.
func TestPredictMatchesFormula(t *testing.T) {
	p := trainedModel(t)
	m := model(t, inference.ModelOptions{})
	g := synth.New(synth.Config{Seed: 5})
	for n := 0; n < 20; n++ {
		x := g.Next().Intensities
		var out inference.Prediction
		if err := m.Predict(&inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: x}, &out); err != nil {
			t.Fatal(err)
		}
		for k, a := range p.Targets {
			want := p.Intercept[k]
			for i := range x {
				want += (x[i] - p.XMean[i]) / p.XScale[i] * p.Coef.At(i, k)
			}
			if got := out.Concentrations.Value[a]; math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Fatalf("sample %d %v: %v, formula %v", n, a, got, want)
			}
			if c := out.Confidence.Value[a]; !(c >= 0 && c <= 1) {
				t.Fatalf("confidence %v outside [0,1]", c)
			}
		}
		d := out.Diagnostics
		if !d.HasT2 || !d.HasQ || math.Abs(d.ReducedT2-d.T2/d.T2Limit) > 1e-12 || math.Abs(d.ReducedQ-d.Q/d.QLimit) > 1e-12 {
			t.Fatalf("diagnostics inconsistent: %+v", d)
		}
	}
}

func TestSpectrumValidation(t *testing.T) {
	m := model(t, inference.ModelOptions{SaturationLevel: 60000})
	axis := synth.Axis()
	good := synth.New(synth.Config{Seed: 6}).Next().Intensities
	edit := func(f func(w, in []float64) ([]float64, []float64)) inference.Spectrum {
		w := append([]float64(nil), axis...)
		in := append([]float64(nil), good...)
		w, in = f(w, in)
		return inference.Spectrum{Wavenumbers: w, Intensities: in}
	}
	cases := []struct {
		name    string
		s       inference.Spectrum
		want    error
		message string
	}{
		{"valid", edit(func(w, in []float64) ([]float64, []float64) { return w, in }), nil, ""},
		{"no intensities", edit(func(w, in []float64) ([]float64, []float64) { return w, nil }), inference.ErrInvalidSpectrum, "intensities"},
		{"no wavenumbers", edit(func(w, in []float64) ([]float64, []float64) { return nil, in }), inference.ErrInvalidSpectrum, "wavenumbers"},
		{"different lengths", edit(func(w, in []float64) ([]float64, []float64) { return w, in[:2000] }), inference.ErrInvalidSpectrum, "2000"},
		{"wrong count", edit(func(w, in []float64) ([]float64, []float64) { return w[:100], in[:100] }), inference.ErrInvalidSpectrum, "2048"},
		{"NaN intensity", edit(func(w, in []float64) ([]float64, []float64) { in[7] = math.NaN(); return w, in }), inference.ErrInvalidSpectrum, "7"},
		{"Inf intensity", edit(func(w, in []float64) ([]float64, []float64) { in[8] = math.Inf(-1); return w, in }), inference.ErrInvalidSpectrum, "8"},
		{"NaN wavenumber", edit(func(w, in []float64) ([]float64, []float64) { w[9] = math.NaN(); return w, in }), inference.ErrInvalidSpectrum, "9"},
		{"not increasing", edit(func(w, in []float64) ([]float64, []float64) { w[12] = w[10]; return w, in }), inference.ErrInvalidSpectrum, "12"},
		{"axis shifted", edit(func(w, in []float64) ([]float64, []float64) {
			for i := range w {
				w[i] += 2
			}
			return w, in
		}), inference.ErrSpectrumOutOfRange, ""},
		{"axis outside range", edit(func(w, in []float64) ([]float64, []float64) {
			for i := range w {
				w[i] += 100
			}
			return w, in
		}), inference.ErrSpectrumOutOfRange, "range"},
		{"one point off axis", edit(func(w, in []float64) ([]float64, []float64) { w[500] += 0.6; return w, in }), inference.ErrSpectrumOutOfRange, "500"},
		{"intensity beyond bounds", edit(func(w, in []float64) ([]float64, []float64) { in[40] = 2e7; return w, in }), inference.ErrSpectrumOutOfRange, "40"},
		{"saturated", edit(func(w, in []float64) ([]float64, []float64) {
			in[300], in[301], in[302] = 65535, 65535, 65535
			return w, in
		}), inference.ErrSpectrumOutOfRange, "satur"},
		{"single hot pixel is fine", edit(func(w, in []float64) ([]float64, []float64) { in[300] = 65535; return w, in }), nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out inference.Prediction
			err := m.Predict(&tc.s, &out)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("message %q does not mention %q", err, tc.message)
			}
		})
	}
}

func BenchmarkPredict2048(b *testing.B) {
	m := model(b, inference.ModelOptions{})
	s := inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: synth.New(synth.Config{Seed: 8}).Next().Intensities}
	var out inference.Prediction
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := m.Predict(&s, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPredict2048Contributions is BenchmarkPredict2048 with the
// contributions of the top 10 variables and the region sums of T2 and Q:
// the difference is the model's share of what an explained prediction
// costs (goal, with the encoding: at most 15 us more).
func BenchmarkPredict2048Contributions(b *testing.B) {
	m := model(b, inference.ModelOptions{})
	s := inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: synth.New(synth.Config{Seed: 8}).Next().Intensities}
	var out inference.Prediction
	var c inference.Contributions
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := m.PredictWithContributions(&s, &out, 10, &c); err != nil {
			b.Fatal(err)
		}
	}
}
