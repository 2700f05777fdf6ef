package channel_test

import (
	"context"
	"slices"
	"testing"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/server/channel"
	"ramanserve/server/contract"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// recipeModel trains on synthetic spectra preprocessed with recipe (the
// whole 2048-point axis) and returns the model that applies it.
func recipeModel(tb testing.TB, recipe preprocess.Recipe) *inference.PLSModel {
	tb.Helper()
	axis := synth.Axis()
	pl, err := preprocess.Compile(recipe, axis)
	if err != nil {
		tb.Fatal(err)
	}
	ws := pl.NewWorkspace()
	g := synth.New(synth.Config{Seed: 4})
	ds := trainer.NewDataset(len(axis), 3)
	for range 150 {
		s := g.Next()
		x := slices.Clone(s.Intensities)
		if _, err := pl.Apply(x, ws); err != nil {
			tb.Fatal(err)
		}
		ds.AppendRow(s.ScanID, x, s.Conc[:])
	}
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	res.Params.Meta.Version = "bench-recipe"
	res.Params.Preprocessing = recipe
	m, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkPredict2048SavgolSNV is BenchmarkPredict2048 with a model that
// applies savgol(15, 2, 1) and snv to each spectrum (the bound:
// 25 us).
func BenchmarkPredict2048SavgolSNV(b *testing.B) {
	benchRecipe(b, preprocess.Recipe{
		{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1},
		{Kind: preprocess.SNV},
	})
}

// BenchmarkPredict2048ALS is BenchmarkPredict2048 with an ALS baseline
// (lam 1e5, p 0.01, 10 iterations) subtracted from each spectrum (the
// issue's bound: 150 us).
func BenchmarkPredict2048ALS(b *testing.B) {
	benchRecipe(b, preprocess.Recipe{
		{Kind: preprocess.ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10},
	})
}

func benchRecipe(b *testing.B, recipe preprocess.Recipe) {
	model := recipeModel(b, recipe)
	benchPredict(b, model)
}

// TestDegenerateSpectrumIsInvalidSpectrum: a spectrum the recipe cannot
// apply to (no band area to normalise by) is answered INVALID_SPECTRUM.
func TestDegenerateSpectrumIsInvalidSpectrum(t *testing.T) {
	model := recipeModel(t, preprocess.Recipe{{Kind: preprocess.Normalize, Region: [2]float64{1400, 1500}}})
	h := channel.New(channel.Options{Models: models{model}, ServerVersion: "test"})
	flat := make([]float64, len(synth.Axis()))
	req := client.AppendPredictRequest(nil, "r-1", 1, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: flat}, nil)
	rep := handle(h, req)
	if rep.Error == nil || contract.Code(rep.Error.Code) != contract.InvalidSpectrum {
		t.Fatalf("reply %+v, want INVALID_SPECTRUM", rep.Error)
	}
}
