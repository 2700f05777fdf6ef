package preprocess

import "math"

// savgolPlan is a Savitzky-Golay step compiled for n points.
//
// Savitzky & Golay (Anal. Chem. 36 (1964) 1627-1639): the value at point i
// is the deriv-th derivative, at i, of the polynomial of degree polyorder
// fitted by least squares to the window points around i (unit spacing,
// delta = 1). As in scipy.signal.savgol_filter(mode="interp"):
//
//   - interior points (h <= i < n-h, h = window/2) use the centred fit,
//     a convolution with fixed coefficients c:
//     y[i] = c[0] x[i] + sum_{j=1..h} c[j] (x[i+j] + (-1)^deriv x[i-j]);
//   - the first h points take the derivative, at their own positions, of
//     the one polynomial fitted to x[0:window], and the last h points that
//     of the polynomial fitted to x[n-window:n].
//
// All of these are linear in the window's data. With the fit written in an
// orthonormal basis of the window's polynomials, q_m (m = 0..polyorder,
// from a QR factorisation of Chebyshev polynomials of the window position
// scaled to [-1, 1], which keeps the basis well conditioned for every
// window and order), the fitted derivative at window position i is
//
//	y_i = sum_m B[i][m] g_m,   g_m = sum_j q_m[j] x[j],
//
// with B = V_d R^-1, V_d[i][m] the deriv-th derivative of the m-th
// Chebyshev polynomial at position i. Compile stores q and B; the interior
// coefficients are c[j] = sum_m q_m[h+j] B[h][m].
type savgolPlan struct {
	n, window, half, k int
	c                  []float64 // c[0..half]: centred coefficients, c[j] at offset +j
	odd                bool      // deriv odd: the coefficients are antisymmetric
	full               []float64 // the window's coefficients, full[h+j] = c[j], full[h-j] = +-c[j]
	slope              bool      // deriv 1, polyorder 1 or 2: c[j] = j / sum_{|j|<=h} j^2 (interiorSlope)
	q                  []float64 // window x (k+1), row-major: q[j*(k+1)+m]
	bm                 []float64 // window x (k+1), row-major: B[i][m]
}

