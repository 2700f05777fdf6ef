package inference_test

import (
	"slices"
	"testing"

	"ramanserve/inference"
)

// TestToleranceResolution: the model's own tolerance wins over the
// server's, which wins over DefaultTolerance, per target.
func TestToleranceResolution(t *testing.T) {
	var server inference.Breakdown
	server.Set(inference.DHA, 0.25)

	m := model(t, inference.ModelOptions{Tolerance: server})
	got := m.Tolerance()
	want := inference.Breakdown{}
	want.Set(inference.EPA, inference.DefaultTolerance)
	want.Set(inference.DHA, 0.25)
	want.Set(inference.DPA, inference.DefaultTolerance)
	if got != want {
		t.Fatalf("server tolerance: got %+v, want %+v", got, want)
	}

	p := *trainedModel(t)
	p.Tolerance = []float64{0.5, 0.75, 2}
	own, err := inference.NewPLSModel(&p, inference.ModelOptions{Tolerance: server})
	if err != nil {
		t.Fatal(err)
	}
	got = own.Tolerance()
	for i, a := range own.Targets() {
		if !got.Valid[a] || got.Value[a] != p.Tolerance[i] {
			t.Fatalf("model tolerance for %v: got %v (valid %v), want %v", a, got.Value[a], got.Valid[a], p.Tolerance[i])
		}
	}
	if !slices.Equal(own.Targets(), []inference.Analyte{inference.EPA, inference.DHA, inference.DPA}) {
		t.Fatalf("targets %v", own.Targets())
	}
}
