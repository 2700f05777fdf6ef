package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// errReportUnavailable answers the report routes until they are built.
var errReportUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "reports are not available in this build")

// GetModelReport renders the review page of one registry version.
func (a *API) GetModelReport(ctx context.Context, req gen.GetModelReportRequestObject) (gen.GetModelReportResponseObject, error) {
	return nil, errReportUnavailable
}

// GetTrainingReport renders the review page of the model a done job trained.
func (a *API) GetTrainingReport(ctx context.Context, req gen.GetTrainingReportRequestObject) (gen.GetTrainingReportResponseObject, error) {
	return nil, errReportUnavailable
}
