package inference_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"ramanserve/inference"
)

// shuffledRanks returns 1..n in a seeded random order.
func shuffledRanks(n int) []float64 {
	v := make([]float64, n)
	for i, j := range rand.New(rand.NewPCG(1, uint64(n))).Perm(n) {
		v[i] = float64(j + 1)
	}
	return v
}

// TestHeldOutLimitIsTheConformalQuantile: the limit is the k-th smallest
// of n values, k = ceil(0.95 (n + 1)), including the n for which
// 0.95 (n + 1) is an integer; below 19 values, or when the k-th value is
// zero, there is no limit.
func TestHeldOutLimitIsTheConformalQuantile(t *testing.T) {
	for _, c := range []struct{ n, k int }{{19, 19}, {20, 20}, {39, 38}, {59, 57}, {100, 96}, {300, 286}, {399, 380}} {
		got, err := inference.HeldOutLimit(shuffledRanks(c.n), inference.DiagnosticsAlpha)
		if err != nil || got != float64(c.k) {
			t.Errorf("n = %d: limit %v (err %v), want the %d-th smallest value, %d", c.n, got, err, c.k, c.k)
		}
	}
	v := shuffledRanks(50)
	before := append([]float64(nil), v...)
	if _, err := inference.HeldOutLimit(v, inference.DiagnosticsAlpha); err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if v[i] != before[i] {
			t.Fatal("HeldOutLimit reordered its input")
		}
	}
	for _, c := range []struct {
		name  string
		v     []float64
		alpha float64
	}{
		{"18 values", shuffledRanks(18), inference.DiagnosticsAlpha},
		{"none", nil, inference.DiagnosticsAlpha},
		{"zero quantile", make([]float64, 40), inference.DiagnosticsAlpha},
		{"alpha 0", shuffledRanks(40), 0},
		{"alpha 1", shuffledRanks(40), 1},
	} {
		if got, err := inference.HeldOutLimit(c.v, c.alpha); err == nil {
			t.Errorf("%s: limit %v, want an error", c.name, got)
		}
	}
}

// TestModelLimitsFallBackToTheParametricOnes: without held-out values, or
// with too few, a model's limits are the F-based T2 limit and Box's fit
// of the calibration Q.
func TestModelLimitsFallBackToTheParametricOnes(t *testing.T) {
	calQ := []float64{1, 2, 3, 2.5, 1.5, 4, 2}
	wantT2, err := inference.HotellingT2Limit(3, 50, inference.DiagnosticsAlpha)
	if err != nil {
		t.Fatal(err)
	}
	wantQ, err := inference.BoxQLimit(calQ, inference.DiagnosticsAlpha)
	if err != nil {
		t.Fatal(err)
	}
	for _, heldOut := range [][]float64{nil, shuffledRanks(18)} {
		if got, err := inference.ModelT2Limit(3, 50, heldOut); err != nil || got != wantT2 {
			t.Errorf("%d held-out T2: limit %v (err %v), want the F-based %v", len(heldOut), got, err, wantT2)
		}
		if got, err := inference.ModelQLimit(calQ, heldOut); err != nil || got != wantQ {
			t.Errorf("%d held-out Q: limit %v (err %v), want Box's %v", len(heldOut), got, err, wantQ)
		}
	}
	if got, err := inference.ModelT2Limit(3, 50, shuffledRanks(100)); err != nil || got != 96 {
		t.Errorf("100 held-out T2: limit %v (err %v), want 96", got, err)
	}
	if got, err := inference.ModelQLimit(calQ, shuffledRanks(100)); err != nil || got != 96 {
		t.Errorf("100 held-out Q: limit %v (err %v), want 96", got, err)
	}
}

