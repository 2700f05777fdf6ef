package trainer

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// eps is float64 machine epsilon, numpy's np.finfo(np.float64).eps = 2^-52.
const eps = 0x1p-52

// NIPALS parameters of scikit-learn's PLSRegression (defaults of every
// version from 0.24 to 1.6).
const (
	nipalsTol     = 1e-6 // on ||w - w_old||^2
	nipalsMaxIter = 500
)

// PLS is a fitted PLS2 regression in the notation of scikit-learn's
// PLSRegression (regression-mode deflation, NIPALS). Component k of the
// fit only depends on components 1..k-1, so a PLS fitted with A
// components contains the fits with 1..A components: every method takes
// the component count k to use.
type PLS struct {
	XMean, XScale []float64 // p; XScale is all ones unless autoscaled
	YMean, YScale []float64 // q
	// W (x_weights_), P (x_loadings_) are p x A; Q (y_loadings_) is q x A.
	W, P, Q *mat.Dense
	// ScoreVariance (A) is the variance (ddof 1) of each component's
	// training scores t_k (x_scores_[:, k]); their mean is zero because X
	// is centred.
	ScoreVariance []float64
	// ResidualSS (A): ResidualSS[k-1] is the sum over the training rows
	// of their Q with k components, ||X_k||_F^2 of the centred, scaled X
	// deflated by components 1..k.
	ResidualSS []float64
	// NIter is the number of power iterations per component.
	NIter []int
}

// Components returns A, the number of components extracted. It can be
// below the number requested when the Y residual vanished (scikit-learn
// then stops and leaves zero components, which predict nothing).
func (m *PLS) Components() int { return len(m.NIter) }

// FitPLS fits PLSRegression(n_components=components, scale=autoscale) on
// X (n x p) and Y (n x q), which are not modified. See fitPLSInPlace.
func FitPLS(ctx context.Context, X, Y *mat.Dense, components int, autoscale bool) (*PLS, error) {
	return fitPLSInPlace(ctx, mat.DenseCopyOf(X), mat.DenseCopyOf(Y), components, autoscale, nil)
}

