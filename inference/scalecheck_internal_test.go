package inference

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// smallParams is a random 3-target model of p features; autoscaled when
// unitScale is false.
func smallParams(p int, unitScale bool, rng *rand.Rand) *PLSParams {
	params := &PLSParams{
		Targets:   []Analyte{EPA, DHA, DPA},
		XMean:     make([]float64, p),
		XScale:    make([]float64, p),
		Coef:      mat.NewDense(p, 3, nil),
		Intercept: []float64{30, 20, 5},
		ScaleCheck: &ScaleCheck{
			Intercept: 8, Coef: []float64{0.01, -0.02, 0.03}, Sigma: 0.03,
		},
	}
	for i := range p {
		params.XMean[i] = 5000 + 3000*math.Sin(float64(i)/7)
		params.XScale[i] = 1
		if !unitScale {
			params.XScale[i] = 0.5 + rng.Float64()
		}
		for k := range 3 {
			params.Coef.Set(i, k, rng.NormFloat64()*1e-3)
		}
	}
	return params
}

// TestScaledStatisticMatchesDefinition checks that the hot path's s(x),
// computed from the centred and scaled input, is the definition
// ln ||diff x|| that the calibration fit uses.
func TestScaledStatisticMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, unit := range []bool{true, false} {
		for _, p := range []int{2, 3, 7, 2048} {
			params := smallParams(p, unit, rng)
			m, err := NewPLSModel(params, ModelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float64, p)
			for i := range x {
				x[i] = params.XMean[i] + 200*rng.NormFloat64()
			}
			xs := make([]float64, p)
			m.preprocess(x, xs)
			got, want := m.scaledStatistic(xs), scaleStatistic(x)
			if math.Abs(got-want) > 1e-12*math.Abs(want)+1e-12 {
				t.Errorf("unit scale %v, p %d: from xs %.17g, from x %.17g", unit, p, got, want)
			}
		}
	}
	if s := scaleStatistic([]float64{3, 3, 3}); !math.IsInf(s, -1) {
		t.Errorf("flat spectrum: s = %v, want -Inf", s)
	}
}

