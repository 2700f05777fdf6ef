package review

import (
	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// TrainingSpectra are the few training spectra a model file keeps for its
// review (inference.Review.RawSpectra), before and after the recipe: the
// numbers behind the review page's two spectra plots.
type TrainingSpectra struct {
	// Rows are the training row numbers of the kept spectra; row 0 of Raw
	// and Preprocessed is the mean, row i+1 is training row Rows[i].
	Rows []int
	// Raw (k+1, each over the whole axis) as uploaded: the mean of the n
	// training rows, then each kept row.
	Raw [][]float64
	// Preprocessed (k+1, each over the points the model uses) after the
	// recipe: the model's own x_mean (the mean of every preprocessed
	// training row, which is not the recipe applied to the raw mean), then
	// each kept row run through the recipe here; nil for a row the recipe
	// refuses (training would have refused it too). Preprocessed is nil
	// when the file's recipe or regions no longer apply to its axis.
	Preprocessed [][]float64
}

// Spectra returns the training spectra params keeps, or nil when its file
// keeps none (written before it did) or they do not fit its axis.
func Spectra(params *inference.PLSParams) *TrainingSpectra {
	rv := params.Review
	axis := params.Meta.Wavenumbers
	if rv == nil || rv.RawSpectra == nil {
		return nil
	}
	k, n := rv.RawSpectra.Dims()
	if n != len(axis) || k-1 != len(rv.RawSpectraRows) {
		return nil
	}
	out := &TrainingSpectra{Rows: append([]int(nil), rv.RawSpectraRows...), Raw: make([][]float64, k)}
	for i := range k {
		out.Raw[i] = append([]float64(nil), rv.RawSpectra.RawRowView(i)...)
	}
	sel, err := preprocess.SelectRegions(axis, params.Regions)
	if err != nil || len(sel) != len(params.XMean) {
		return out
	}
	var pipe *preprocess.Pipeline
	var ws *preprocess.Workspace
	if len(params.Preprocessing) > 0 {
		if pipe, err = preprocess.Compile(params.Preprocessing, axis); err != nil {
			return out
		}
		ws = pipe.NewWorkspace()
	}
	out.Preprocessed = make([][]float64, k)
	out.Preprocessed[0] = append([]float64(nil), params.XMean...)
	row := make([]float64, n)
	for i := 1; i < k; i++ {
		copy(row, out.Raw[i])
		if pipe != nil {
			if _, err := pipe.Apply(row, ws); err != nil {
				continue
			}
		}
		vals := make([]float64, len(sel))
		for m, c := range sel {
			vals[m] = row[c]
		}
		out.Preprocessed[i] = vals
	}
	return out
}

// Scores are the training rows' X scores (n, each A) the file keeps, or
// nil when it keeps none: the numbers behind the scores plot.
func Scores(params *inference.PLSParams) [][]float64 {
	if params.Review == nil || params.Review.Scores == nil {
		return nil
	}
	n, _ := params.Review.Scores.Dims()
	out := make([][]float64, n)
	for i := range n {
		out[i] = append([]float64(nil), params.Review.Scores.RawRowView(i)...)
	}
	return out
}
