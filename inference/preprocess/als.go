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
// subdiagonals) and solves in O(n), with no dense matrix; from the second
// round on (and n >= twistedMin) the factorisation is twisted, top-down and
// bottom-up at once (see solveTwisted), which halves the length of the
// chain of dependent divisions. Compile stores
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
		last := it == a.iterations-1
		var changed bool
		if n >= twistedMin {
			changed = a.solveTwisted(x, w, z, ws, !last)
		} else {
			a.factorSolve(x, w, z, ws.d[:n], ws.l1[:n], ws.l2[:n])
			changed = a.solveBack(x, z, ws.d[:n], ws.l1[:n], ws.l2[:n], w, !last)
		}
		if !last && !changed {
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

// twistedMin is the least n solved by solveTwisted.
const twistedMin = 8

// solveTwisted solves (W + lam D'D) z = W x with a twisted factorisation:
// the sweep of factorSolve runs down from the first row and, mirrored, up
// from the last, in one loop, so that the two dependency chains (each
// bound by a division's latency) overlap; they meet at rows k, k+1, whose
// 2 x 2 system (the rows' entries less what both sweeps eliminated) gives
// z_k, z_k+1, and the back substitutions run outwards from there, again
// both in one loop. With reweight it sets the next round's weights on the
// way and reports whether any changed. n >= twistedMin.
func (a *alsPlan) solveTwisted(x, w, z []float64, ws *Workspace, reweight bool) bool {
	n := len(x)
	w, z = w[:n], z[:n]
	r, l1, l2 := ws.d[:n], ws.l1[:n], ws.l2[:n]
	b0, b1, b2 := a.b0[:n], a.b1[:n], a.b2[:n]
	k := (n - 2) / 2 // rows 0..k-1 from the top, n-1..k+2 from the bottom
	// The previous two rows' values of each sweep, in locals (a struct
	// copied per row goes through memory, on the critical path).
	var fr1, fr2, fe1, fl11, fl21, fl22, fb21, fb22, fy1, fy2 float64
	var gr1, gr2, ge1, gl11, gl21, gl22, gb21, gb22, gy1, gy2 float64
	for t := 0; t < n-k-2; t++ {
		if t < k {
			i := t
			base := w[i] + b0[i] - fb22*fb22*fr2
			ei := b1[i] - fl21*fe1
			di := base - fe1*fe1*fr1
			ri := 1 / di
			l1i, l2i := ei*ri, b2[i]*ri
			yi := w[i]*x[i] - fl22*fy2 - fl11*fy1
			r[i], l1[i], l2[i], z[i] = ri, l1i, l2i, yi
			fr2, fr1 = fr1, ri
			fe1, fl11 = ei, l1i
			fl22, fl21 = fl21, l2i
			fb22, fb21 = fb21, b2[i]
			fy2, fy1 = fy1, yi
		}
		// Mirrored: row j = n-1-t, whose neighbours towards the middle are
		// j-1 (entry b1[j-1]) and j-2 (entry b2[j-2]).
		j := n - 1 - t
		c1, c2 := b1[j-1], b2[j-2]
		base := w[j] + b0[j] - gb22*gb22*gr2
		ej := c1 - gl21*ge1
		dj := base - ge1*ge1*gr1
		rj := 1 / dj
		l1j, l2j := ej*rj, c2*rj
		yj := w[j]*x[j] - gl22*gy2 - gl11*gy1
		r[j], l1[j], l2[j], z[j] = rj, l1j, l2j, yj
		gr2, gr1 = gr1, rj
		ge1, gl11 = ej, l1j
		gl22, gl21 = gl21, l2j
		gb22, gb21 = gb21, c2
		gy2, gy1 = gy1, yj
	}
	// Rows k and k+1.
	m11 := w[k] + b0[k] - fb22*fb22*fr2 - fe1*fe1*fr1 - gb21*gb21*gr1
	m22 := w[k+1] + b0[k+1] - fb21*fb21*fr1 - gb22*gb22*gr2 - ge1*ge1*gr1
	m12 := b1[k] - fl21*fe1 - gl21*ge1
	h1 := w[k]*x[k] - fl22*fy2 - fl11*fy1 - gl21*gy1
	h2 := w[k+1]*x[k+1] - fl21*fy1 - gl22*gy2 - gl11*gy1
	det := m11*m22 - m12*m12
	zk, zk1 := (m22*h1-m12*h2)/det, (m11*h2-m12*h1)/det
	z[k], z[k+1] = zk, zk1

	sel := [2]float64{1 - a.p, a.p}
	changed := 0
	if reweight {
		for _, i := range [2]int{k, k + 1} {
			wi := sel[b2i(x[i] > z[i])]
			changed |= b2i(wi != w[i])
			w[i] = wi
		}
	}
	// Back substitution outwards: z_i = y_i / d_i - l2_i z_{i+-2} - l1_i z_{i+-1}.
	up1, up2 := zk, zk1 // z_{i+1}, z_{i+2} for the top half
	dn1, dn2 := zk1, zk // z_{j-1}, z_{j-2} for the bottom half
	for t := 0; t < n-k-2; t++ {
		if t < k {
			i := k - 1 - t
			zi := z[i]*r[i] - l2[i]*up2 - l1[i]*up1
			z[i] = zi
			up2, up1 = up1, zi
			if reweight {
				wi := sel[b2i(x[i] > zi)]
				changed |= b2i(wi != w[i])
				w[i] = wi
			}
		}
		j := k + 2 + t
		zj := z[j]*r[j] - l2[j]*dn2 - l1[j]*dn1
		z[j] = zj
		dn2, dn1 = dn1, zj
		if reweight {
			wj := sel[b2i(x[j] > zj)]
			changed |= b2i(wj != w[j])
			w[j] = wj
		}
	}
	return changed != 0
}