// TestFlatSpectrumIsOutOfDomain: a flat input has s = -Inf, so its reduced
// scale is +Inf and its confidence 0.
func TestFlatSpectrumIsOutOfDomain(t *testing.T) {
	params := smallParams(16, true, rand.New(rand.NewPCG(3, 4)))
	params.RMSECV = []float64{0.5, 0.5, 0.5}
	m, err := NewPLSModel(params, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	axis := make([]float64, 16)
	for i := range axis {
		axis[i] = float64(i)
	}
	var out Prediction
	if err := m.Predict(&Spectrum{Wavenumbers: axis, Intensities: make([]float64, 16)}, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Diagnostics.HasScale || !math.IsInf(out.Diagnostics.ReducedScale, 1) {
		t.Errorf("reduced scale %v (has %v), want +Inf", out.Diagnostics.ReducedScale, out.Diagnostics.HasScale)
	}
	for _, a := range m.Targets() {
		if c := out.Confidence.Value[a]; c != 0 || !out.Confidence.Valid[a] {
			t.Errorf("%v: confidence %v (valid %v), want 0", a, c, out.Confidence.Valid[a])
		}
	}
}

// TestScaleCheckValidated: a scale check that does not fit the model, or
// with values that cannot be one, makes the model corrupt.
func TestScaleCheckValidated(t *testing.T) {
	for name, damage := range map[string]func(c *ScaleCheck){
		"coefficients for 2 targets": func(c *ScaleCheck) { c.Coef = c.Coef[:2] },
		"sigma 0":                    func(c *ScaleCheck) { c.Sigma = 0 },
		"sigma negative":             func(c *ScaleCheck) { c.Sigma = -1 },
		"sigma NaN":                  func(c *ScaleCheck) { c.Sigma = math.NaN() },
		"sigma +Inf":                 func(c *ScaleCheck) { c.Sigma = math.Inf(1) },
		"intercept NaN":              func(c *ScaleCheck) { c.Intercept = math.NaN() },
		"coefficient Inf":            func(c *ScaleCheck) { c.Coef[1] = math.Inf(-1) },
	} {
		params := smallParams(8, true, rand.New(rand.NewPCG(5, 6)))
		damage(params.ScaleCheck)
		if _, err := NewPLSModel(params, ModelOptions{}); !errors.Is(err, ErrModelCorrupted) {
			t.Errorf("%s: err %v, want ErrModelCorrupted", name, err)
		}
	}
}

// TestFitScaleCheckIsLeastSquares: the fitted relation satisfies the
// normal equations of s_i = b_0 + b'yhat_i (residuals orthogonal to 1 and to
// each prediction) and sigma^2 = RSS / (n - q - 1); degenerate calibration
// sets are refused.
func TestFitScaleCheckIsLeastSquares(t *testing.T) {
	const p, n = 64, 300
	rng := rand.New(rand.NewPCG(7, 8))
	params := smallParams(p, true, rng)
	params.ScaleCheck = nil
	rows := gainedRows(params, n, rng)
	got, err := FitScaleCheck(params, n, func(i int) []float64 { return rows[i] })
	if err != nil {
		t.Fatal(err)
	}
	var sum, rss float64
	var cross [3]float64
	xs := make([]float64, p)
	for _, x := range rows {
		var yhat [3]float64
		for j := range x {
			xs[j] = x[j] - params.XMean[j]
		}
		r := scaleStatistic(x) - got.Intercept
		for k := range 3 {
			yhat[k] = params.Intercept[k] + floatsDotCol(xs, params.Coef, k)
			r -= got.Coef[k] * yhat[k]
		}
		sum += r
		rss += r * r
		for k := range 3 {
			cross[k] += r * yhat[k]
		}
	}
	if math.Abs(sum) > 1e-9 {
		t.Errorf("sum of residuals %g, want 0", sum)
	}
	for k, c := range cross {
		if math.Abs(c) > 1e-8 {
			t.Errorf("residuals . yhat_%d = %g, want 0", k, c)
		}
	}
	if want := math.Sqrt(rss / (n - 4)); math.Abs(got.Sigma-want) > 1e-12*want {
		t.Errorf("sigma %v, want %v", got.Sigma, want)
	}
	if _, err := FitScaleCheck(params, 5, func(i int) []float64 { return rows[i] }); !errors.Is(err, ErrScaleCheck) {
		t.Errorf("5 rows: err %v, want ErrScaleCheck", err)
	}
	flat := make([]float64, p)
	if _, err := FitScaleCheck(params, n, func(i int) []float64 { return flat }); !errors.Is(err, ErrScaleCheck) {
		t.Errorf("flat rows: err %v, want ErrScaleCheck", err)
	}
}

// BenchmarkScaledStatistic2048 is the scale check's cost per prediction
// on a 2048-point mean-centred model (one pass over the input).
func BenchmarkScaledStatistic2048(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	params := smallParams(2048, true, rng)
	m, err := NewPLSModel(params, ModelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	xs := make([]float64, 2048)
	for i := range xs {
		xs[i] = 100 * rng.NormFloat64()
	}
	yhat := []float64{30, 20, 5}
	var sink float64
	b.ResetTimer()
	for range b.N {
		sink += m.scale.reducedScale(m.scaledStatistic(xs), yhat)
	}
	if math.IsNaN(sink) {
		b.Fatal("NaN")
	}
}

// TestFitScaleCheckCollinearPredictions: a model with fewer components
// than targets predicts collinear values (here yhat_3 = yhat_1 + yhat_2);
// the fit still succeeds, and explains s as well as the two independent
// predictions do.
func TestFitScaleCheckCollinearPredictions(t *testing.T) {
	const p, n = 32, 200
	rng := rand.New(rand.NewPCG(11, 12))
	params := smallParams(p, true, rng)
	params.ScaleCheck = nil
	for j := range p {
		params.Coef.Set(j, 2, params.Coef.At(j, 0)+params.Coef.At(j, 1))
	}
	rows := gainedRows(params, n, rng)
	got, err := FitScaleCheck(params, n, func(i int) []float64 { return rows[i] })
	if err != nil {
		t.Fatal(err)
	}
	two := *params
	two.Targets = two.Targets[:2]
	two.Intercept = two.Intercept[:2]
	two.Coef = mat.DenseCopyOf(params.Coef.Slice(0, p, 0, 2))
	ref, err := FitScaleCheck(&two, n, func(i int) []float64 { return rows[i] })
	if err != nil {
		t.Fatal(err)
	}
	// Same residual; the sd differs only by the degrees of freedom, both
	// n - 3 here.
	if math.Abs(got.Sigma-ref.Sigma) > 1e-9*ref.Sigma {
		t.Errorf("sigma %v with collinear predictions, %v without the redundant one", got.Sigma, ref.Sigma)
	}
}

// gainedRows draws n calibration rows around the model's mean, each with
// a log-normal gain (20 % rms) on its whole spectrum.
func gainedRows(params *PLSParams, n int, rng *rand.Rand) [][]float64 {
	rows := make([][]float64, n)
	for i := range rows {
		x := make([]float64, len(params.XMean))
		gain := math.Exp(0.2 * rng.NormFloat64())
		for j := range x {
			x[j] = gain * (params.XMean[j] + 300*rng.NormFloat64())
		}
		rows[i] = x
	}
	return rows
}