func newSavgolPlan(i int, s Step, n int) (*savgolPlan, error) {
	switch {
	case s.Window%2 == 0:
		return nil, fieldErr(stepField(i, "window"), "%d must be odd", s.Window)
	case s.Window <= s.PolyOrder:
		return nil, fieldErr(stepField(i, "window"), "%d must be greater than polyorder %d", s.Window, s.PolyOrder)
	case s.Window > n:
		return nil, fieldErr(stepField(i, "window"), "%d is more than the %d points of the axis", s.Window, n)
	case s.Deriv > s.PolyOrder:
		return nil, fieldErr(stepField(i, "deriv"), "%d must be at most polyorder %d", s.Deriv, s.PolyOrder)
	}
	w, k := s.Window, s.PolyOrder
	h := w / 2
	kk := k + 1
	p := &savgolPlan{n: n, window: w, half: h, k: k, odd: s.Deriv%2 == 1}

	// Chebyshev polynomials T_m and their derivatives up to deriv, at the
	// scaled positions t_j = (j - h) / h.
	cheb := make([]float64, (s.Deriv+1)*kk) // cheb[dd*kk+m]
	chebAt := func(t float64) {
		for dd := 0; dd <= s.Deriv; dd++ {
			for m := 0; m < kk; m++ {
				cheb[dd*kk+m] = 0
			}
		}
		cheb[0] = 1
		if kk > 1 {
			cheb[1] = t
			if s.Deriv >= 1 {
				cheb[kk+1] = 1
			}
		}
		// T^(dd)_{m+1} = 2 dd T^(dd-1)_m + 2 t T^(dd)_m - T^(dd)_{m-1}
		for m := 1; m+1 < kk; m++ {
			for dd := 0; dd <= s.Deriv; dd++ {
				v := 2*t*cheb[dd*kk+m] - cheb[dd*kk+m-1]
				if dd > 0 {
					v += 2 * float64(dd) * cheb[(dd-1)*kk+m]
				}
				cheb[dd*kk+m+1] = v
			}
		}
	}
	scale := float64(h)

	// QR of V[j][m] = T_m(t_j) by Gram-Schmidt with reorthogonalisation.
	q := make([]float64, w*kk)
	for j := 0; j < w; j++ {
		chebAt(float64(j-h) / scale)
		copy(q[j*kk:(j+1)*kk], cheb[:kk])
	}
	r := make([]float64, kk*kk) // r[l*kk+m]
	for m := 0; m < kk; m++ {
		for pass := 0; pass < 2; pass++ {
			for l := 0; l < m; l++ {
				var dot float64
				for j := 0; j < w; j++ {
					dot += q[j*kk+l] * q[j*kk+m]
				}
				for j := 0; j < w; j++ {
					q[j*kk+m] -= dot * q[j*kk+l]
				}
				r[l*kk+m] += dot
			}
		}
		var norm float64
		for j := 0; j < w; j++ {
			norm += q[j*kk+m] * q[j*kk+m]
		}
		norm = math.Sqrt(norm)
		r[m*kk+m] = norm
		for j := 0; j < w; j++ {
			q[j*kk+m] /= norm
		}
	}

	// B[i] solves u R = V_d[i] (forward substitution on R^T).
	bm := make([]float64, w*kk)
	dscale := math.Pow(scale, -float64(s.Deriv))
	for i := 0; i < w; i++ {
		chebAt(float64(i-h) / scale)
		u := bm[i*kk : (i+1)*kk]
		for m := 0; m < kk; m++ {
			v := cheb[s.Deriv*kk+m] * dscale
			for l := 0; l < m; l++ {
				v -= r[l*kk+m] * u[l]
			}
			u[m] = v / r[m*kk+m]
		}
	}
	p.q, p.bm = q, bm

	// Centred coefficients, symmetrised: c[j] = E[h+j] = +-E[h-j].
	full := make([]float64, w)
	for j := 0; j < w; j++ {
		var v float64
		for m := 0; m < kk; m++ {
			v += q[j*kk+m] * bm[h*kk+m]
		}
		full[j] = v
	}
	p.c = make([]float64, h+1)
	p.c[0] = full[h]
	if p.odd {
		p.c[0] = 0
	}
	for j := 1; j <= h; j++ {
		if p.odd {
			p.c[j] = (full[h+j] - full[h-j]) / 2
		} else {
			p.c[j] = (full[h+j] + full[h-j]) / 2
		}
	}
	sign := 1.0
	if p.odd {
		sign = -1
	}
	full[h] = p.c[0]
	for j := 1; j <= h; j++ {
		full[h+j], full[h-j] = p.c[j], sign*p.c[j]
	}
	p.full = full
	p.slope = s.Deriv == 1 && s.PolyOrder <= 2
	return p, nil
}

// apply filters x in place; tmp has at least n points.
func (p *savgolPlan) apply(x, tmp []float64) {
	n, h := p.n, p.half
	src := tmp[:n]
	copy(src, x)
	if p.slope {
		p.interiorSlope(x, src)
	} else {
		p.interior(x, src)
	}
	p.edge(x, src, 0, 0, h)
	p.edge(x, src, n-p.window, h+1, p.window)
}

// edge sets x[start+i] for window positions i in [from, to) from the
// polynomial fitted to src[start:start+window].
func (p *savgolPlan) edge(x, src []float64, start, from, to int) {
	kk := p.k + 1
	var gbuf [maxPolyOrder + 1]float64
	g := gbuf[:kk]
	win := src[start : start+p.window]
	for j, v := range win {
		row := p.q[j*kk : (j+1)*kk]
		for m := range g {
			g[m] += row[m] * v
		}
	}
	for i := from; i < to; i++ {
		row := p.bm[i*kk : (i+1)*kk]
		var v float64
		for m := range g {
			v += row[m] * g[m]
		}
		x[start+i] = v
	}
}

