package inference_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/platform/race"
	"ramanserve/trainer/synth"
)

// overlappingRegions share 1700-1800 cm-1: those variables count in the
// first region only, so that the region sums still add up to the total.
var overlappingRegions = [][2]float64{{600, 1800}, {1700, 2000}, {2800, 3100}}

// contributionSpectra are in-domain spectra and one with a band the
// calibration never saw (a large Q, the case contributions are for).
func contributionSpectra() [][]float64 {
	g := synth.New(synth.Config{Seed: 77})
	var out [][]float64
	for range 4 {
		out = append(out, g.Next().Intensities)
	}
	odd := slices.Clone(g.Next().Intensities)
	for i, w := range synth.Axis() {
		odd[i] += 400 * math.Exp(-0.5*math.Pow((w-1650)/8, 2))
	}
	return append(out, odd)
}

func explainedModels(t *testing.T) map[string]*inference.PLSParams {
	return map[string]*inference.PLSParams{
		"whole axis":                         trainedModel(t),
		"two regions and a recipe":           shapedModel(t, derivRecipe, twoRegions, 51),
		"overlapping regions without recipe": shapedModel(t, nil, overlappingRegions, 52),
	}
}

// TestContributionsAddUpToT2AndQ: the T2 contributions (Kourti &
// MacGregor) add up to the reply's T2 and the Q contributions (e_j^2) to
// its Q, to 1e-9 relative; the reply without contributions is unchanged;
// the top list is the largest values in order.
func TestContributionsAddUpToT2AndQ(t *testing.T) {
	numericOnly(t)
	for name, p := range explainedModels(t) {
		t.Run(name, func(t *testing.T) {
			m, err := inference.NewPLSModel(p, inference.ModelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.CanExplain(); err != nil {
				t.Fatal(err)
			}
			var c inference.Contributions
			for i, x := range contributionSpectra() {
				s := &inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: x}
				var plain, explained inference.Prediction
				if err := m.Predict(s, &plain); err != nil {
					t.Fatal(err)
				}
				if err := m.PredictWithContributions(s, &explained, 10, &c); err != nil {
					t.Fatal(err)
				}
				if plain != explained {
					t.Fatalf("spectrum %d: the prediction changes with contributions:\n%+v\n%+v", i, plain, explained)
				}
				d := plain.Diagnostics
				if !c.HasT2 || !c.HasQ || c.T2.Total != d.T2 || c.Q.Total != d.Q {
					t.Fatalf("spectrum %d: totals %v/%v, diagnostics T2 %v Q %v", i, c.T2.Total, c.Q.Total, d.T2, d.Q)
				}
				wantRegions := p.Regions
				if wantRegions == nil {
					wn := p.Meta.Wavenumbers
					wantRegions = [][2]float64{{wn[0], wn[len(wn)-1]}}
				}
				for _, sum := range []struct {
					stat string
					s    inference.ContributionSummary
				}{{"T2", c.T2}, {"Q", c.Q}} {
					var total float64
					for r, rc := range sum.s.Regions {
						if rc.Region != wantRegions[r] {
							t.Fatalf("%s region %d is %v, want %v", sum.stat, r, rc.Region, wantRegions[r])
						}
						total += rc.Value
					}
					if len(sum.s.Regions) != len(wantRegions) {
						t.Fatalf("%s: %d regions, want %d", sum.stat, len(sum.s.Regions), len(wantRegions))
					}
					if rel := math.Abs(total-sum.s.Total) / sum.s.Total; !(rel <= 1e-9) {
						t.Errorf("spectrum %d: %s contributions sum to %v, total %v (relative %.2g)", i, sum.stat, total, sum.s.Total, rel)
					}
					if len(sum.s.Top) != 10 {
						t.Fatalf("%s: %d top contributions, want 10", sum.stat, len(sum.s.Top))
					}
					for k := 1; k < len(sum.s.Top); k++ {
						if sum.s.Top[k].Value > sum.s.Top[k-1].Value {
							t.Fatalf("%s top not in decreasing order at %d: %v", sum.stat, k, sum.s.Top)
						}
					}
				}
				for _, e := range c.Q.Top {
					if e.Value < 0 {
						t.Fatalf("negative Q contribution %v", e)
					}
				}
			}
		})
	}
}

