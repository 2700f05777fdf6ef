package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/review"
)

// parityTolerance is the issue's: the review's numbers agree with the
// NumPy/scikit-learn reference to 1e-9 (absolute; VIP is of order 1,
// R²X, Q² and leverage lie in [0, 1]).
const parityTolerance = 1e-9

// trainingSet is a small calibration set with a known latent structure:
// rows mix four band profiles, the labels are linear in the mixing
// weights, and both carry noise, so the CV finds several components.
type trainingSet struct {
	X, Y        [][]float64
	Wavenumbers []float64
}

func newTrainingSet(n, points, analytes int, seed uint64) trainingSet {
	rng := rand.New(rand.NewPCG(seed, 1))
	const factors = 4
	axis := trainer.LinearAxis(400, 1800, points)
	profiles := make([][]float64, factors)
	for f := range profiles {
		centre, width := 500+300*float64(f)+50*rng.Float64(), 40+30*rng.Float64()
		profiles[f] = make([]float64, points)
		for j, w := range axis {
			profiles[f][j] = math.Exp(-(w - centre) * (w - centre) / (2 * width * width))
		}
	}
	mixing := make([][]float64, analytes)
	for k := range mixing {
		mixing[k] = make([]float64, factors)
		for f := range mixing[k] {
			mixing[k][f] = rng.NormFloat64()
		}
	}
	s := trainingSet{Wavenumbers: axis}
	for i := 0; i < n; i++ {
		weights := make([]float64, factors)
		for f := range weights {
			weights[f] = 1 + rng.Float64()
		}
		x := make([]float64, points)
		for j := range x {
			for f, w := range weights {
				x[j] += w * profiles[f][j]
			}
			x[j] += 0.01 * rng.NormFloat64()
		}
		y := make([]float64, analytes)
		for k := range y {
			y[k] = 10
			for f, w := range weights {
				y[k] += mixing[k][f] * w
			}
			y[k] += 0.02 * rng.NormFloat64()
		}
		s.X, s.Y = append(s.X, x), append(s.Y, y)
	}
	return s
}

func (s trainingSet) dataset() *trainer.Dataset {
	ds := trainer.NewDataset(len(s.X[0]), len(s.Y[0]))
	for i := range s.X {
		ds.AppendRow("scan-"+string(rune('a'+i%26))+string(rune('a'+i/26)), s.X[i], s.Y[i])
	}
	return ds
}

// referenceFigures is testdata/review_reference.py's output.
type referenceFigures struct {
	VIP           []float64   `json:"vip"`
	R2X           []float64   `json:"r2x"`
	R2XCumulative []float64   `json:"r2x_cumulative"`
	R2Y           [][]float64 `json:"r2y"`
	Q2            [][]float64 `json:"q2"`
	Leverage      []float64   `json:"leverage"`
	RMSEC         []float64   `json:"rmsec"`
	Scores        [][]float64 `json:"scores"`
	XWeights      [][]float64 `json:"x_weights"`
	XLoadings     [][]float64 `json:"x_loadings"`
}

const python = "/usr/bin/python3"

func requireNumPy(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import numpy, sklearn.cross_decomposition").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3-numpy and python3-sklearn are required in CI (make deps): %v", err)
		}
		t.Skip("Debian python3-numpy/python3-sklearn not available (make deps)")
	}
}

