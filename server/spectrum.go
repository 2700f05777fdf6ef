package server

import (
	"bytes"
	"context"

	"github.com/google/uuid"

	"ramanserve/evidence/predlog"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/server/report"
	evidencesvc "ramanserve/service/evidence"
)

// GET /predictions/{predictionId} and its page: one spectrum's records.

// SpectrumService reads one logged spectrum (*evidencesvc.Predictions).
type SpectrumService interface {
	Get(ctx context.Context, id predlog.PredictionID) (evidencesvc.Spectrum, error)
	Report(ctx context.Context, id predlog.PredictionID) (evidencesvc.SpectrumReport, error)
}

// GetPrediction returns every record of one spectrum, with the
// contributions the log stored.
func (a *API) GetPrediction(ctx context.Context, req gen.GetPredictionRequestObject) (gen.GetPredictionResponseObject, error) {
	if a.Spectra == nil {
		return nil, errPredictionLogUnavailable
	}
	s, err := a.Spectra.Get(ctx, uuid.UUID(req.PredictionId))
	if err != nil {
		return nil, err
	}
	out := gen.PredictionRecords{PredictionId: s.ID.String(), Records: make([]gen.LoggedPrediction, 0, len(s.Records)), SpectrumLogged: s.Logged() != nil}
	for i := range s.Records {
		lp := loggedPrediction(&s.Records[i])
		lp.Contributions = contributionsOf(s.Records[i].Contributions)
		out.Records = append(out.Records, lp)
	}
	return gen.GetPrediction200JSONResponse(out), nil
}

// GetPredictionReport renders the page of one spectrum. It takes one of
// the review pages' slots: it opens a model file and draws.
func (a *API) GetPredictionReport(ctx context.Context, req gen.GetPredictionReportRequestObject) (gen.GetPredictionReportResponseObject, error) {
	if a.Spectra == nil {
		return nil, errPredictionLogUnavailable
	}
	leave, err := a.enterReportGate(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	r, err := a.Spectra.Report(ctx, uuid.UUID(req.PredictionId))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := report.RenderSpectrum(&buf, r); err != nil {
		return nil, err
	}
	return htmlPage(buf.Bytes()), nil
}

// contributionsOf is a record's stored contributions as the contract's
// PredictContributions; nil when none were stored.
func contributionsOf(c *inference.Contributions) *gen.PredictContributions {
	if c == nil {
		return nil
	}
	out := &gen.PredictContributions{}
	if c.HasT2 {
		out.T2 = summaryOf(&c.T2)
	}
	if c.HasQ {
		out.Q = summaryOf(&c.Q)
	}
	return out
}

func summaryOf(s *inference.ContributionSummary) *gen.ContributionSummary {
	out := &gen.ContributionSummary{
		Total:   s.Total,
		Top:     make([]gen.VariableContribution, len(s.Top)),
		Regions: make([]gen.RegionContribution, len(s.Regions)),
	}
	for i, v := range s.Top {
		out.Top[i] = gen.VariableContribution{Wavenumber: v.Wavenumber, Value: v.Value}
	}
	for i, r := range s.Regions {
		out.Regions[i] = gen.RegionContribution{Region: gen.WavenumberRegion{r.Region[0], r.Region[1]}, Value: r.Value}
	}
	return out
}
