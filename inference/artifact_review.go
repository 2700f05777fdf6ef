package inference

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// The review of a trained model (PLSParams.Review) is stored in the
// artifact as review.json (selection, CV curve, scan ids, limits, counts)
// beside six arrays: review_measured (n x q), review_cv_predicted
// (n x q), review_t2 (n), review_q (n), review_studentized_residuals
// (n x q) and review_scores (n x a, absent in older files).
// api/artifact.md describes them.

// maxArtifactReviewBytes bounds review.json: it carries a scan id per
// training row and per excluded row, so it outgrows meta.json; 16 MiB
// of JSON decodes to well under the 256 MiB one array may take.
const maxArtifactReviewBytes = 16 << 20

// maxArtifactScanIDBytes bounds one scan id (the contract allows 128).
const maxArtifactScanIDBytes = 1024

// jsonFloat is a float64 whose non-finite values (a CV score that could
// not be computed) are written as null, which JSON allows, and read back
// as NaN.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jsonFloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

func jsonFloats(v []float64) []jsonFloat {
	out := make([]jsonFloat, len(v))
	for i, x := range v {
		out[i] = jsonFloat(x)
	}
	return out
}

func plainFloats(v []jsonFloat) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// artifactReview is review.json.
type artifactReview struct {
	Selection struct {
		Components         int    `json:"components"`
		Rule               string `json:"rule"`
		Segments           string `json:"cv_segments,omitempty"`
		MaxComponents      int    `json:"max_components"`
		Folds              int    `json:"folds"`
		MinScoreComponents int    `json:"min_score_components"`
	} `json:"selection"`
	CVCurve         []artifactCVPoint `json:"cv_curve"`
	ScanIDs         []string          `json:"scan_ids,omitempty"`
	ExcludedScanIDs []string          `json:"excluded_scan_ids,omitempty"`
	T2Limit         jsonFloat         `json:"t2_limit"`
	QLimit          jsonFloat         `json:"q_limit"`
	SpikesRepaired  int               `json:"spikes_repaired"`
	SpectraDespiked int               `json:"spectra_despiked"`
}

// artifactCVPoint is one point of review.json's cv_curve.
type artifactCVPoint struct {
	Components int         `json:"components"`
	RMSECV     []jsonFloat `json:"rmsecv"`
	R2CV       []jsonFloat `json:"r2cv"`
	Score      jsonFloat   `json:"score"`
	ScoreSE    jsonFloat   `json:"score_se"`
}

func reviewJSON(r *Review) *artifactReview {
	a := &artifactReview{
		ScanIDs: r.ScanIDs, ExcludedScanIDs: r.ExcludedScanIDs,
		T2Limit: jsonFloat(r.T2Limit), QLimit: jsonFloat(r.QLimit),
		SpikesRepaired: r.SpikesRepaired, SpectraDespiked: r.SpectraDespiked,
	}
	s := &a.Selection
	s.Components, s.Rule, s.Segments, s.MaxComponents = r.Selection.Components, r.Selection.Rule, r.Selection.Segments, r.Selection.MaxComponents
	s.Folds, s.MinScoreComponents = r.Selection.Folds, r.Selection.MinScoreComponents
	a.CVCurve = make([]artifactCVPoint, len(r.CVCurve))
	for i, c := range r.CVCurve {
		a.CVCurve[i].Components = c.Components
		a.CVCurve[i].RMSECV = jsonFloats(c.RMSECV)
		a.CVCurve[i].R2CV = jsonFloats(c.R2CV)
		a.CVCurve[i].Score = jsonFloat(c.Score)
		a.CVCurve[i].ScoreSE = jsonFloat(c.ScoreSE)
	}
	return a
}

// memberFunc reads name.npy from the archive (see readArtifact).
type memberFunc func(name string, required bool) (shape []int, data []float64, found bool, err error)

