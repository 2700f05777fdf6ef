package server

import (
	"context"
	"strings"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// ReadinessService says why the server cannot serve
// (*readiness.Service); none: ready.
type ReadinessService interface {
	Reasons(ctx context.Context) []string
}

// GetLivez answers while the process runs and serves HTTP.
func (a *API) GetLivez(ctx context.Context, _ gen.GetLivezRequestObject) (gen.GetLivezResponseObject, error) {
	return gen.GetLivez200JSONResponse{Status: gen.Alive}, nil
}

// GetReadyz answers 200 when the server can serve, 503 NOT_READY with
// the reasons otherwise.
func (a *API) GetReadyz(ctx context.Context, _ gen.GetReadyzRequestObject) (gen.GetReadyzResponseObject, error) {
	var reasons []string
	if a.Readiness != nil {
		reasons = a.Readiness.Reasons(ctx)
	}
	if len(reasons) == 0 {
		return gen.GetReadyz200JSONResponse{Status: gen.Ready}, nil
	}
	wait := int(contract.RetryAfter(contract.NotReady).Seconds())
	return gen.GetReadyz503JSONResponse{
		Body: gen.NotReady{Code: gen.NOTREADY, Message: "not ready: " + strings.Join(reasons, "; "),
			Retryable: ptr(contract.Retryable(contract.NotReady)), Reasons: reasons},
		Headers: gen.GetReadyz503ResponseHeaders{RetryAfter: &wait},
	}, nil
}
