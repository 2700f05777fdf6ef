package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// GetOpenAPIYAML serves the embedded contract. (Stub until the web-conventions work lands.)
func (a *API) GetOpenAPIYAML(ctx context.Context, _ gen.GetOpenAPIYAMLRequestObject) (gen.GetOpenAPIYAMLResponseObject, error) {
	return nil, contract.New(contract.NotImplemented, http.StatusNotImplemented, "GET /openapi.yaml is not implemented yet")
}

// GetOpenAPIJSON serves the embedded contract. (Stub until the web-conventions work lands.)
func (a *API) GetOpenAPIJSON(ctx context.Context, _ gen.GetOpenAPIJSONRequestObject) (gen.GetOpenAPIJSONResponseObject, error) {
	return nil, contract.New(contract.NotImplemented, http.StatusNotImplemented, "GET /openapi.json is not implemented yet")
}
