package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// The evidence routes of issue 13 (prediction log, shadow scoring, lab
// reconciliation, re-scoring). Stubs answering 501 until they are built.

func notYet(what string) error {
	return contract.New(contract.NotImplemented, http.StatusNotImplemented, what+" is not implemented yet")
}

// GetModelPerformance reports a version's error against the lab.
func (a *API) GetModelPerformance(ctx context.Context, _ gen.GetModelPerformanceRequestObject) (gen.GetModelPerformanceResponseObject, error) {
	return nil, notYet("performance against the lab")
}

// RescoreModel scores a version on logged spectra as a background job.
func (a *API) RescoreModel(ctx context.Context, _ gen.RescoreModelRequestObject) (gen.RescoreModelResponseObject, error) {
	return nil, notYet("re-scoring")
}

// PostLabResults reconciles the lab's results with logged predictions.
func (a *API) PostLabResults(ctx context.Context, _ gen.PostLabResultsRequestObject) (gen.PostLabResultsResponseObject, error) {
	return nil, notYet("lab reconciliation")
}
