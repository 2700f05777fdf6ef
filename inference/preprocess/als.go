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
// the three diagonals of lam D'D and the factors of the first round's
// I + lam D'D, which do not depend on the spectrum. A round whose weights
// equal the previous round's would give the same z again, so the rounds
// stop there: the result is the same as running all of them.
type alsPlan struct {
	p          float64
	iterations int
	// lam D'D: main diagonal, first and second subdiagonals.
	b0, b1, b2 []float64
	// L diag(d) L' of I + lam D'D: 1/d, first and second subdiagonals of L.
	r1, l11, l21 []float64
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
	a.r1, a.l11, a.l21 = make([]float64, n), make([]float64, n), make([]float64, n)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	a.factorSolve(ones, ones, make([]float64, n), a.r1, a.l11, a.l21)
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
	copy(z, x)
	a.solve(z, a.r1, a.l11, a.l21)
	a.weights(x, z, w)
	for it := 1; it < a.iterations; it++ {
		a.factorSolve(x, w, z, ws.d[:n], ws.l1[:n], ws.l2[:n])
		last := it == a.iterations-1
		if changed := a.solveBack(x, z, ws.d[:n], ws.l1[:n], ws.l2[:n], w, !last); !last && !changed {
			break
		}
	}
	for i := range x {
		x[i] -= z[i]
	}
}

// weights sets w_i = p where x_i > z_i and 1 - p elsewhere.
func (a *alsPlan) weights(x, z, w []float64) {
	sel := [2]float64{1 - a.p, a.p}
	z, w = z[:len(x)], w[:len(x)]
	for i, xi := range x {
		w[i] = sel[b2i(xi > z[i])]
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// factorSolve factors W + lam D'D = L diag(d) L' and runs the forward
// substitution L y = W x in the same sweep, leaving y in z and 1/d, the
// two subdiagonals of L in r, l1, l2. With e_i = d_i l1_i:
//
//	d_i  = w_i + (lam D'D)_ii - a_{i,i-2}^2 / d_{i-2} - e_{i-1}^2 / d_{i-1}
//	e_i  = a_{i+1,i} - l2_{i-1} e_{i-1}
//	l1_i = e_i / d_i,   l2_i = a_{i+2,i} / d_i
//	y_i  = w_i x_i - l1_{i-1} y_{i-1} - l2_{i-2} y_{i-2}
//
// (the order keeps one multiplication, one subtraction and the division
// on the sweep's critical path).
func (a *alsPlan) factorSolve(x, w, z, r, l1, l2 []float64) {
	n := len(x)
	b0, b1, b2 := a.b0[:n], a.b1[:n], a.b2[:n]
	w, z, r, l1, l2 = w[:n], z[:n], r[:n], l1[:n], l2[:n]
	var rm1, rm2, em1, l1m1, l2m1, l2m2, b2m1, b2m2, ym1, ym2 float64
	for i := 0; i < n; i++ {
		base := w[i] + b0[i] - b2m2*b2m2*rm2
		ei := b1[i] - l2m1*em1
		di := base - em1*em1*rm1
		ri := 1 / di
		l1i, l2i := ei*ri, b2[i]*ri
		yi := w[i]*x[i] - l2m2*ym2 - l1m1*ym1
		r[i], l1[i], l2[i], z[i] = ri, l1i, l2i, yi
		rm2, rm1 = rm1, ri
		em1 = ei
		l1m1 = l1i
		l2m2, l2m1 = l2m1, l2i
		b2m2, b2m1 = b2m1, b2[i]
		ym2, ym1 = ym1, yi
	}
	_ = b2m1
}

// solve solves L diag(d) L' z = z in place with stored factors (the first
// round, W = I).
func (a *alsPlan) solve(z, r, l1, l2 []float64) {
	n := len(z)
	l1, l2 = l1[:n], l2[:n]
	var ym1, ym2, l1m1, l2m2, l2m1 float64
	for i := 0; i < n; i++ {
		yi := z[i] - l2m2*ym2 - l1m1*ym1
		z[i] = yi
		ym2, ym1 = ym1, yi
		l1m1 = l1[i]
		l2m2, l2m1 = l2m1, l2[i]
	}
	a.solveBack(nil, z, r, l1, l2, nil, false)
}

// solveBack: z_i = y_i / d_i - l2_i z_{i+2} - l1_i z_{i+1}, from the end.
// With reweight it also sets the next round's weights from z as it goes
// (one pass instead of two) and reports whether any weight changed.
func (a *alsPlan) solveBack(x, z, r, l1, l2, w []float64, reweight bool) bool {
	n := len(z)
	r, l1, l2 = r[:n], l1[:n], l2[:n]
	var zp1, zp2 float64
	if !reweight {
		for i := n - 1; i >= 0; i-- {
			zi := z[i]*r[i] - l2[i]*zp2 - l1[i]*zp1
			z[i] = zi
			zp2, zp1 = zp1, zi
		}
		return false
	}
	x, w = x[:n], w[:n]
	sel := [2]float64{1 - a.p, a.p}
	changed := 0
	for i := n - 1; i >= 0; i-- {
		zi := z[i]*r[i] - l2[i]*zp2 - l1[i]*zp1
		z[i] = zi
		zp2, zp1 = zp1, zi
		wi := sel[b2i(x[i] > zi)]
		changed |= b2i(wi != w[i])
		w[i] = wi
	}
	return changed != 0
}
