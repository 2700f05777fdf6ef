package server

import (
	"context"
	"math"

	"ramanserve/evidence/shadow"
	"ramanserve/gen"
	"ramanserve/inference"
)

// ShadowScores reports the running shadow and its comparison with the
// active model (*shadow.Scorer). The registry records which version is
// the shadow and tells the scorer (registry.FollowShadow); the handlers
// change the registry and read both.
type ShadowScores interface {
	Status() shadow.Status
}

// GetShadow shows the shadow model and its comparison with the active one.
func (a *API) GetShadow(ctx context.Context, _ gen.GetShadowRequestObject) (gen.GetShadowResponseObject, error) {
	return gen.GetShadow200JSONResponse(a.shadowStatus()), nil
}

// SetShadow makes a staged or archived version the shadow: the registry
// opens it as a load would, records it in its index and starts the scorer
// on it before this returns.
func (a *API) SetShadow(ctx context.Context, req gen.SetShadowRequestObject) (gen.SetShadowResponseObject, error) {
	if err := a.Registry.SetShadow(ctx, req.Body.Version); err != nil {
		return nil, err
	}
	return gen.SetShadow200JSONResponse(a.shadowStatus()), nil
}

// ClearShadow stops shadow scoring (idempotent).
func (a *API) ClearShadow(ctx context.Context, _ gen.ClearShadowRequestObject) (gen.ClearShadowResponseObject, error) {
	if err := a.Registry.ClearShadow(ctx); err != nil {
		return nil, err
	}
	return gen.ClearShadow200JSONResponse(a.shadowStatus()), nil
}

// shadowStatus is the registry's shadow with the scorer's comparison. The
// version is the registry's (what survives a restart); the comparison is
// shown only when the scorer runs that same version: a shadow that failed
// to restore is named (health says why) without figures.
func (a *API) shadowStatus() gen.ShadowStatus {
	version := a.Registry.Shadow()
	if version == "" {
		return gen.ShadowStatus{}
	}
	out := gen.ShadowStatus{Version: &version}
	if a.Shadow == nil {
		return out
	}
	st := a.Shadow.Status()
	if st.Version != version {
		return out
	}
	since := st.Since.UTC()
	out.Since = &since
	out.Comparison = shadowComparison(&st.Comparison)
	return out
}

// shadowComparison maps the scorer's comparison to the contract's; the
// figures of an analyte are absent while its n is 0.
func shadowComparison(c *shadow.Comparison) *gen.ShadowComparison {
	out := &gen.ShadowComparison{N: c.N, Dropped: ptr(c.Dropped), Failed: ptr(c.Failed)}
	out.Analytes.EPA = analyteComparison(&c.Analytes[inference.EPA])
	out.Analytes.DHA = analyteComparison(&c.Analytes[inference.DHA])
	out.Analytes.DPA = analyteComparison(&c.Analytes[inference.DPA])
	return out
}

func analyteComparison(a *shadow.AnalyteComparison) *gen.AnalyteComparison {
	out := &gen.AnalyteComparison{N: a.N}
	if a.N == 0 {
		return out
	}
	out.MeanDifference = finite(a.MeanDifference)
	out.Rmsd = finite(a.RMSD)
	out.DisagreeShare = finite(a.DisagreeShare)
	out.Tolerance = finite(a.Tolerance)
	return out
}

// finite points at v, or is nil for NaN and ±Inf, which JSON cannot carry
// (a model answering NaN is refused before the comparison, but the
// response must never fail to encode).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
