package inference_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// Recipes of the tests: the despike + savgol(15, 2, 1) + snv
// with a normalize over the 1400-1500 cm-1 band, and an ALS baseline. The
// normalize comes before the derivative: the band area of a first
// derivative after snv is a difference of two small values of either sign,
// no internal standard.
var (
	derivRecipe = preprocess.Recipe{
		{Kind: preprocess.Despike, Threshold: 6, Width: 2},
		{Kind: preprocess.Normalize, Region: [2]float64{1400, 1500}},
		{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1},
		{Kind: preprocess.SNV},
	}
	alsRecipe = preprocess.Recipe{
		{Kind: preprocess.ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10},
		{Kind: preprocess.Normalize, Region: [2]float64{1400, 1500}},
	}
	twoRegions = [][2]float64{{600, 1800}, {2800, 3100}}
)

// shapedModel trains a model on synthetic spectra that went through the
// recipe and the region selection, then gives it the recipe, the regions
// and the full axis: the model a training job with those options makes.
func shapedModel(t testing.TB, recipe preprocess.Recipe, regions [][2]float64, seed uint64) *inference.PLSParams {
	t.Helper()
	axis := synth.Axis()
	sel := make([]int, len(axis))
	for i := range sel {
		sel[i] = i
	}
	if regions != nil {
		var err error
		if sel, err = preprocess.SelectRegions(axis, regions); err != nil {
			t.Fatal(err)
		}
	}
	var pl *preprocess.Pipeline
	var ws *preprocess.Workspace
	if len(recipe) > 0 {
		var err error
		if pl, err = preprocess.Compile(recipe, axis); err != nil {
			t.Fatal(err)
		}
		ws = pl.NewWorkspace()
	}
	g := synth.New(synth.Config{Seed: seed})
	ds := trainer.NewDataset(len(sel), 3)
	x, row := make([]float64, len(axis)), make([]float64, len(sel))
	for range 120 {
		s := g.Next()
		copy(x, s.Intensities)
		if pl != nil {
			if _, err := pl.Apply(x, ws); err != nil {
				t.Fatal(err)
			}
		}
		for i, j := range sel {
			row[i] = x[j]
		}
		ds.AppendRow(s.ScanID, row, s.Conc[:])
	}
	wn := make([]float64, len(sel))
	for i, j := range sel {
		wn[i] = axis[j]
	}
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1, MaxComponents: 10, Wavenumbers: wn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := res.Params
	p.Meta.Version = "pls-recipe"
	p.Meta.Wavenumbers = axis
	p.Preprocessing = recipe
	p.Regions = regions
	return p
}

