package preprocess

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"testing"
)

// row returns the weights of window position i: the deriv-th derivative at
// i of the fit through the window is sum_j row[j] x[j].
func (p *savgolPlan) row(i int) []float64 {
	kk := p.k + 1
	out := make([]float64, p.window)
	for j := range out {
		for m := 0; m < kk; m++ {
			out[j] += p.q[j*kk+m] * p.bm[i*kk+m]
		}
	}
	return out
}

// TestSavgolCoefficientsExact checks the coefficients, edge rows and
// centred convolution alike, against rational arithmetic, including the
// windows and orders where SciPy's own least-squares solve is inaccurate.
func TestSavgolCoefficientsExact(t *testing.T) {
	if err := exec.Command(python, "-c", "import fractions").Run(); err != nil {
		t.Skipf("needs %s: %v", python, err)
	}
	type request struct {
		Window    int   `json:"window"`
		PolyOrder int   `json:"polyorder"`
		Deriv     int   `json:"deriv"`
		Rows      []int `json:"rows"`
	}
	var reqs []request
	for _, c := range [][3]int{
		{3, 0, 0}, {3, 2, 2}, {5, 4, 4}, {7, 3, 1}, {15, 2, 1}, {15, 5, 0}, {21, 6, 3},
		{31, 4, 0}, {31, 10, 3}, {51, 5, 1}, {101, 8, 2}, {255, 10, 4}, {301, 5, 3},
		{1001, 2, 1}, {2047, 3, 0}, {2047, 10, 4},
	} {
		w := c[0]
		h := w / 2
		rows := []int{0, 1, h / 2, h, h + 1, w - 2, w - 1}
		if w <= 31 {
			rows = rows[:0]
			for i := 0; i < w; i++ {
				rows = append(rows, i)
			}
		}
		reqs = append(reqs, request{w, c[1], c[2], rows})
	}
	in, _ := json.Marshal(reqs)
	cmd := exec.Command(python, "testdata/exact_savgol.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("exact_savgol.py: %v\n%s", err, stderr.String())
	}
	var exact [][][]float64
	if err := json.Unmarshal(out, &exact); err != nil {
		t.Fatal(err)
	}
	for ci, req := range reqs {
		s := Step{Kind: Savgol, Window: req.Window, PolyOrder: req.PolyOrder, Deriv: req.Deriv}
		p, err := newSavgolPlan(0, s, req.Window)
		if err != nil {
			t.Fatal(err)
		}
		for ri, i := range req.Rows {
			got, want := p.row(i), exact[ci][ri]
			if i == p.half {
				got = p.full
			}
			// The error of an output is at most sum_j |e_j| max|x|: bound it
			// relative to the data scale.
			var errSum float64
			for j := range got {
				errSum += math.Abs(got[j] - want[j])
			}
			name := fmt.Sprintf("savgol(%d,%d,%d) row %d", req.Window, req.PolyOrder, req.Deriv, i)
			if !(errSum <= 1e-13) {
				t.Errorf("%s: sum of coefficient errors %.3g, want <= 1e-13", name, errSum)
			}
		}
	}
}

// The running sums of interiorSlope agree with the plain convolution to
// 1e-14 of the data's scale, on data with a large offset and a dynamic
// range of 1e9 (spikes), where their rounding would show first.
func TestSavgolSlopeRunningSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, w := range []int{3, 5, 15, 31, 129, 2047} {
		for _, k := range []int{1, 2} {
			p, err := newSavgolPlan(0, Step{Kind: Savgol, Window: w, PolyOrder: k, Deriv: 1}, 2048)
			if err != nil {
				t.Fatal(err)
			}
			src := make([]float64, 2048)
			for i := range src {
				src[i] = 1e6 + 1e3*math.Sin(float64(i)/50) + rng.NormFloat64()
				if rng.IntN(100) == 0 {
					src[i] += 1e9 * rng.Float64()
				}
			}
			fast, plain := make([]float64, 2048), make([]float64, 2048)
			p.interiorSlope(fast, src)
			p.interior(plain, src)
			compare(t, fmt.Sprintf("savgol(%d,%d,1) running sums", w, k), fast, plain, maxAbs(src), 1e-14)
		}
	}
}