// interior sets x[h:n-h],
//
//	y_i = c[0] x_i + sum_{j=1..h} c[j] (x_{i+j} +- x_{i-j}),
//
// four outputs at a time, sliding the right and left neighbours through
// registers: each step over j loads two new values and keeps four
// independent sums, so that the loop is bound by arithmetic throughput,
// not by the latency of one running sum.
func (p *savgolPlan) interior(x, src []float64) {
	n, h := p.n, p.half
	c := p.c[1:]
	c0 := p.c[0]
	sign := 1.0
	if p.odd {
		sign = -1
	}
	i := h
	for ; i+4 <= n-h; i += 4 {
		// right[t+j] = x[i+1+t+j] and left[h-1-j+t] = x[i-1-j+t], t = 0..3.
		right := src[i+1 : i+1+len(c)+3]
		left := src[i-len(c) : i+3]
		right = right[3:]
		right = right[:len(c)]
		r0, r1, r2 := src[i+1], src[i+2], src[i+3]
		l1, l2, l3 := src[i], src[i+1], src[i+2]
		a0, a1, a2, a3 := c0*src[i], c0*src[i+1], c0*src[i+2], c0*src[i+3]
		if p.odd {
			for j, cj := range c {
				r3 := right[j]
				l0 := left[len(c)-1-j]
				a0 += cj * (r0 - l0)
				a1 += cj * (r1 - l1)
				a2 += cj * (r2 - l2)
				a3 += cj * (r3 - l3)
				r0, r1, r2 = r1, r2, r3
				l1, l2, l3 = l0, l1, l2
			}
		} else {
			for j, cj := range c {
				r3 := right[j]
				l0 := left[len(c)-1-j]
				a0 += cj * (r0 + l0)
				a1 += cj * (r1 + l1)
				a2 += cj * (r2 + l2)
				a3 += cj * (r3 + l3)
				r0, r1, r2 = r1, r2, r3
				l1, l2, l3 = l0, l1, l2
			}
		}
		out := x[i : i+4]
		out[0], out[1], out[2], out[3] = a0, a1, a2, a3
	}
	for ; i < n-h; i++ {
		a := c0 * src[i]
		for j, cj := range c {
			a += cj * (src[i+1+j] + sign*src[i-1-j])
		}
		x[i] = a
	}
}

// slopeBlock is how many points interiorSlope carries its running sums
// before it sums the window afresh, which bounds the rounding they gather.
const slopeBlock = 64

// interiorSlope is interior for deriv 1 and polyorder 1 or 2, where the
// centred coefficients are c_j = j / sum_{|j|<=h} j^2 (the quadratic term
// does not change the slope at the centre), by running sums in O(1) per
// point instead of O(window):
//
//	S_i = sum_{|j|<=h} x_{i+j},   U_i = sum_{|j|<=h} j x_{i+j},   y_i = U_i / sum j^2,
//	S_{i+1} = S_i + x_{i+h+1} - x_{i-h},
//	U_{i+1} = U_i + h x_{i-h} + (h+1) x_{i+h+1} - S_{i+1}.
//
// Every slopeBlock points the sums restart from the window itself, so the
// rounding they gather stays below 1e-15 of the data's scale.
func (p *savgolPlan) interiorSlope(x, src []float64) {
	n, h := p.n, p.half
	fh := float64(h)
	kappa := 3 / (fh * (fh + 1) * (2*fh + 1)) // 1 / sum_{|j|<=h} j^2
	for start := h; start < n-h; start += slopeBlock {
		end := min(start+slopeBlock, n-h)
		var u, s float64
		for j, v := range src[start-h : start+h+1] {
			u += float64(j-h) * v
			s += v
		}
		x[start] = kappa * u
		for i := start; i+1 < end; i++ {
			out, in := src[i-h], src[i+h+1]
			s += in - out
			u += fh*out + (fh+1)*in - s
			x[i+1] = kappa * u
		}
	}
}
