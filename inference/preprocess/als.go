package preprocess

// alsPlan is an asymmetric least squares baseline (Eilers & Boelens,
// "Baseline correction with asymmetric least squares smoothing", 2005)
// compiled for n points.
//
// Each of `iterations` rounds solves
//
//	(W + lam D'D) z = W x
//
// with D the (n-2) x n second-difference matrix (rows [1 -2 1]) and W the
// diagonal of weights: all 1 in the first round, then w_i = p where
// x_i > z_i and 1 - p elsewhere, from the previous round's z. The last z is
// the baseline, and x - z the result. With fewer than 3 points D is empty,
// z = x and the result is zero.
//
// W + lam D'D is symmetric positive definite and pentadiagonal; each round
// factors it as L diag(d) L' (L unit lower triangular with two
// subdiagonals) and solves in O(n), with no dense matrix. Compile stores
// the three diagonals of lam D'D.
type alsPlan struct {
	p          float64
	iterations int
	// lam D'D: main diagonal, first and second subdiagonals.
	b0, b1, b2 []float64
}

func newALSPlan(s Step, n int) *alsPlan {
	a := &alsPlan{p: s.P, iterations: s.Iterations,
		b0: make([]float64, n), b1: make([]float64, n), b2: make([]float64, n)}
	// D'D = sum over the rows r of D of v v', v = (1, -2, 1) at r, r+1, r+2.
	v := [3]float64{1, -2, 1}
	for r := 0; r+2 < n; r++ {
		for s := 0; s < 3; s++ {
			a.b0[r+s] += v[s] * v[s]
			if s+1 < 3 {
				a.b1[r+s] += v[s] * v[s+1]
			}
			if s+2 < 3 {
				a.b2[r+s] += v[s] * v[s+2]
			}
		}
	}
	for i := range a.b0 {
		a.b0[i] *= s.Lambda
		a.b1[i] *= s.Lambda
		a.b2[i] *= s.Lambda
	}
	return a
}

// apply subtracts the baseline from x in place.
func (a *alsPlan) apply(x []float64, ws *Workspace) {
	n := len(x)
	if n < 3 {
		for i := range x {
			x[i] = 0
		}
		return
	}
	w, z := ws.w[:n], ws.z[:n]
	for i := range w {
		w[i] = 1
	}
	for it := 0; it < a.iterations; it++ {
		if it > 0 {
			for i := range w {
				if x[i] > z[i] {
					w[i] = a.p
				} else {
					w[i] = 1 - a.p
				}
			}
		}
		a.solve(x, w, z, ws)
	}
	for i := range x {
		x[i] -= z[i]
	}
}

// solve sets z to the solution of (W + lam D'D) z = W x by a banded
// L diag(d) L' factorisation:
//
//	d_i  = a_ii - l1_{i-1}^2 d_{i-1} - l2_{i-2}^2 d_{i-2}
//	l1_i = (a_{i+1,i} - l2_{i-1} l1_{i-1} d_{i-1}) / d_i
//	l2_i = a_{i+2,i} / d_i
//
// then L y = W x forward, z = L'^-1 (y / d) backward.
func (a *alsPlan) solve(x, w, z []float64, ws *Workspace) {
	n := len(x)
	d, l1, l2 := ws.d[:n], ws.l1[:n], ws.l2[:n]
	b0, b1, b2 := a.b0[:n], a.b1[:n], a.b2[:n]
	// Factor and forward-substitute in one sweep; z holds y.
	var dm1, dm2, l1m1, l2m1, l2m2, ym1, ym2 float64
	for i := 0; i < n; i++ {
		di := w[i] + b0[i] - l1m1*l1m1*dm1 - l2m2*l2m2*dm2
		inv := 1 / di
		l1i := (b1[i] - l2m1*l1m1*dm1) * inv
		l2i := b2[i] * inv
		yi := w[i]*x[i] - l1m1*ym1 - l2m2*ym2
		d[i], l1[i], l2[i], z[i] = inv, l1i, l2i, yi
		dm2, dm1 = dm1, di
		l1m1 = l1i
		l2m2, l2m1 = l2m1, l2i
		ym2, ym1 = ym1, yi
	}
	// Back substitution: z_i = y_i / d_i - l1_i z_{i+1} - l2_i z_{i+2}.
	var zp1, zp2 float64
	for i := n - 1; i >= 0; i-- {
		zi := z[i]*d[i] - l1[i]*zp1 - l2[i]*zp2
		z[i] = zi
		zp2, zp1 = zp1, zi
	}
}
