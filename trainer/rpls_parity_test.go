package trainer_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/trainer"
)

// The R pls reference (testdata/rpls, written by testdata/rpls/reference.R
// through `make r-reference`; its README says what each file holds).
const rplsDir = "testdata/rpls"

// Tolerances of the R parity test.
const (
	// rmsepRelTol bounds |ours - R| / R for every RMSECV of the CV curve
	// and every held-out RMSEP: kernel PLS (R) and NIPALS (here) are the
	// same model in exact arithmetic.
	rmsepRelTol = 1e-9
	// regenerateRelTol bounds the drift of a regenerated R reference from
	// the committed one: R computes with whichever BLAS the machine has,
	// and Debian's reference BLAS and OpenBLAS round differently (up to
	// 1.1e-11 apart on these files), far inside rmsepRelTol.
	regenerateRelTol = 1e-10
)

// rSet is one data set of the pls package, resampled to 2048 points
// (or as shipped: then axis is its own, in source points from 0).
type rSet struct {
	name      string
	train     *trainer.Dataset
	testX     *mat.Dense
	testY     []float64
	trainRows int
	axis      []float64
}

// resample2048 interpolates a spectrum of p evenly spaced points linearly
// onto 2048 evenly spaced points over the same range, as reference.R does:
// t_k = k (p-1)/2047, i = min(floor(t_k), p-2), x'_k = x_i + (t_k - i)(x_{i+1} - x_i).
func resample2048(x []float64) []float64 {
	const m = trainer.NumWavenumbers
	p := len(x)
	out := make([]float64, m)
	for k := range out {
		t := float64(k*(p-1)) / float64(m-1)
		i := min(int(math.Floor(t)), p-2)
		f := t - float64(i)
		out[k] = x[i] + float64(f*(x[i+1]-x[i]))
	}
	return out
}

// loadRSet reads testdata/rpls/<name>.csv resampled to 2048 points:
// training rows are gasoline's first 50 and yarn's rows whose train
// column is true.
func loadRSet(t testing.TB, name string) *rSet {
	t.Helper()
	return loadRSetPoints(t, name, true)
}

// loadRSetPoints is loadRSet, with the spectra as shipped when resample
// is false.
func loadRSetPoints(t testing.TB, name string, resample bool) *rSet {
	t.Helper()
	points := resample2048
	if !resample {
		points = func(x []float64) []float64 { return x }
	}
	records := readCSV(t, filepath.Join(rplsDir, name+".csv"))
	header := records[0]
	trainCol := -1
	first := 2
	for c, h := range header {
		if h == "train" {
			trainCol, first = c, c+1
		}
	}
	p := trainer.NumWavenumbers
	if !resample {
		p = len(header) - first
	}
	s := &rSet{name: name, train: trainer.NewDataset(p, 1), axis: trainer.LinearAxis(0, float64(p-1), p)}
	var testRows [][]float64
	for r, rec := range records[1:] {
		raw := make([]float64, len(rec)-first)
		for c := range raw {
			raw[c] = parseFloat(t, rec[first+c])
		}
		y := parseFloat(t, rec[1])
		isTrain := r < 50
		if trainCol >= 0 {
			isTrain = rec[trainCol] == "true"
		}
		if isTrain {
			s.train.AppendRow(rec[0], points(raw), []float64{y})
			continue
		}
		testRows = append(testRows, points(raw))
		s.testY = append(s.testY, y)
	}
	s.trainRows = s.train.Len()
	s.testX = mat.NewDense(len(testRows), p, nil)
	for i, row := range testRows {
		s.testX.SetRow(i, row)
	}
	return s
}

func readCSV(t testing.TB, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return records
}

