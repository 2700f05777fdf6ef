package trainer

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
)

// StudentizedResidualLimit is the label residual beyond which a training
// row is an outlier (the contract's OutlierLimits.studentized_residual).
const StudentizedResidualLimit = 3.0

// newReview gathers what the fit learned for the model's review: the
// selection, the CV curve, the measured labels and the out-of-fold
// predictions at the chosen count (cvPred, row-major n x q), and each
// row's T2, Q and studentised residuals under the final model of a
// components. The 95 % limits are the model's own (inference.ModelT2Limit
// and ModelQLimit of the held-out T2 and Q, as NewPLSModel computes them);
// a limit that cannot be computed (Q all zero when the model reproduces
// the spectra exactly) is 0, meaning none.
//
// Studentised residual (the contract's TrainingOutlier):
//
//	r_ij = e_ij / (s_j sqrt(1 - h_i)),  s_j = sqrt(sum_i e_ij^2 / (n - a - 1)),
//	h_i  = 1/n + T2_i/(n - 1)
//
// with e = y - yhat of the calibration fit. A row with h_i >= 1 (it alone
// spans a direction) has no defined residual and gets 0; when n - a - 1 <
// 1 no residual is defined and all are 0.
func newReview(ds *Dataset, sel inference.ComponentSelection, stats []ComponentStats, cvPred, heldOutT2, heldOutQ []float64, cal *calibration, a int) *inference.Review {
	n, q := ds.Len(), ds.NumTargets()
	r := &inference.Review{
		Selection:            sel,
		CVCurve:              make([]inference.CVPoint, len(stats)),
		ScanIDs:              make([]string, n),
		Measured:             mat.NewDense(n, q, nil),
		CVPredicted:          mat.NewDense(n, q, append([]float64(nil), cvPred...)),
		T2:                   cal.t2,
		Q:                    cal.q,
		StudentizedResiduals: mat.NewDense(n, q, nil),
		Scores:               cal.scores,
	}
	for k, st := range stats {
		r.CVCurve[k] = inference.CVPoint{Components: st.Components, RMSECV: append([]float64(nil), st.RMSECV...),
			R2CV: append([]float64(nil), st.R2CV...), Score: st.Score, ScoreSE: st.ScoreSE}
	}
	for i := 0; i < n; i++ {
		r.ScanIDs[i] = ds.ScanID(i)
		r.Measured.SetRow(i, ds.Labels(i))
	}
	if lim, err := inference.ModelT2Limit(a, n, heldOutT2); err == nil {
		r.T2Limit = lim
	}
	if lim, err := inference.ModelQLimit(cal.q, heldOutQ); err == nil {
		r.QLimit = lim
	}
	dof := n - a - 1
	if dof < 1 {
		return r
	}
	s := make([]float64, q)
	for i := 0; i < n; i++ {
		for j := 0; j < q; j++ {
			e := cal.resid[i*q+j]
			s[j] += e * e
		}
	}
	for j := range s {
		s[j] = math.Sqrt(s[j] / float64(dof))
	}
	for i := 0; i < n; i++ {
		h := 1/float64(n) + cal.t2[i]/float64(n-1)
		if !(h < 1) {
			continue
		}
		for j := 0; j < q; j++ {
			if s[j] > 0 {
				r.StudentizedResiduals.Set(i, j, cal.resid[i*q+j]/(s[j]*math.Sqrt(1-h)))
			}
		}
	}
	return r
}
