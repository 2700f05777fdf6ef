package inference_test

import (
	"bytes"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// tinyShaped is a small model with every kind of step and two regions,
// written by hand so that fuzzing rebuilds it quickly.
func tinyShaped(tb testing.TB) *inference.PLSParams {
	tb.Helper()
	axis := make([]float64, 64)
	for i := range axis {
		axis[i] = 100 + 10*float64(i)
	}
	regions := [][2]float64{{150, 300}, {500, 600}}
	sel, err := preprocess.SelectRegions(axis, regions)
	if err != nil {
		tb.Fatal(err)
	}
	p := len(sel)
	fill := func(n int, f func(i int) float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	return withReview(&inference.PLSParams{
		Meta:    inference.Metadata{Version: "tiny", Algorithm: "PLS2-NIPALS", Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA, inference.DHA, inference.DPA},
		Preprocessing: preprocess.Recipe{
			{Kind: preprocess.Despike, Threshold: 6, Width: 2},
			{Kind: preprocess.ALSBaseline, Lambda: 1e3, P: 0.05, Iterations: 3},
			{Kind: preprocess.Normalize, Region: [2]float64{300, 400}},
			{Kind: preprocess.Savgol, Window: 7, PolyOrder: 2, Deriv: 1},
			{Kind: preprocess.SNV},
		},
		Regions:       regions,
		XMean:         fill(p, func(i int) float64 { return 0.01 * float64(i) }),
		XScale:        fill(p, func(int) float64 { return 1 }),
		Coef:          mat.NewDense(p, 3, fill(3*p, func(i int) float64 { return float64(i%5) - 2 })),
		Intercept:     []float64{10, 20, 5},
		Rotations:     mat.NewDense(p, 2, fill(2*p, func(i int) float64 { return float64(i%3) - 1 })),
		Loadings:      mat.NewDense(p, 2, fill(2*p, func(i int) float64 { return float64(i%4) / 4 })),
		ScoreVariance: []float64{2, 1},
		NCalibration:  7,
		CalibrationQ:  []float64{0.1, 0.2, 0.15, 0.3, 0.12, 0.22, 0.18},
		RMSECV:        []float64{1, 1, 0.5},
	})
}

// FuzzArtifactRecipeAndReview fuzzes the two JSON members a file in the
// registry can use to steer the server (meta.json with its recipe and
// regions, review.json with its counts), inside an otherwise valid
// archive: whatever they say is either MODEL_CORRUPTED or a model that
// predicts without panicking.
func FuzzArtifactRecipeAndReview(f *testing.F) {
	var buf bytes.Buffer
	if err := inference.WriteArtifact(&buf, tinyShaped(f)); err != nil {
		f.Fatal(err)
	}
	base := buf.Bytes()
	// The base archive is a working model, so mutations start from one.
	if got, err := inference.ReadArtifact(bytes.NewReader(base), int64(len(base))); err != nil {
		f.Fatal(err)
	} else if m, err := inference.NewPLSModel(got, inference.ModelOptions{}); err != nil {
		f.Fatal(err)
	} else {
		var out inference.Prediction
		in := make([]float64, m.SpectrumPoints())
		for i := range in {
			in[i] = 100 + float64(i%9)
		}
		if err := m.Predict(&inference.Spectrum{Wavenumbers: m.Metadata().Wavenumbers, Intensities: in}, &out); err != nil {
			f.Fatal(err)
		}
	}
	member := func(name string) []byte {
		var got []byte
		rewriteMember(f, base, name, func(b []byte) []byte { got = b; return b })
		return got
	}
	meta, review := member("meta.json"), member("review.json")
	f.Add(meta, review)
	f.Add(bytes.Replace(meta, []byte(`"window": 7`), []byte(`"window": 65`), 1), review)
	f.Add(bytes.Replace(meta, []byte(`[
      150,`), []byte(`[
      1e308,`), 1), []byte(`{"scan_ids": ["a"], "cv_curve": [{"rmsecv": [1, 2, 3], "r2cv": [null, 1, 2]}]}`))
	f.Fuzz(func(t *testing.T, meta, review []byte) {
		data := rewriteMember(t, rewriteMember(t, base, "meta.json", func([]byte) []byte { return meta }),
			"review.json", func([]byte) []byte { return review })
		got, err := inference.ReadArtifact(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errors.Is(err, inference.ErrModelCorrupted) {
				t.Fatalf("error does not wrap ErrModelCorrupted: %v", err)
			}
			return
		}
		m, err := inference.NewPLSModel(got, inference.ModelOptions{})
		if err != nil {
			if !errors.Is(err, inference.ErrModelCorrupted) {
				t.Fatalf("error does not wrap ErrModelCorrupted: %v", err)
			}
			return
		}
		in := make([]float64, m.SpectrumPoints())
		for i := range in {
			in[i] = 100 + float64(i%9)
		}
		var out inference.Prediction
		_ = m.Predict(&inference.Spectrum{Wavenumbers: m.Metadata().Wavenumbers, Intensities: in}, &out)
	})
}