func parseFloat(t testing.TB, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// rValidations are the two cross-validations of the reference, as Options.
func rValidation(v string, rows int) trainer.Options {
	o := trainer.Options{Segments: trainer.SegmentsConsecutive, Folds: 10, Targets: []inference.Analyte{inference.EPA}, Seed: 1}
	if v == "loo" {
		o.Folds = rows
	}
	return o
}

// TestCrossValidationMatchesRPls: on gasoline and yarn (resampled to 2048
// points), with 10 consecutive segments and with leave-one-out, the CV
// curve equals R pls's RMSEP(model, estimate = "CV") to rmsepRelTol at
// every count, onesigma and randomization choose the count R's
// selectNcomp chooses, and randomization's p-values agree with R's within
// the Monte Carlo error of two independent sets of 999 sign flips.
func TestCrossValidationMatchesRPls(t *testing.T) {
	curves := map[string][]float64{} // "dataset/validation" -> RMSECV of 1..A
	for _, rec := range readCSV(t, filepath.Join(rplsDir, "reference_cv.csv"))[1:] {
		key := rec[0] + "/" + rec[1]
		if k, _ := strconv.Atoi(rec[2]); k != len(curves[key])+1 {
			t.Fatalf("reference_cv.csv: %s count %s out of order", key, rec[2])
		}
		curves[key] = append(curves[key], parseFloat(t, rec[3]))
	}
	choices := map[string]int{} // "dataset/validation/rule"
	for _, rec := range readCSV(t, filepath.Join(rplsDir, "reference_selection.csv"))[1:] {
		choices[rec[0]+"/"+rec[1]+"/"+rec[2]], _ = strconv.Atoi(rec[3])
	}
	pvalues := map[string]float64{} // "dataset/validation/count"
	for _, rec := range readCSV(t, filepath.Join(rplsDir, "reference_pvalues.csv"))[1:] {
		pvalues[rec[0]+"/"+rec[1]+"/"+rec[2]] = parseFloat(t, rec[3])
	}
	if len(curves) != 4 || len(choices) != 8 {
		t.Fatalf("reference has %d curves and %d choices, want 4 and 8", len(curves), len(choices))
	}
	for _, name := range []string{"gasoline", "yarn"} {
		set := loadRSet(t, name)
		for _, v := range []string{"consecutive10", "loo"} {
			key := name + "/" + v
			t.Run(key, func(t *testing.T) {
				want := curves[key]
				for _, rule := range []string{inference.RuleOneSigma, inference.RuleRandomization} {
					opts := rValidation(v, set.trainRows)
					opts.Rule = rule
					res, err := trainer.Train(context.Background(), set.train, opts, nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(res.CV) != len(want) {
						t.Fatalf("%s: %d counts cross-validated, R %d", rule, len(res.CV), len(want))
					}
					worst := 0.0
					for k, st := range res.CV {
						rel := math.Abs(st.RMSECV[0]-want[k]) / want[k]
						worst = math.Max(worst, rel)
						if rel > rmsepRelTol {
							t.Errorf("%d components: RMSECV %.17g, R %.17g (relative difference %.2g > %g)", k+1, st.RMSECV[0], want[k], rel, rmsepRelTol)
						}
					}
					if res.Components != choices[key+"/"+rule] {
						t.Errorf("%s chose %d components, R's selectNcomp %d", rule, res.Components, choices[key+"/"+rule])
					}
					t.Logf("%s: %s chose %d (R %d); largest relative RMSECV difference %.2g", key, rule, res.Components, choices[key+"/"+rule], worst)
					if rule != inference.RuleRandomization {
						continue
					}
					tested := 0
					for k, st := range res.CV {
						r, ok := pvalues[fmt.Sprintf("%s/%d", key, k+1)]
						if !ok {
							if !math.IsNaN(st.PValue) {
								t.Errorf("%d components: p-value %g where R tests none", k+1, st.PValue)
							}
							continue
						}
						tested++
						// Two independent estimates of one p, 999 flips each.
						tol := 4*math.Sqrt(2*r*(1-r)/999) + 1.0/1000
						if math.Abs(st.PValue-r) > tol {
							t.Errorf("%d components: p-value %.4f, R %.4f (tolerance %.4f)", k+1, st.PValue, r, tol)
						}
					}
					if tested == 0 {
						t.Errorf("no p-value compared")
					}
				}
			})
		}
	}
}

// TestHeldOutPredictionMatchesRPls: the model fitted on all training rows
// predicts the test rows (gasoline 51-60, yarn's 7) with the RMSEP R pls's
// predict gives, to rmsepRelTol, at every count 1..20.
func TestHeldOutPredictionMatchesRPls(t *testing.T) {
	want := map[string][]float64{}
	for _, rec := range readCSV(t, filepath.Join(rplsDir, "reference_test.csv"))[1:] {
		want[rec[0]] = append(want[rec[0]], parseFloat(t, rec[2]))
	}
	for _, name := range []string{"gasoline", "yarn"} {
		set := loadRSet(t, name)
		n := set.train.Len()
		X := mat.NewDense(n, trainer.NumWavenumbers, nil)
		Y := mat.NewDense(n, 1, nil)
		for i := 0; i < n; i++ {
			X.SetRow(i, set.train.Row(i))
			Y.Set(i, 0, set.train.Labels(i)[0])
		}
		m, err := trainer.FitPLS(context.Background(), X, Y, len(want[name]), false)
		if err != nil {
			t.Fatal(err)
		}
		for k, r := range want[name] {
			got := heldOutRMSEP(m.Predict(set.testX, k+1), set.testY)
			if rel := math.Abs(got-r) / r; rel > rmsepRelTol {
				t.Errorf("%s, %d components: held-out RMSEP %.17g, R %.17g (relative difference %.2g)", name, k+1, got, r, rel)
			}
		}
	}
}

func heldOutRMSEP(pred mat.Matrix, y []float64) float64 {
	ss := 0.0
	for i, v := range y {
		d := pred.At(i, 0) - v
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(y)))
}

// TestRReferenceIsCurrent regenerates the R reference with Debian's
// r-cran-pls (`make test-r` sets RAMANSERVE_TEST_R=1 after installing it)
// and fails when any file differs from the committed one: the data sets
// byte for byte, the selections and p-values exactly, the RMSEPs to
// regenerateRelTol.
func TestRReferenceIsCurrent(t *testing.T) {
	if os.Getenv("RAMANSERVE_TEST_R") != "1" {
		t.Skip("set RAMANSERVE_TEST_R=1 (make test-r) to regenerate the R pls reference and compare")
	}
	out := t.TempDir()
	cmd := exec.Command("Rscript", filepath.Join(rplsDir, "reference.R"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Rscript: %v\n%s", err, b)
	}
	if b, err := os.ReadFile(filepath.Join(out, "versions.txt")); err == nil {
		t.Logf("regenerated with %s", strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", ", "))
	}
	for _, name := range []string{"gasoline.csv", "yarn.csv"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join(rplsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(committed) {
			t.Errorf("%s: regenerated data differs from the committed file", name)
		}
	}
	for _, name := range []string{"reference_cv.csv", "reference_selection.csv", "reference_pvalues.csv", "reference_test.csv"} {
		got := readCSV(t, filepath.Join(out, name))
		committed := readCSV(t, filepath.Join(rplsDir, name))
		if len(got) != len(committed) {
			t.Errorf("%s: %d lines regenerated, %d committed", name, len(got), len(committed))
			continue
		}
		for i := range got {
			if len(got[i]) != len(committed[i]) {
				t.Errorf("%s line %d: %v regenerated, %v committed", name, i+1, got[i], committed[i])
				continue
			}
			for c := range got[i] {
				a, b := got[i][c], committed[i][c]
				if a == b {
					continue
				}
				x, errA := strconv.ParseFloat(a, 64)
				y, errB := strconv.ParseFloat(b, 64)
				inexact := name == "reference_cv.csv" || name == "reference_test.csv"
				if errA != nil || errB != nil || !inexact || math.Abs(x-y) > regenerateRelTol*math.Abs(y) {
					t.Errorf("%s line %d column %d: %s regenerated, %s committed", name, i+1, c+1, a, b)
				}
			}
		}
	}
}
