package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// GetModel describes one registry version. (Stub until the lifecycle work lands.)
func (a *API) GetModel(ctx context.Context, req gen.GetModelRequestObject) (gen.GetModelResponseObject, error) {
	return nil, contract.New(contract.NotImplemented, http.StatusNotImplemented, "GET /model/{version} is not implemented yet")
}

// DeleteModel removes a staged or archived version. (Stub until the lifecycle work lands.)
func (a *API) DeleteModel(ctx context.Context, req gen.DeleteModelRequestObject) (gen.DeleteModelResponseObject, error) {
	return nil, contract.New(contract.NotImplemented, http.StatusNotImplemented, "DELETE /model/{version} is not implemented yet")
}