// TestContributionsTopBounds: K = 0 gives no top list but the regions;
// K above the feature count is clamped; a model without diagnostics
// refuses.
func TestContributionsTopBounds(t *testing.T) {
	m, err := inference.NewPLSModel(trainedModel(t), inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := &inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: contributionSpectra()[0]}
	var out inference.Prediction
	var c inference.Contributions
	if err := m.PredictWithContributions(s, &out, 0, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.T2.Top) != 0 || len(c.Q.Top) != 0 || len(c.Q.Regions) != 1 {
		t.Fatalf("K=0: %+v", c)
	}
	if err := m.PredictWithContributions(s, &out, 1000, &c); err != nil || len(c.Q.Top) != inference.MaxTopContributions {
		t.Fatalf("K=1000: %v, %d entries", err, len(c.Q.Top))
	}

	bare := *trainedModel(t)
	bare.Rotations, bare.Loadings, bare.ScoreVariance, bare.HeldOutT2, bare.HeldOutQ, bare.CalibrationQ = nil, nil, nil, nil, nil, nil
	bare.Meta.LatentComponents = 0
	nm, err := inference.NewPLSModel(&bare, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := nm.CanExplain(); err == nil {
		t.Fatal("a model without diagnostics can explain")
	}
	if err := nm.PredictWithContributions(s, &out, 3, &c); err == nil {
		t.Fatal("a model without diagnostics predicted contributions")
	}
}

// TestContributionsAllocateNothingOnceWarm: a reused Contributions and a
// warm model allocate nothing per explained prediction.
func TestContributionsAllocateNothingOnceWarm(t *testing.T) {
	if race.Enabled {
		// gonum's matrix-vector products take their workspace from a
		// sync.Pool, which the race detector empties at random.
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	m, err := inference.NewPLSModel(shapedModel(t, nil, overlappingRegions, 52), inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := &inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: contributionSpectra()[0]}
	var out inference.Prediction
	var c inference.Contributions
	if err := m.PredictWithContributions(s, &out, 10, &c); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { _ = m.PredictWithContributions(s, &out, 10, &c) }); n != 0 {
		t.Fatalf("%v allocations per explained prediction", n)
	}
}

// contributionCase is what testdata/contributions.py reads: the model's
// parameters, the spectrum and K. Raw models only (no recipe): the
// reference then needs NumPy alone, and the recipe's own parity is
// tested in package preprocess.
type contributionCase struct {
	Axis          []float64    `json:"axis"`
	Regions       [][2]float64 `json:"regions"`
	XMean         []float64    `json:"x_mean"`
	XScale        []float64    `json:"x_scale"`
	Rotations     [][]float64  `json:"rotations"`
	Loadings      [][]float64  `json:"loadings"`
	ScoreVariance []float64    `json:"score_variance"`
	Intensities   []float64    `json:"intensities"`
	K             int          `json:"k"`
}

type referenceSummary struct {
	Total   float64      `json:"total"`
	Top     [][2]float64 `json:"top"`     // [wavenumber, value]
	Regions [][3]float64 `json:"regions"` // [low, high, value]
}

type referenceContributions struct {
	T2 referenceSummary `json:"t2"`
	Q  referenceSummary `json:"q"`
}

func rows(a *mat.Dense) [][]float64 {
	r, _ := a.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = mat.Row(nil, i, a)
	}
	return out
}

// TestContributionsMatchNumPy: testdata/contributions.py computes T2, Q
// and their contributions with NumPy from the same parameters and
// spectrum, written from the definitions in api/messages.md; the server's
// totals, top lists and region sums agree to 1e-9 relative (of the total),
// and name the same wavenumbers.
func TestContributionsMatchNumPy(t *testing.T) {
	numericOnly(t)
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("numpy is required in CI (make deps): %v", err)
		}
		t.Skip("Debian python3-numpy not available (make deps)")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "contributions.py"))
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*inference.PLSParams{
		"whole axis":          trainedModel(t),
		"overlapping regions": shapedModel(t, nil, overlappingRegions, 52),
	} {
		t.Run(name, func(t *testing.T) {
			m, err := inference.NewPLSModel(p, inference.ModelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var worst float64
			for i, x := range contributionSpectra() {
				const k = 12
				var out inference.Prediction
				var c inference.Contributions
				if err := m.PredictWithContributions(&inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: x}, &out, k, &c); err != nil {
					t.Fatal(err)
				}
				in := contributionCase{
					Axis: synth.Axis(), Regions: p.Regions, XMean: p.XMean, XScale: p.XScale,
					Rotations: rows(p.Rotations), Loadings: rows(p.Loadings), ScoreVariance: p.ScoreVariance,
					Intensities: x, K: k,
				}
				ref := runReference(t, py, script, &in)
				worst = max(worst, compareSummary(t, i, "T2", c.T2, ref.T2), compareSummary(t, i, "Q", c.Q, ref.Q))
			}
			t.Logf("largest difference from NumPy: %.2g of the total", worst)
		})
	}
}

func runReference(t *testing.T, py, script string, in *contributionCase) referenceContributions {
	t.Helper()
	path := filepath.Join(t.TempDir(), "case.json")
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	outb, err := exec.Command(py, script, path).Output()
	if err != nil {
		t.Fatalf("contributions.py: %v", err)
	}
	var ref referenceContributions
	if err := json.Unmarshal(outb, &ref); err != nil {
		t.Fatalf("contributions.py output: %v\n%s", err, outb)
	}
	return ref
}

// compareSummary fails the test where got and want differ by more than
// 1e-9 of the total and returns the largest difference, relative to it.
func compareSummary(t *testing.T, spectrum int, stat string, got inference.ContributionSummary, want referenceSummary) float64 {
	t.Helper()
	tol := 1e-9 * math.Abs(want.Total)
	worst := math.Abs(got.Total - want.Total)
	if math.Abs(got.Total-want.Total) > tol {
		t.Errorf("spectrum %d %s: total %v, NumPy %v", spectrum, stat, got.Total, want.Total)
	}
	if len(got.Top) != len(want.Top) || len(got.Regions) != len(want.Regions) {
		t.Fatalf("spectrum %d %s: %d top / %d regions, NumPy %d / %d", spectrum, stat, len(got.Top), len(got.Regions), len(want.Top), len(want.Regions))
	}
	for k, e := range got.Top {
		worst = max(worst, math.Abs(e.Value-want.Top[k][1]))
		if e.Wavenumber != want.Top[k][0] || math.Abs(e.Value-want.Top[k][1]) > tol {
			t.Errorf("spectrum %d %s top %d: %v at %v cm-1, NumPy %v at %v", spectrum, stat, k, e.Value, e.Wavenumber, want.Top[k][1], want.Top[k][0])
		}
	}
	for r, rc := range got.Regions {
		w := want.Regions[r]
		worst = max(worst, math.Abs(rc.Value-w[2]))
		if rc.Region != [2]float64{w[0], w[1]} || math.Abs(rc.Value-w[2]) > tol {
			t.Errorf("spectrum %d %s region %v: %v, NumPy %v %v", spectrum, stat, rc.Region, rc.Value, w[:2], w[2])
		}
	}
	return worst / math.Abs(want.Total)
}
