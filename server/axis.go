package server

import (
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// AxisReader gives a registry version's axis (*models.Service).
type AxisReader interface {
	Axis(ctx context.Context, version string) ([]float64, error)
}

// axisOperation is GET /model/{version}/axis, whose route policy takes a
// report slot (operationMiddlewares): it may read a whole model file.
const axisOperation = "getModelAxis"

var errAxisUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server reports no model axes")

// GetModelAxis answers the wavenumbers a version expects.
func (a *API) GetModelAxis(ctx context.Context, req gen.GetModelAxisRequestObject) (gen.GetModelAxisResponseObject, error) {
	if a.Axes == nil {
		return nil, errAxisUnavailable
	}
	wn, err := a.Axes.Axis(ctx, req.Version)
	if err != nil {
		return nil, versionNotFound(err)
	}
	if wn == nil {
		wn = []float64{} // JSON [] rather than null: the field is required
	}
	return gen.GetModelAxis200JSONResponse{Version: req.Version, Wavenumbers: wn}, nil
}