// fitPLSInPlace reproduces scikit-learn's PLSRegression.fit (algorithm
// "nipals", deflation_mode "regression", mode "A"); X and Y are
// overwritten (centred, scaled, deflated). onComponent, if not nil, is
// called after each component with its 1-based index.
//
// Preprocessing: X and Y are centred on their column means; with
// autoscale, each column is also divided by its standard deviation (ddof
// 1, zeros replaced by 1), as sklearn's scale=True does for both blocks.
//
// For each component k (Wegelin 2000, section 4.1, as coded in sklearn's
// _pls.py):
//   - Y columns whose entries are all below 10 eps in magnitude are set
//     to zero; if no column has an entry above eps, the fit stops.
//   - Power iteration for the first singular vectors of X'Y, started at
//     u = the first such Y column:
//     w = X'u/(u'u); w /= ||w|| + eps; t = Xw; c = Y't/(t't);
//     u = Yc/(c'c + eps); stop when ||w - w_old||^2 < 1e-6, after 500
//     iterations, or after one pass when Y has one column.
//   - Sign flip: w *= sign(w[argmax |w|]).
//   - t = Xw; p = X't/(t't); X -= t p' (Dgemv, Dgemv, Dger).
//   - Regression deflation: q = Y't/(t't); Y -= t q'.
//
// The power iteration never needs X itself: with u = Yd, X'u = S d for
// S = X'Y (p x q) and Xw is a combination of the columns of XS = X S
// (n x q). Both are formed once per component (two Dgemm passes over X),
// so an iteration costs O((n+p) q) instead of two passes over X; the
// iterates are the same vectors sklearn computes, up to rounding.
func fitPLSInPlace(ctx context.Context, X, Y *mat.Dense, components int, autoscale bool, onComponent func(k int)) (*PLS, error) {
	n, p := X.Dims()
	ny, q := Y.Dims()
	if ny != n {
		return nil, fmt.Errorf("%w: X has %d rows, Y has %d", ErrInvalidOptions, n, ny)
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: PLS needs at least 2 samples, got %d", ErrInvalidOptions, n)
	}
	if components < 1 || components > p {
		return nil, fmt.Errorf("%w: %d components for %d features", ErrInvalidOptions, components, p)
	}
	m := &PLS{}
	m.XMean, m.XScale = centreScale(X, autoscale)
	m.YMean, m.YScale = centreScale(Y, autoscale)
	W := mat.NewDense(p, components, nil)
	P := mat.NewDense(p, components, nil)
	Q := mat.NewDense(q, components, nil)

	xg, yg := X.RawMatrix(), Y.RawMatrix()
	St := blas64.General{Rows: q, Cols: p, Stride: p, Data: make([]float64, q*p)} // S' = Y'X
	XS := blas64.General{Rows: n, Cols: q, Stride: q, Data: make([]float64, n*q)} // X S
	G := make([]float64, q*q)                                                     // Y'Y
	w := make([]float64, p)
	wOld := make([]float64, p)
	t := make([]float64, n)
	loading := make([]float64, p)
	c := make([]float64, q)
	d := make([]float64, q)
	qk := make([]float64, q)

	for k := 0; k < components; k++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Zero the Y columns that are numerically null; find the start.
		start := -1
		for j := 0; j < q; j++ {
			maxAbs := 0.0
			for i := 0; i < n; i++ {
				maxAbs = math.Max(maxAbs, math.Abs(yg.Data[i*yg.Stride+j]))
			}
			if maxAbs < 10*eps {
				for i := 0; i < n; i++ {
					yg.Data[i*yg.Stride+j] = 0
				}
			}
			if start < 0 && maxAbs > eps {
				start = j
			}
		}
		if start < 0 {
			break // "Y residual is constant": sklearn stops here too
		}

		blas64.Gemm(blas.Trans, blas.NoTrans, 1, yg, xg, 0, St)
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, xg, St, 0, XS)
		for a := 0; a < q; a++ {
			for b := 0; b < q; b++ {
				s := 0.0
				for i := 0; i < n; i++ {
					s += yg.Data[i*yg.Stride+a] * yg.Data[i*yg.Stride+b]
				}
				G[a*q+b] = s
			}
		}

		for j := range d {
			d[j] = 0
		}
		d[start] = 1
		for j := range wOld {
			wOld[j] = 100 // sklearn's "big value" for the first check
		}
		iter := 0
		for iter = 1; iter <= nipalsMaxIter; iter++ {
			// u = Y d; u'u = d'Gd; w = X'u/(u'u) = S d/(d'Gd).
			uu := quadForm(G, d)
			for j := 0; j < p; j++ {
				s := 0.0
				for a := 0; a < q; a++ {
					s += St.Data[a*p+j] * d[a]
				}
				w[j] = s / uu
			}
			norm := blas64.Nrm2(blas64.Vector{N: p, Inc: 1, Data: w})
			scale := 1 / (norm + eps)
			for j := range w {
				w[j] /= norm + eps
			}
			// t = Xw = XS d / (u'u) / (||w|| + eps).
			for i := 0; i < n; i++ {
				s := 0.0
				for a := 0; a < q; a++ {
					s += XS.Data[i*q+a] * d[a]
				}
				t[i] = s / uu * scale
			}
			tt := dot(t, t)
			// c = Y't/(t't); u = Yc/(c'c + eps), i.e. d = c/(c'c + eps).
			yTransVec(yg, t, c)
			for a := range c {
				c[a] /= tt
			}
			cc := dot(c, c)
			for a := range d {
				d[a] = c[a] / (cc + eps)
			}
			diff := 0.0
			for j := range w {
				e := w[j] - wOld[j]
				diff += e * e
			}
			if diff < nipalsTol || q == 1 {
				break
			}
			copy(wOld, w)
		}
		if iter > nipalsMaxIter {
			iter = nipalsMaxIter
		}

		// Sign flip on the largest |w| (first index on ties, as argmax).
		big := 0
		for j := range w {
			if math.Abs(w[j]) > math.Abs(w[big]) {
				big = j
			}
		}
		if w[big] < 0 {
			for j := range w {
				w[j] = -w[j]
			}
		} else if w[big] == 0 || math.IsNaN(w[big]) {
			return nil, fmt.Errorf("%w: component %d: weight vector is zero or not finite", ErrTrainingDiverged, k+1)
		}

		wv := blas64.Vector{N: p, Inc: 1, Data: w}
		tv := blas64.Vector{N: n, Inc: 1, Data: t}
		lv := blas64.Vector{N: p, Inc: 1, Data: loading}
		blas64.Gemv(blas.NoTrans, 1, xg, wv, 0, tv) // t = Xw
		tt := blas64.Dot(tv, tv)
		blas64.Gemv(blas.Trans, 1/tt, xg, tv, 0, lv) // p = X't/(t't)
		blas64.Ger(-1, tv, lv, xg)                   // X -= t p'
		yTransVec(yg, t, qk)                         // q = Y't/(t't)
		for a := range qk {
			qk[a] /= tt
		}
		for i := 0; i < n; i++ { // Y -= t q'
			row := yg.Data[i*yg.Stride : i*yg.Stride+q]
			for a := range row {
				row[a] -= t[i] * qk[a]
			}
		}
		if !allFinite(w) || !allFinite(loading) || !allFinite(qk) {
			return nil, fmt.Errorf("%w: component %d has non-finite weights or loadings", ErrTrainingDiverged, k+1)
		}
		W.SetCol(k, w)
		P.SetCol(k, loading)
		Q.SetCol(k, qk)
		m.NIter = append(m.NIter, iter)
		m.ScoreVariance = append(m.ScoreVariance, tt/float64(n-1))
		m.ResidualSS = append(m.ResidualSS, sumSquares(xg))
		if onComponent != nil {
			onComponent(k + 1)
		}
	}
	a := len(m.NIter)
	if a == 0 {
		return nil, fmt.Errorf("%w: Y has no variance", ErrTrainingDiverged)
	}
	m.W = mat.DenseCopyOf(W.Slice(0, p, 0, a))
	m.P = mat.DenseCopyOf(P.Slice(0, p, 0, a))
	m.Q = mat.DenseCopyOf(Q.Slice(0, q, 0, a))
	return m, nil
}