// rawTwin is the same regression without recipe and regions, on the
// selected axis: the reference the shaped model must agree with.
func rawTwin(t testing.TB, p *inference.PLSParams) (*inference.PLSModel, []int, *preprocess.Pipeline) {
	t.Helper()
	twin := *p
	twin.Preprocessing, twin.Regions = nil, nil
	sel, err := preprocess.SelectRegions(p.Meta.Wavenumbers, p.Regions)
	if p.Regions == nil {
		sel, err = make([]int, len(p.Meta.Wavenumbers)), nil
		for i := range sel {
			sel[i] = i
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	twin.Meta.Wavenumbers = nil
	m, err := inference.NewPLSModel(&twin, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pl *preprocess.Pipeline
	if len(p.Preprocessing) > 0 {
		if pl, err = preprocess.Compile(p.Preprocessing, p.Meta.Wavenumbers); err != nil {
			t.Fatal(err)
		}
	}
	return m, sel, pl
}

// TestRecipeModelAppliesRecipeAndRegions: a model with a recipe and
// regions predicts exactly what the raw regression predicts on the
// preprocessed, selected points, and leaves the caller's spectrum alone.
func TestRecipeModelAppliesRecipeAndRegions(t *testing.T) {
	numericOnly(t)
	for _, tc := range []struct {
		name    string
		recipe  preprocess.Recipe
		regions [][2]float64
	}{
		{"despike savgol snv normalize, two regions", derivRecipe, twoRegions},
		{"als normalize, whole axis", alsRecipe, nil},
		{"regions only", nil, twoRegions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := shapedModel(t, tc.recipe, tc.regions, 21)
			m, err := inference.NewPLSModel(p, inference.ModelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m.SpectrumPoints() != len(p.Meta.Wavenumbers) || m.Features() != len(p.XMean) {
				t.Fatalf("points %d features %d", m.SpectrumPoints(), m.Features())
			}
			twin, sel, pl := rawTwin(t, p)
			g := synth.New(synth.Config{Seed: 22})
			axis := synth.Axis()
			for n := range 10 {
				in := g.Next().Intensities
				if n%3 == 0 {
					in[700+n] += 5000 // a cosmic spike
				}
				keep := slices.Clone(in)
				var got inference.Prediction
				if err := m.Predict(&inference.Spectrum{Wavenumbers: axis, Intensities: in}, &got); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(in, keep) {
					t.Fatal("Predict modified the caller's spectrum")
				}
				x := slices.Clone(in)
				if pl != nil {
					if _, err := pl.Apply(x, pl.NewWorkspace()); err != nil {
						t.Fatal(err)
					}
				}
				xs := make([]float64, len(sel))
				for i, j := range sel {
					xs[i] = x[j]
				}
				var want inference.Prediction
				if err := twin.Predict(&inference.Spectrum{Wavenumbers: sel2axis(axis, sel), Intensities: xs}, &want); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("spectrum %d: %+v, raw regression on the preprocessed points %+v", n, got, want)
				}
				if !got.Diagnostics.HasT2 || !got.Diagnostics.HasQ {
					t.Fatalf("diagnostics missing: %+v", got.Diagnostics)
				}
			}
		})
	}
}

func sel2axis(axis []float64, sel []int) []float64 {
	out := make([]float64, len(sel))
	for i, j := range sel {
		out[i] = axis[j]
	}
	return out
}

// TestRecipeModelConcurrentPredictions: the pooled buffers are per call:
// goroutines predicting different spectra at once get each its own answer.
func TestRecipeModelConcurrentPredictions(t *testing.T) {
	p := shapedModel(t, derivRecipe, twoRegions, 23)
	m, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := synth.New(synth.Config{Seed: 24})
	specs := make([][]float64, 8)
	want := make([]inference.Prediction, len(specs))
	for i := range specs {
		specs[i] = g.Next().Intensities
		if err := m.Predict(&inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: specs[i]}, &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 50 {
				i := (w + r) % len(specs)
				var got inference.Prediction
				if err := m.Predict(&inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: specs[i]}, &got); err != nil {
					errs <- err
					return
				}
				if got != want[i] {
					errs <- errors.New("a concurrent prediction differs from the sequential one")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestRecipeModelRejects: what cannot be built is MODEL_CORRUPTED, what
// the recipe cannot apply to is INVALID_SPECTRUM.
func TestRecipeModelRejects(t *testing.T) {
	good := shapedModel(t, derivRecipe, twoRegions, 25)
	build := func(edit func(p *inference.PLSParams)) error {
		p := *good
		p.Meta.Wavenumbers = slices.Clone(good.Meta.Wavenumbers)
		edit(&p)
		_, err := inference.NewPLSModel(&p, inference.ModelOptions{})
		return err
	}
	for _, tc := range []struct {
		name string
		edit func(p *inference.PLSParams)
	}{
		{"window longer than the axis", func(p *inference.PLSParams) {
			p.Preprocessing = preprocess.Recipe{{Kind: preprocess.Savgol, Window: 4097, PolyOrder: 2}}
		}},
		{"normalize region outside the axis", func(p *inference.PLSParams) {
			p.Preprocessing = preprocess.Recipe{{Kind: preprocess.Normalize, Region: [2]float64{5000, 6000}}}
		}},
		{"regions select another point count", func(p *inference.PLSParams) {
			p.Regions = [][2]float64{{600, 1800}}
		}},
		{"region outside the axis", func(p *inference.PLSParams) {
			p.Regions = [][2]float64{{600, 1800}, {4000, 4100}}
		}},
		{"no regions: the axis is longer than the model", func(p *inference.PLSParams) {
			p.Regions = nil
		}},
		{"recipe without axis", func(p *inference.PLSParams) {
			p.Meta.Wavenumbers = nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := build(tc.edit); !errors.Is(err, inference.ErrModelCorrupted) {
				t.Fatalf("err = %v, want ErrModelCorrupted", err)
			}
		})
	}

	m, err := inference.NewPLSModel(good, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out inference.Prediction
	// A spectrum of the model's feature count is not a spectrum of its axis.
	short := inference.Spectrum{Wavenumbers: good.Meta.Wavenumbers[:len(good.XMean)], Intensities: make([]float64, len(good.XMean))}
	if err := m.Predict(&short, &out); !errors.Is(err, inference.ErrInvalidSpectrum) {
		t.Fatalf("spectrum of %d points: err = %v, want ErrInvalidSpectrum", len(good.XMean), err)
	}
	// A dark spectrum has no band area to normalise by.
	dark := inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: make([]float64, len(synth.Axis()))}
	if err := m.Predict(&dark, &out); !errors.Is(err, inference.ErrInvalidSpectrum) {
		t.Fatalf("dark spectrum: err = %v, want ErrInvalidSpectrum", err)
	}
}

// TestRecipeOverflowIsInvalidSpectrum: a valid spectrum whose band area
// is nearly zero makes the normalised spectrum overflow; the model answers
// INVALID_SPECTRUM instead of Inf or NaN concentrations.
func TestRecipeOverflowIsInvalidSpectrum(t *testing.T) {
	p := shapedModel(t, preprocess.Recipe{{Kind: preprocess.Normalize, Region: [2]float64{1400, 1500}}}, nil, 26)
	m, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	axis := synth.Axis()
	in := make([]float64, len(axis))
	for i, w := range axis {
		in[i] = 1e6
		if w >= 1390 && w <= 1510 {
			in[i] = 1e-305
		}
	}
	var out inference.Prediction
	if err := m.Predict(&inference.Spectrum{Wavenumbers: axis, Intensities: in}, &out); !errors.Is(err, inference.ErrInvalidSpectrum) {
		t.Fatalf("err = %v (prediction %+v), want ErrInvalidSpectrum", err, out.Concentrations)
	}
}

// TestRecipeHugeButFiniteIsInvalidSpectrum: a band area small enough to
// scale the spectrum by 1e150, but not to overflow the concentrations,
// still overflows T2 and Q (sums of squares). The reply must carry no Inf
// anywhere (t2, q and the confidence derived from them), so the model
// answers INVALID_SPECTRUM and leaves out the 1e155 g/L figures too.
func TestRecipeHugeButFiniteIsInvalidSpectrum(t *testing.T) {
	p := shapedModel(t, preprocess.Recipe{{Kind: preprocess.Normalize, Region: [2]float64{1400, 1500}}}, nil, 26)
	m, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	axis := synth.Axis()
	for _, small := range []float64{1e-150, 1e-200, 1e-250} {
		in := make([]float64, len(axis))
		for i, w := range axis {
			in[i] = 1000 + float64(i%7)
			if w >= 1390 && w <= 1510 {
				in[i] = small
			}
		}
		var out inference.Prediction
		err := m.Predict(&inference.Spectrum{Wavenumbers: axis, Intensities: in}, &out)
		if !errors.Is(err, inference.ErrInvalidSpectrum) {
			t.Errorf("band at %g: err = %v (concentrations %v, T2 %g, Q %g), want ErrInvalidSpectrum",
				small, err, out.Concentrations.Value, out.Diagnostics.T2, out.Diagnostics.Q)
		}
	}
}

// TestRecipeModelChecksTheAxis: a model with a recipe and regions still
// holds a spectrum to its stored axis: the right length on a shifted axis
// is refused (its regions and bands would be other wavenumbers), and the
// caller's intensities are left as they were on success.
func TestRecipeModelChecksTheAxis(t *testing.T) {
	p := shapedModel(t, preprocess.Recipe{{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1}, {Kind: preprocess.SNV}},
		[][2]float64{{600, 1800}, {2800, 3100}}, 27)
	m, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := synth.New(synth.Config{Seed: 28})
	in := g.Next().Intensities
	shifted := slices.Clone(p.Meta.Wavenumbers)
	for i := range shifted {
		shifted[i] += 50
	}
	var out inference.Prediction
	if err := m.Predict(&inference.Spectrum{Wavenumbers: shifted, Intensities: in}, &out); err == nil {
		t.Errorf("a spectrum on an axis shifted by 50 cm-1 was predicted: %v", out.Concentrations.Value)
	}
	keep := slices.Clone(in)
	if err := m.Predict(&inference.Spectrum{Wavenumbers: p.Meta.Wavenumbers, Intensities: in}, &out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in, keep) {
		t.Error("Predict changed the caller's intensities")
	}
}

// TestRawModelOverflowIsInvalidSpectrum: a model without a recipe can
// overflow too when its file (or an imported StandardScaler) carries a
// scale of 1e-303: 1e6 / 1e-303 is +Inf, with the intensity inside
// its bound. The reply must not carry Inf or NaN.
func TestRawModelOverflowIsInvalidSpectrum(t *testing.T) {
	axis := []float64{500, 600, 700, 800}
	p := &inference.PLSParams{
		Meta:    inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA}, XMean: make([]float64, 4), XScale: []float64{1e-303, 1, 1, 1},
		Coef: mat.NewDense(4, 1, []float64{1, 1, 1, 1}), Intercept: []float64{4},
	}
	m, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Skipf("the model is refused at load, which is as good: %v", err)
	}
	var out inference.Prediction
	err = m.Predict(&inference.Spectrum{Wavenumbers: axis, Intensities: []float64{1e6, 1, 1, 1}}, &out)
	if !errors.Is(err, inference.ErrInvalidSpectrum) {
		t.Errorf("err = %v, concentrations %v, want ErrInvalidSpectrum", err, out.Concentrations.Value)
	}
}
