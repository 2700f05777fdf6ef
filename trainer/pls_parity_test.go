package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// parityFixture mirrors testdata/pls_parity.json, written by
// testdata/gen_parity.py with Debian's scikit-learn 1.2.1.
type parityFixture struct {
	SklearnVersion string      `json:"sklearn_version"`
	X              [][]float64 `json:"X"`
	Y              [][]float64 `json:"Y"`
	XTest          [][]float64 `json:"X_test"`
	Cases          []struct {
		Scale        bool        `json:"scale"`
		NTargets     int         `json:"n_targets"`
		NComponents  int         `json:"n_components"`
		Coef         [][]float64 `json:"coef"`
		Intercept    []float64   `json:"intercept"`
		XRotations   [][]float64 `json:"x_rotations"`
		NIter        []int       `json:"n_iter"`
		PredictTrain [][]float64 `json:"predict_train"`
		PredictTest  [][]float64 `json:"predict_test"`
	} `json:"cases"`
}

func denseOf(rows [][]float64) *mat.Dense {
	m := mat.NewDense(len(rows), len(rows[0]), nil)
	for i, r := range rows {
		m.SetRow(i, r)
	}
	return m
}

// maxAbsDiff returns max |a - b| over all entries, and max |b| for scale.
func maxAbsDiff(a mat.Matrix, b [][]float64) (diff, size float64) {
	for i, row := range b {
		for j, v := range row {
			diff = math.Max(diff, math.Abs(a.At(i, j)-v))
			size = math.Max(size, math.Abs(v))
		}
	}
	return diff, size
}

// TestPLSParitySklearn compares FitPLS with scikit-learn's PLSRegression
// at 1, 5 and 10 components, 3 targets and 1, scale off and on:
// coefficients, predictions (train and held out) and x_rotations_ must
// agree to 1e-8 (absolute, on values of order 1..100), and the number of
// power iterations per component must be identical.
func TestPLSParitySklearn(t *testing.T) {
	raw, err := os.ReadFile("testdata/pls_parity.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx parityFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	X, Xtest := denseOf(fx.X), denseOf(fx.XTest)
	const tol = 1e-8
	worst := map[string]float64{}
	for _, tc := range fx.Cases {
		name := fmt.Sprintf("scale=%v/targets=%d/components=%d", tc.Scale, tc.NTargets, tc.NComponents)
		t.Run(name, func(t *testing.T) {
			Y := denseOf(fx.Y).Slice(0, len(fx.Y), 0, tc.NTargets)
			m, err := FitPLS(context.Background(), X, mat.DenseCopyOf(Y), tc.NComponents, tc.Scale)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(m.NIter) != fmt.Sprint(tc.NIter) {
				t.Errorf("n_iter = %v, sklearn %v", m.NIter, tc.NIter)
			}
			for j, v := range tc.Intercept {
				if math.Abs(m.YMean[j]-v) > tol {
					t.Errorf("intercept[%d] = %v, sklearn %v", j, m.YMean[j], v)
				}
			}
			checks := []struct {
				what string
				got  mat.Matrix
				want [][]float64
			}{
				{"coef", m.Coef(tc.NComponents), tc.Coef},
				{"x_rotations", m.Rotations(tc.NComponents), tc.XRotations},
				{"predict_train", m.Predict(X, tc.NComponents), tc.PredictTrain},
				{"predict_test", m.Predict(Xtest, tc.NComponents), tc.PredictTest},
			}
			for _, c := range checks {
				diff, size := maxAbsDiff(c.got, c.want)
				worst[c.what] = math.Max(worst[c.what], diff)
				if diff > tol {
					t.Errorf("%s: max |diff| = %.3g (values up to %.3g), want <= %g", c.what, diff, size, tol)
				}
			}
		})
	}
	t.Logf("sklearn %s: worst max |diff| %v", fx.SklearnVersion, worst)
}

// TestPLSNestedComponents checks the property the fast cross-validation
// relies on: a fit with 10 components, used at k components, equals a fit
// with k components.
func TestPLSNestedComponents(t *testing.T) {
	raw, err := os.ReadFile("testdata/pls_parity.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx parityFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	X, Y := denseOf(fx.X), denseOf(fx.Y)
	for _, scale := range []bool{false, true} {
		full, err := FitPLS(context.Background(), X, Y, 10, scale)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{1, 3, 7} {
			small, err := FitPLS(context.Background(), X, Y, k, scale)
			if err != nil {
				t.Fatal(err)
			}
			a, b := full.Coef(k), small.Coef(k)
			rows, cols := a.Dims()
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					if a.At(i, j) != b.At(i, j) {
						t.Fatalf("scale=%v k=%d: coef[%d,%d] %v != %v", scale, k, i, j, a.At(i, j), b.At(i, j))
					}
				}
			}
		}
	}
}