// centreScale centres the columns of A in place and, with autoscale,
// divides them by their standard deviation (ddof 1; a zero deviation is
// replaced by 1). It returns the means and the scales (ones without
// autoscale).
func centreScale(A *mat.Dense, autoscale bool) (mean, scale []float64) {
	n, p := A.Dims()
	g := A.RawMatrix()
	mean = make([]float64, p)
	scale = make([]float64, p)
	for i := 0; i < n; i++ {
		row := g.Data[i*g.Stride : i*g.Stride+p]
		for j, v := range row {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	for i := 0; i < n; i++ {
		row := g.Data[i*g.Stride : i*g.Stride+p]
		for j := range row {
			row[j] -= mean[j]
		}
	}
	for j := range scale {
		scale[j] = 1
	}
	if !autoscale {
		return mean, scale
	}
	sumSq := make([]float64, p)
	for i := 0; i < n; i++ {
		row := g.Data[i*g.Stride : i*g.Stride+p]
		for j, v := range row {
			sumSq[j] += v * v
		}
	}
	for j := range scale {
		s := math.Sqrt(sumSq[j] / float64(n-1))
		if s == 0 {
			s = 1
		}
		scale[j] = s
	}
	for i := 0; i < n; i++ {
		row := g.Data[i*g.Stride : i*g.Stride+p]
		for j := range row {
			row[j] /= scale[j]
		}
	}
	return mean, scale
}

// Rotations returns x_rotations_ of a k-component fit: R_k = W_k
// pinv(P_k' W_k) (p x k), so that scores are t = xs R_k.
func (m *PLS) Rotations(k int) *mat.Dense {
	p, _ := m.W.Dims()
	Wk := m.W.Slice(0, p, 0, k)
	Pk := m.P.Slice(0, p, 0, k)
	var PW mat.Dense
	PW.Mul(Pk.T(), Wk)
	var R mat.Dense
	R.Mul(Wk, pinv(&PW))
	return &R
}

// Coef returns the k-component coefficients in target units per scaled x
// unit (p x q): B_k = R_k Q_k' with column j multiplied by YScale[j].
// This is scikit-learn 1.1-1.4's coef_.T (_coef_.T in 1.1-1.2). A
// prediction is ((x - XMean)/XScale) @ Coef + YMean.
func (m *PLS) Coef(k int) *mat.Dense {
	q, _ := m.Q.Dims()
	return m.coefFromRotations(m.Rotations(k), m.Q.Slice(0, q, 0, k))
}

func (m *PLS) coefFromRotations(R, Qk mat.Matrix) *mat.Dense {
	var B mat.Dense
	B.Mul(R, Qk.T())
	p, q := B.Dims()
	for i := 0; i < p; i++ {
		for j := 0; j < q; j++ {
			B.Set(i, j, B.At(i, j)*m.YScale[j])
		}
	}
	return &B
}

// Predict returns the k-component predictions for the rows of X (n x q).
func (m *PLS) Predict(X mat.Matrix, k int) *mat.Dense {
	n, p := X.Dims()
	Xs := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			Xs.Set(i, j, (X.At(i, j)-m.XMean[j])/m.XScale[j])
		}
	}
	var Yp mat.Dense
	Yp.Mul(Xs, m.Coef(k))
	_, q := Yp.Dims()
	for i := 0; i < n; i++ {
		for j := 0; j < q; j++ {
			Yp.Set(i, j, Yp.At(i, j)+m.YMean[j])
		}
	}
	return &Yp
}