func runReference(t *testing.T, s trainingSet, regions [][2]float64, components, folds int, autoscale bool) referenceFigures {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	raw, err := json.Marshal(map[string]any{"X": s.X, "Y": s.Y, "wavenumbers": s.Wavenumbers, "regions": regions,
		"components": components, "folds": folds, "autoscale": autoscale})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(python, filepath.Join("testdata", "review_reference.py"), in, out).CombinedOutput(); err != nil {
		t.Fatalf("reference: %v\n%s", err, msg)
	}
	var ref referenceFigures
	raw, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// maxDiff returns max |got - want|, and records a length mismatch as +Inf.
func maxDiff(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range got {
		d = math.Max(d, math.Abs(got[i]-want[i]))
	}
	return d
}

// TestReviewParityWithNumPy trains a model (fixed component count,
// interleaved folds, so the reference can rebuild the same CV), saves and
// reads back its artifact, computes the review from the artifact alone
// and compares VIP, R²X, R²Y, Q², leverage and RMSEC with the reference
// computed from the training data.
func TestReviewParityWithNumPy(t *testing.T) {
	requireNumPy(t)
	s := newTrainingSet(48, 160, 3, 7)
	regions := [][2]float64{{450, 1200}, {1300, 1750}}
	for _, tc := range []struct {
		name      string
		autoscale bool
	}{{"centred", false}, {"autoscaled", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const components, folds = 5, 6
			res, err := trainer.Train(context.Background(), s.dataset(), trainer.Options{
				Folds: folds, Segments: trainer.SegmentsInterleaved, Components: components,
				Regions: regions, Autoscale: tc.autoscale, Wavenumbers: s.Wavenumbers, Workers: 1,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			params := roundTrip(t, res.Params)
			got, err := review.Compute(params)
			if err != nil {
				t.Fatal(err)
			}
			ref := runReference(t, s, regions, components, folds, tc.autoscale)

			worst := map[string]float64{
				"vip":      maxDiff(got.VIP, ref.VIP),
				"leverage": maxDiff(got.Leverage, ref.Leverage),
				"rmsec":    maxDiff(got.RMSEC, ref.RMSEC),
			}
			if len(got.Components) != components {
				t.Fatalf("%d components, want %d", len(got.Components), components)
			}
			for a, c := range got.Components {
				worst["r2x"] = math.Max(worst["r2x"], maxDiff([]float64{c.R2X}, []float64{ref.R2X[a]}))
				worst["r2x_cumulative"] = math.Max(worst["r2x_cumulative"], maxDiff([]float64{c.R2XCumulative}, []float64{ref.R2XCumulative[a]}))
				worst["r2y"] = math.Max(worst["r2y"], maxDiff(c.R2Y, ref.R2Y[a]))
				worst["q2"] = math.Max(worst["q2"], maxDiff(c.Q2, ref.Q2[a]))
			}
			scores := params.Review.Scores
			if scores == nil {
				t.Fatal("the artifact keeps no scores")
			}
			for i, row := range ref.Scores {
				worst["scores"] = math.Max(worst["scores"], maxDiff(scores.RawRowView(i), row))
			}
			if len(got.XWeights) != components || len(got.XLoadings) != components {
				t.Fatalf("%d weight and %d loading vectors, want %d", len(got.XWeights), len(got.XLoadings), components)
			}
			for a := range components {
				worst["x_weights"] = math.Max(worst["x_weights"], maxDiff(got.XWeights[a], ref.XWeights[a]))
				worst["x_loadings"] = math.Max(worst["x_loadings"], maxDiff(got.XLoadings[a], ref.XLoadings[a]))
			}
			for what, d := range worst {
				if !(d <= parityTolerance) {
					t.Errorf("%s: max |Go - NumPy| = %.3g, want <= %g", what, d, parityTolerance)
				}
			}
			t.Logf("max |Go - NumPy|: %v", worst)
			sumSq := 0.0
			for _, v := range got.VIP {
				sumSq += v * v
			}
			if math.Abs(sumSq-float64(len(got.VIP))) > 1e-9*float64(len(got.VIP)) {
				t.Errorf("sum of VIP² = %v, want p = %d", sumSq, len(got.VIP))
			}
		})
	}
}

// roundTrip writes and reads back the artifact: the review must be
// computable from what the file keeps.
func roundTrip(t *testing.T, p *inference.PLSParams) *inference.PLSParams {
	t.Helper()
	p.Meta.Version = "review-test"
	var buf bytes.Buffer
	if err := inference.WriteArtifact(&buf, p); err != nil {
		t.Fatal(err)
	}
	back, err := inference.ReadArtifact(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestReviewWithoutTrainingRecord: an imported model has no review.
func TestReviewWithoutTrainingRecord(t *testing.T) {
	if _, err := review.Compute(&inference.PLSParams{}); err != review.ErrNoTrainingRecord {
		t.Fatalf("err = %v, want ErrNoTrainingRecord", err)
	}
}