// TestStoredModelsWithoutHeldOutValuesKeepTheirLimits: an artifact
// without heldout_t2.npy and heldout_q.npy (an imported model, or one
// written without them) reads back without them and keeps the F-based T2
// limit and Box's fit of its calibration Q; a trained model's artifact
// carries them and its limits are their conformal quantiles.
func TestStoredModelsWithoutHeldOutValuesKeepTheirLimits(t *testing.T) {
	trained := trainedModel(t)
	if len(trained.HeldOutT2) != trained.NCalibration || len(trained.HeldOutQ) != trained.NCalibration {
		t.Fatalf("trained model has %d held-out T2 and %d Q values, want %d each",
			len(trained.HeldOutT2), len(trained.HeldOutQ), trained.NCalibration)
	}
	old := *trained
	old.HeldOutT2, old.HeldOutQ = nil, nil
	read, _ := writeRead(t, &old)
	if read.HeldOutT2 != nil || read.HeldOutQ != nil {
		t.Fatal("an artifact without held-out values read back with some")
	}
	a := trained.Meta.LatentComponents
	wantT2, err := inference.HotellingT2Limit(a, trained.NCalibration, inference.DiagnosticsAlpha)
	if err != nil {
		t.Fatal(err)
	}
	wantQ, err := inference.BoxQLimit(trained.CalibrationQ, inference.DiagnosticsAlpha)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(t, read)
	if t2, hasT2, q, hasQ := m.Limits(); !hasT2 || !hasQ || t2 != wantT2 || q != wantQ {
		t.Errorf("without held-out values: limits T2 %v, Q %v; want the F-based %v and Box's %v", t2, q, wantT2, wantQ)
	}

	heldOutT2, err := inference.HeldOutLimit(trained.HeldOutT2, inference.DiagnosticsAlpha)
	if err != nil {
		t.Fatal(err)
	}
	heldOutQ, err := inference.HeldOutLimit(trained.HeldOutQ, inference.DiagnosticsAlpha)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := writeRead(t, trained)
	m = newModel(t, got)
	if t2, hasT2, q, hasQ := m.Limits(); !hasT2 || !hasQ || t2 != heldOutT2 || q != heldOutQ {
		t.Errorf("with held-out values: limits T2 %v, Q %v; want their conformal quantiles %v and %v", t2, q, heldOutT2, heldOutQ)
	}
	if heldOutT2 == wantT2 || heldOutQ == wantQ {
		t.Error("the held-out limits equal the parametric ones: the check above cannot tell them apart")
	}
}

// TestModelRefusesBadHeldOutValues: held-out values must be one per
// calibration sample, finite and >= 0, and only for a statistic the model
// computes.
func TestModelRefusesBadHeldOutValues(t *testing.T) {
	trained := trainedModel(t)
	n := trained.NCalibration
	withValue := func(v []float64, i int, x float64) []float64 {
		out := append([]float64(nil), v...)
		out[i] = x
		return out
	}
	cases := []struct {
		name string
		edit func(p *inference.PLSParams)
	}{
		{"T2 too short", func(p *inference.PLSParams) { p.HeldOutT2 = p.HeldOutT2[:n-1] }},
		{"Q too long", func(p *inference.PLSParams) { p.HeldOutQ = append(append([]float64(nil), p.HeldOutQ...), 1) }},
		{"negative T2", func(p *inference.PLSParams) { p.HeldOutT2 = withValue(p.HeldOutT2, 3, -1) }},
		{"NaN Q", func(p *inference.PLSParams) { p.HeldOutQ = withValue(p.HeldOutQ, 0, math.NaN()) }},
		{"infinite Q", func(p *inference.PLSParams) { p.HeldOutQ = withValue(p.HeldOutQ, 1, math.Inf(1)) }},
		{"T2 without score variances", func(p *inference.PLSParams) { p.ScoreVariance = nil }},
		{"Q without loadings", func(p *inference.PLSParams) { p.Loadings = nil }},
	}
	for _, c := range cases {
		p := *trained
		c.edit(&p)
		if _, err := inference.NewPLSModel(&p, inference.ModelOptions{}); !errors.Is(err, inference.ErrModelCorrupted) {
			t.Errorf("%s: err = %v, want ErrModelCorrupted", c.name, err)
		}
	}
}
