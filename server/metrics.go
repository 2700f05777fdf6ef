package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// GetMetrics serves the Prometheus metrics.
func (a *API) GetMetrics(ctx context.Context, _ gen.GetMetricsRequestObject) (gen.GetMetricsResponseObject, error) {
	return nil, contract.New(contract.NotImplemented, http.StatusNotImplemented, "metrics are not implemented yet")
}
