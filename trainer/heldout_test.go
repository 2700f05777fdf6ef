package trainer

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// explicitDiagnostics returns T2 and Q of the scaled row xs under the
// first k components of m by the textbook formulas: t = xs R_k,
// T2 = sum_c t_c^2 / s_c^2, Q = ||xs - P_k t||^2.
func explicitDiagnostics(m *PLS, xs []float64, k int) (t2, q float64) {
	p := len(xs)
	R := m.Rotations(k)
	t := make([]float64, k)
	for c := 0; c < k; c++ {
		for j := 0; j < p; j++ {
			t[c] += xs[j] * R.At(j, c)
		}
		t2 += t[c] * t[c] / m.ScoreVariance[c]
	}
	for j := 0; j < p; j++ {
		r := xs[j]
		for c := 0; c < k; c++ {
			r -= m.P.At(j, c) * t[c]
		}
		q += r * r
	}
	return t2, q
}

func scaledRows(m *PLS, rows [][]float64) *mat.Dense {
	Xs := mat.NewDense(len(rows), len(rows[0]), nil)
	for i, row := range rows {
		out := Xs.RawRowView(i)
		for j, v := range row {
			out[j] = (v - m.XMean[j]) / m.XScale[j]
		}
	}
	return Xs
}

func closeTo(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-300)
}

// TestHeldOutDiagnosticsMatchTheFormulas checks the per-component
// figures a fit records and the deflation that computes held-out T2 and
// Q against the explicit formulas with x_rotations_: score variances of
// the training rows, their summed Q (ResidualSS), and T2 and Q of new
// rows for every component count, mean-centred and autoscaled.
func TestHeldOutDiagnosticsMatchTheFormulas(t *testing.T) {
	raw, err := os.ReadFile("testdata/pls_parity.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx parityFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	const amax = 8
	const rel = 1e-9
	for _, scale := range []bool{false, true} {
		m, err := FitPLS(context.Background(), denseOf(fx.X), denseOf(fx.Y), amax, scale)
		if err != nil {
			t.Fatal(err)
		}
		n := len(fx.X)
		train := scaledRows(m, fx.X)
		for k := 1; k <= amax; k++ {
			var T mat.Dense
			T.Mul(train, m.Rotations(k))
			col := mat.Col(nil, k-1, &T)
			var mean, ss float64
			for _, v := range col {
				mean += v / float64(n)
			}
			for _, v := range col {
				ss += (v - mean) * (v - mean)
			}
			if v := ss / float64(n-1); !closeTo(m.ScoreVariance[k-1], v, rel) {
				t.Errorf("scale=%v: score variance %d = %v, want %v", scale, k, m.ScoreVariance[k-1], v)
			}
			var sumQ float64
			for i := 0; i < n; i++ {
				_, q := explicitDiagnostics(m, train.RawRowView(i), k)
				sumQ += q
			}
			if !closeTo(m.ResidualSS[k-1], sumQ, rel) {
				t.Errorf("scale=%v: residual sum of squares with %d components = %v, want %v", scale, k, m.ResidualSS[k-1], sumQ)
			}
		}

		test := scaledRows(m, fx.XTest)
		rows := make([]int, len(fx.XTest))
		for i := range rows {
			rows[i] = i
		}
		// One more component count than the fit has: the last model
		// stands.
		oof := newOutOfFold(len(rows), len(fx.Y[0]), 1, amax+1)
		heldOutDiagnostics(test, rows, m, amax+1, oof)
		for k := 1; k <= amax+1; k++ {
			for i := range rows {
				t2, q := explicitDiagnostics(m, test.RawRowView(i), min(k, amax))
				if !closeTo(oof.t2[k-1][i], t2, rel) || !closeTo(oof.q[k-1][i], q, rel) {
					t.Fatalf("scale=%v, %d components, row %d: T2 %v and Q %v, want %v and %v",
						scale, k, i, oof.t2[k-1][i], oof.q[k-1][i], t2, q)
				}
			}
		}
	}
}

// TestHeldOutQIsOnTheFinalModelsScale: each held-out Q is multiplied by
// the final model's mean calibration Q over its own fold model's mean
// training Q; a fold with zero training Q is left as it is.
func TestHeldOutQIsOnTheFinalModelsScale(t *testing.T) {
	oof := newOutOfFold(4, 1, 3, 2)
	oof.q[1] = []float64{1, 2, 3, 4}
	oof.trainQ[0][1] = 2
	oof.trainQ[1][1] = 8
	oof.trainQ[2][1] = 0
	got := oof.heldOutQ([]int{0, 1, 1, 2}, 2, 4)
	want := []float64{1 * 4.0 / 2, 2 * 4.0 / 8, 3 * 4.0 / 8, 4}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("held-out Q %d = %v, want %v", i, got[i], want[i])
		}
	}
}
