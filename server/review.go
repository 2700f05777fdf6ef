package server

import (
	"context"
	"math"

	"ramanserve/gen"
	"ramanserve/trainer/review"
)

// GetModelReview answers the numbers behind the review page of one
// registry version (trainer/review defines them). Like the page, it reads
// the version's file without activating it, and shares the page's slots:
// both read a whole model file.
func (a *API) GetModelReview(ctx context.Context, req gen.GetModelReviewRequestObject) (gen.GetModelReviewResponseObject, error) {
	figures, err := a.modelReview(ctx, req.Version)
	if err != nil {
		return nil, versionNotFound(err)
	}
	return gen.GetModelReview200JSONResponse(figures), nil
}

// modelReview reads the version's parameters and computes its review:
// registry.ErrModelNotFound for an unknown version,
// review.ErrNoTrainingRecord for an imported or adopted one.
func (a *API) modelReview(ctx context.Context, version string) (gen.ModelReview, error) {
	leave, err := a.reportGate.enter(ctx)
	if err != nil {
		return gen.ModelReview{}, err
	}
	defer leave()
	params, err := a.Registry.ReadParams(ctx, version)
	if err != nil {
		return gen.ModelReview{}, err
	}
	figures, err := review.Compute(params)
	if err != nil {
		return gen.ModelReview{}, err
	}
	out := gen.ModelReview{
		Version:     version,
		Analytes:    make([]string, len(params.Targets)),
		Wavenumbers: figures.Wavenumbers,
		Vip:         figures.VIP,
		Components:  make([]gen.ReviewComponent, len(figures.Components)),
		XWeights:    figures.XWeights,
		XLoadings:   figures.XLoadings,
		Leverage:    figures.Leverage,
		Rmsec:       figures.RMSEC,
		Rmsecv:      finiteOrEmpty(figures.RMSECV),
	}
	for i, t := range params.Targets {
		out.Analytes[i] = t.String()
	}
	if scores := review.Scores(params); scores != nil {
		out.Scores = &scores
	}
	if ts := review.Spectra(params); ts != nil {
		out.Spectra = &gen.ReviewSpectra{Rows: ts.Rows, Raw: ts.Raw}
		if ts.Preprocessed != nil {
			rows := make([]*[]float64, len(ts.Preprocessed))
			for i := range ts.Preprocessed {
				if ts.Preprocessed[i] != nil {
					rows[i] = &ts.Preprocessed[i]
				}
			}
			out.Spectra.Preprocessed = &rows
		}
	}
	for i, c := range figures.Components {
		out.Components[i] = gen.ReviewComponent{Components: c.Components, R2x: c.R2X, R2xCumulative: c.R2XCumulative, R2y: c.R2Y}
		if c.Q2 != nil {
			q2 := c.Q2
			out.Components[i].Q2 = &q2
		}
	}
	return out, nil
}

// finiteOrEmpty drops a per-analyte figure the artifact does not know
// (NaN), which JSON cannot carry: an empty array says "unknown".
func finiteOrEmpty(v []float64) []float64 {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return []float64{}
		}
	}
	if v == nil {
		return []float64{}
	}
	return v
}
