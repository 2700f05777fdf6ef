package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
	"ramanserve/service/models"
	"ramanserve/trainer/jobs"
)

// RescoreService starts re-scoring jobs: a version of the registry applied
// to the spectra of the prediction log, in the training queue
// (*models.Service).
type RescoreService interface {
	Rescore(ctx context.Context, req models.RescoreRequest) (jobs.Job, error)
}

var errRescoreUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server does not re-score")

// RescoreModel scores a version on logged spectra as a background job.
func (a *API) RescoreModel(ctx context.Context, req gen.RescoreModelRequestObject) (gen.RescoreModelResponseObject, error) {
	if a.Rescore == nil {
		return nil, errRescoreUnavailable
	}
	j, err := a.Rescore.Rescore(ctx, models.RescoreRequest{Version: string(req.Version), Since: deref(req.Params.Since),
		Until: deref(req.Params.Until), AuthenticatedAs: authenticatedAs(ctx)})
	if err != nil {
		return nil, err
	}
	body := acceptedJob(&j)
	return gen.RescoreModel202JSONResponse{Body: body, Headers: gen.RescoreModel202ResponseHeaders{Location: body.StatusUrl}}, nil
}

// rescoreSpec is a job's re-scoring spec as the contract shows it.
func rescoreSpec(j *jobs.Job) *gen.RescoreResult {
	r := j.Rescore
	if r == nil {
		return nil
	}
	out := &gen.RescoreResult{Version: r.Version, Spectra: r.Spectra, Until: ptr(r.Until)}
	if !r.Since.IsZero() {
		out.Since = ptr(r.Since)
	}
	return out
}