// pinv is scipy.linalg.pinv (SciPy >= 1.7) of a real matrix: SVD, singular
// values at or below max(s) * max(rows, cols) * eps are dropped,
// pinv = V diag(1/s) U'.
func pinv(a *mat.Dense) *mat.Dense {
	r, c := a.Dims()
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDThin) {
		// gonum's SVD only fails on non-finite input; return NaNs so the
		// caller's finiteness check reports divergence.
		out := mat.NewDense(c, r, nil)
		for i := 0; i < c; i++ {
			for j := 0; j < r; j++ {
				out.Set(i, j, math.NaN())
			}
		}
		return out
	}
	s := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	cut := 0.0
	if len(s) > 0 {
		cut = s[0] * float64(max(r, c)) * eps
	}
	rank := 0
	for _, sv := range s {
		if sv > cut {
			rank++
		}
	}
	out := mat.NewDense(c, r, nil)
	if rank == 0 {
		return out
	}
	vr := mat.DenseCopyOf(v.Slice(0, c, 0, rank))
	for j := 0; j < rank; j++ {
		for i := 0; i < c; i++ {
			vr.Set(i, j, vr.At(i, j)/s[j])
		}
	}
	out.Mul(vr, u.Slice(0, r, 0, rank).T())
	return out
}

// yTransVec sets out = Y't for Y (n x q).
func yTransVec(Y blas64.General, t, out []float64) {
	for a := range out {
		out[a] = 0
	}
	for i, ti := range t {
		row := Y.Data[i*Y.Stride : i*Y.Stride+len(out)]
		for a, v := range row {
			out[a] += v * ti
		}
	}
}

// quadForm returns d'Gd for the q x q row-major G.
func quadForm(G, d []float64) float64 {
	q := len(d)
	s := 0.0
	for a := 0; a < q; a++ {
		for b := 0; b < q; b++ {
			s += d[a] * G[a*q+b] * d[b]
		}
	}
	return s
}

// sumSquares returns the sum of the squared entries of g.
func sumSquares(g blas64.General) float64 {
	s := 0.0
	for i := 0; i < g.Rows; i++ {
		row := g.Data[i*g.Stride : i*g.Stride+g.Cols]
		s += dot(row, row)
	}
	return s
}

func dot(a, b []float64) float64 {
	return blas64.Dot(blas64.Vector{N: len(a), Inc: 1, Data: a}, blas64.Vector{N: len(b), Inc: 1, Data: b})
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