// readReview reads review.json and its arrays and checks that their
// dimensions agree (n rows, q targets), so that a report built from them
// cannot index out of range.
func readReview(f *zip.File, q int, member memberFunc) (*Review, error) {
	var a artifactReview
	if err := readJSONMember(f, maxArtifactReviewBytes, &a); err != nil {
		return nil, err
	}
	if len(a.ScanIDs) > maxArtifactSamples || len(a.ExcludedScanIDs) > maxArtifactSamples {
		return nil, fmt.Errorf("%d scan ids and %d excluded scan ids, at most %d each", len(a.ScanIDs), len(a.ExcludedScanIDs), maxArtifactSamples)
	}
	for _, ids := range [][]string{a.ScanIDs, a.ExcludedScanIDs} {
		for i, id := range ids {
			if len(id) > maxArtifactScanIDBytes {
				return nil, fmt.Errorf("scan id %d is %d bytes long", i, len(id))
			}
		}
	}
	if len(a.CVCurve) > maxArtifactComponents {
		return nil, fmt.Errorf("cv_curve has %d points, at most %d", len(a.CVCurve), maxArtifactComponents)
	}
	s := a.Selection
	if s.Components < 0 || s.Components > maxArtifactComponents || s.MaxComponents < 0 || s.MaxComponents > maxArtifactComponents ||
		s.MinScoreComponents < 0 || s.MinScoreComponents > maxArtifactComponents || s.Folds < 0 || s.Folds > maxArtifactSamples {
		return nil, errors.New("selection counts out of range")
	}
	if a.SpikesRepaired < 0 || a.SpectraDespiked < 0 {
		return nil, errors.New("despike counts out of range")
	}
	r := &Review{
		Selection: ComponentSelection{Components: s.Components, Rule: s.Rule, Segments: s.Segments, MaxComponents: s.MaxComponents,
			Folds: s.Folds, MinScoreComponents: s.MinScoreComponents},
		ScanIDs: a.ScanIDs, ExcludedScanIDs: a.ExcludedScanIDs,
		T2Limit: float64(a.T2Limit), QLimit: float64(a.QLimit),
		SpikesRepaired: a.SpikesRepaired, SpectraDespiked: a.SpectraDespiked,
	}
	for i, c := range a.CVCurve {
		if len(c.RMSECV) != q || len(c.R2CV) != q {
			return nil, fmt.Errorf("cv_curve[%d] has %d and %d values per target, want %d", i, len(c.RMSECV), len(c.R2CV), q)
		}
		r.CVCurve = append(r.CVCurve, CVPoint{Components: c.Components, RMSECV: plainFloats(c.RMSECV),
			R2CV: plainFloats(c.R2CV), Score: float64(c.Score), ScoreSE: float64(c.ScoreSE)})
	}
	// n is the number of training rows: every array present and the scan
	// ids (when given) must agree on it.
	n := -1
	if len(a.ScanIDs) > 0 {
		n = len(a.ScanIDs)
	}
	rows := func(name string, got int) error {
		if n < 0 {
			n = got
		}
		if got != n {
			return fmt.Errorf("%s has %d rows, want %d", name, got, n)
		}
		return nil
	}
	for _, m := range []struct {
		name string
		dst  **mat.Dense
	}{{"review_measured", &r.Measured}, {"review_cv_predicted", &r.CVPredicted}, {"review_studentized_residuals", &r.StudentizedResiduals}} {
		shape, data, found, err := member(m.name, false)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if len(shape) != 2 || shape[0] == 0 || shape[1] != q {
			return nil, fmt.Errorf("%s has shape %v, want (n, %d)", m.name, shape, q)
		}
		if err := rows(m.name, shape[0]); err != nil {
			return nil, err
		}
		*m.dst = mat.NewDense(shape[0], q, data)
	}
	shape, data, found, err := member("review_scores", false)
	if err != nil {
		return nil, err
	}
	if found {
		// The component count is checked against the rotations by the
		// review's users (trainer/review, the report).
		if len(shape) != 2 || shape[0] == 0 || shape[1] == 0 || shape[1] > maxArtifactComponents {
			return nil, fmt.Errorf("review_scores has shape %v, want (n, a)", shape)
		}
		if err := rows("review_scores", shape[0]); err != nil {
			return nil, err
		}
		r.Scores = mat.NewDense(shape[0], shape[1], data)
	}
	if err := readRawSpectra(r, n, member); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		name string
		dst  *[]float64
	}{{"review_t2", &r.T2}, {"review_q", &r.Q}} {
		shape, data, found, err := member(v.name, false)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if len(shape) != 1 {
			return nil, fmt.Errorf("%s has shape %v, want a vector", v.name, shape)
		}
		if err := rows(v.name, shape[0]); err != nil {
			return nil, err
		}
		*v.dst = data
	}
	if n >= 0 && a.SpectraDespiked > n {
		return nil, fmt.Errorf("%d spectra despiked of %d rows", a.SpectraDespiked, n)
	}
	return r, nil
}

// MaxRawSpectra bounds the training spectra a review keeps besides their
// mean (review_spectra).
const MaxRawSpectra = 16

// readRawSpectra reads the optional review_spectra and
// review_spectra_rows: both or neither, the rows naming training rows
// (0..n-1 when n is known) and one fewer than the spectra (the mean
// first). Their axis length is checked against the model's axis by
// checkRawSpectraAxis once the metadata is read.
func readRawSpectra(r *Review, n int, member memberFunc) error {
	shape, data, found, err := member("review_spectra", false)
	if err != nil {
		return err
	}
	rshape, rdata, rfound, err := member("review_spectra_rows", false)
	if err != nil {
		return err
	}
	if !found && !rfound {
		return nil
	}
	if !found || !rfound {
		return errors.New("review_spectra and review_spectra_rows come together")
	}
	if len(shape) != 2 || shape[0] < 1 || shape[0] > MaxRawSpectra+1 || shape[1] == 0 || shape[1] > maxArtifactFeatures {
		return fmt.Errorf("review_spectra has shape %v, want (1..%d, N)", shape, MaxRawSpectra+1)
	}
	if len(rshape) != 1 || rshape[0] != shape[0]-1 {
		return fmt.Errorf("review_spectra_rows has shape %v, want (%d,)", rshape, shape[0]-1)
	}
	rows := make([]int, len(rdata))
	for i, v := range rdata {
		if v != math.Trunc(v) || v < 0 || (n >= 0 && v >= float64(n)) || v >= maxArtifactSamples {
			return fmt.Errorf("review_spectra_rows[%d] = %v is not a training row", i, v)
		}
		rows[i] = int(v)
	}
	r.RawSpectra, r.RawSpectraRows = mat.NewDense(shape[0], shape[1], data), rows
	return nil
}

// rowNumbers is rows as the float64 array of an .npy member; nil for
// none (the member is then not written).
func rowNumbers(rows []int) []float64 {
	if rows == nil {
		return nil
	}
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = float64(r)
	}
	return out
}
