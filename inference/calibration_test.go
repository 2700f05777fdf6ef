package inference_test

import (
	"context"
	"math"
	"testing"

	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// TestConfidenceCalibration checks that the confidence means what
// api/messages.md says: on held-out in-domain spectra the mean confidence
// per analyte (the claimed probability of |error| <= tolerance) matches the
// observed fraction within tolerance to 0.1, and spectra well outside the
// calibration domain get confidence < 0.1.
func TestConfidenceCalibration(t *testing.T) {
	numericOnly(t)
	train := synth.New(synth.Config{Seed: 21}).Dataset(200)
	res, err := trainer.Train(context.Background(), train, trainer.Options{Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const held = 400
	g := synth.New(synth.Config{Seed: 22})
	var claimed, observed [inference.NumAnalytes]float64
	var out inference.Prediction
	for i := 0; i < held; i++ {
		s := g.Next()
		if err := m.Predict(&inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities}, &out); err != nil {
			t.Fatal(err)
		}
		for a := range inference.NumAnalytes {
			claimed[a] += out.Confidence.Value[a] / held
			if math.Abs(out.Concentrations.Value[a]-s.Conc[a]) <= inference.DefaultTolerance {
				observed[a] += 1.0 / held
			}
		}
	}
	for a := range inference.NumAnalytes {
		t.Logf("%v: claimed confidence %.3f, observed coverage %.3f (|error| <= %.1f g/L, %d held-out spectra)",
			inference.Analyte(a), claimed[a], observed[a], inference.DefaultTolerance, held)
		if math.Abs(claimed[a]-observed[a]) > 0.1 {
			t.Errorf("%v: claimed %.3f vs observed %.3f differ by more than 0.1", inference.Analyte(a), claimed[a], observed[a])
		}
	}

	outOfDomain := []struct {
		name string
		x    []float64
	}{
		{"contaminant", g.Anomalous(synth.Contaminant).Intensities},
		{"intensities doubled", scaled(g.Next().Intensities, 2)},
		{"intensities halved", scaled(g.Next().Intensities, 0.5)},
	}
	for _, od := range outOfDomain {
		if err := m.Predict(&inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: od.x}, &out); err != nil {
			t.Fatalf("%s: %v", od.name, err)
		}
		t.Logf("%s: confidence %.3f %.3f %.3f, reduced T2 %.2f, reduced Q %.2f", od.name,
			out.Confidence.Value[0], out.Confidence.Value[1], out.Confidence.Value[2], out.Diagnostics.ReducedT2, out.Diagnostics.ReducedQ)
		for a := range inference.NumAnalytes {
			if c := out.Confidence.Value[a]; c >= 0.1 {
				t.Errorf("%s: confidence %v = %.3f, want < 0.1", od.name, inference.Analyte(a), c)
			}
		}
	}
}

func scaled(x []float64, f float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * f
	}
	return out
}
