package inference_test

import (
	"slices"
	"testing"

	"ramanserve/inference"
	"ramanserve/trainer/synth"
)

// TestArtifactKeepsScaleCheck: a trained model carries a scale check, and
// the artifact gives it back bit for bit.
func TestArtifactKeepsScaleCheck(t *testing.T) {
	p := trainedModel(t)
	if p.ScaleCheck == nil {
		t.Fatal("trained model has no scale check")
	}
	got, _ := writeRead(t, p)
	want := p.ScaleCheck
	if got.ScaleCheck == nil || got.ScaleCheck.Intercept != want.Intercept || got.ScaleCheck.Sigma != want.Sigma ||
		!slices.Equal(got.ScaleCheck.Coef, want.Coef) {
		t.Fatalf("scale check read back as %+v, want %+v", got.ScaleCheck, want)
	}
	// An artifact without it (written before it existed) still loads.
	old := *p
	old.ScaleCheck = nil
	back, _ := writeRead(t, &old)
	if back.ScaleCheck != nil {
		t.Fatalf("scale check %+v from an artifact without one", back.ScaleCheck)
	}
	if _, err := inference.NewPLSModel(back, inference.ModelOptions{}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPredictScaleCheck2048 compares a raw 2048-point prediction with
// and without the scale check (the same trained model), so that the
// check's own cost shows as the difference.
func BenchmarkPredictScaleCheck2048(b *testing.B) {
	p := trainedModel(b)
	without := *p
	without.ScaleCheck = nil
	for _, c := range []struct {
		name   string
		params *inference.PLSParams
	}{{"with", p}, {"without", &without}} {
		m, err := inference.NewPLSModel(c.params, inference.ModelOptions{})
		if err != nil {
			b.Fatal(err)
		}
		s := inference.Spectrum{Wavenumbers: p.Meta.Wavenumbers, Intensities: synth.New(synth.Config{Seed: 99}).Next().Intensities}
		var out inference.Prediction
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if err := m.Predict(&s, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
