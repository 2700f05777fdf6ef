package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"ramanserve/gen"
	"ramanserve/registry"
	"ramanserve/server/contract"
)

// GetModel describes one registry version from its index entry.
func (a *API) GetModel(ctx context.Context, req gen.GetModelRequestObject) (gen.GetModelResponseObject, error) {
	if err := reservedRoute(http.MethodGet, req.Version); err != nil {
		return nil, err
	}
	e, etag, err := a.Registry.DescribeTagged(req.Version)
	if err != nil {
		return nil, versionNotFound(err)
	}
	if notModified(req.Params.IfNoneMatch, etag) {
		return gen.GetModel304Response{Headers: gen.NotModifiedResponseHeaders{ETag: &etag}}, nil
	}
	return gen.GetModel200JSONResponse{Body: modelDetail(&e), Headers: gen.GetModel200ResponseHeaders{ETag: &etag}}, nil
}

// VersionDeleter deletes a registry version for DELETE /model/{version}
// (*models.Service, which keeps re-scoring's rules).
type VersionDeleter interface {
	Delete(ctx context.Context, version string) error
}

var errDeleteUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server deletes no models")

// DeleteModel removes a staged or archived version from the index and
// disk, through Deleter (*models.Service, which keeps re-scoring's rules).
func (a *API) DeleteModel(ctx context.Context, req gen.DeleteModelRequestObject) (gen.DeleteModelResponseObject, error) {
	if err := reservedRoute(http.MethodDelete, req.Version); err != nil {
		return nil, err
	}
	if a.Deleter == nil {
		return nil, errDeleteUnavailable
	}
	if err := a.Deleter.Delete(ctx, req.Version); err != nil {
		return nil, versionNotFound(err)
	}
	return gen.DeleteModel204Response{}, nil
}

// notModified reports whether an If-None-Match names etag: the client's
// copy is current. A state read while it changed has no tag ("") and is
// always sent.
func notModified(ifNoneMatch *gen.IfNoneMatch, etag string) bool {
	return ifNoneMatch != nil && etag != "" && registry.MatchETag(string(*ifNoneMatch), etag)
}

// reservedRouteAllow is the method of a route beside /model/{version}
// (its Allow header), "" for any other path: the registry gives no version
// these names, so another method on them is 405 METHOD_NOT_ALLOWED (as the
// router answers for a route with no parameter), not a version lookup.
func reservedRouteAllow(path string) string {
	switch path {
	case "/model/load":
		return http.MethodPost
	case "/model/list", "/model/info":
		return http.MethodGet
	}
	return ""
}

func reservedRoute(method, version string) error {
	if !registry.ReservedVersion(version) {
		return nil
	}
	return contract.New(contract.MethodNotAllowed, http.StatusMethodNotAllowed,
		fmt.Sprintf("method %s not allowed on /model/%s (%s only); %q is a route, never a version", method, version, reservedRouteAllow("/model/"+version), version))
}

// versionNotFound makes an unknown version 404 on the /model/{version}
// routes (a load naming one is 400, in the shared table).
func versionNotFound(err error) error {
	if errors.Is(err, registry.ErrModelNotFound) {
		return contract.New(contract.ModelNotFound, http.StatusNotFound, err.Error())
	}
	return err
}

func modelDetail(e *registry.Entry) gen.ModelDetail {
	d := gen.ModelDetail{
		Version:   e.Version,
		Status:    gen.ModelStatus(e.Status),
		TrainedAt: e.TrainedAt,
		SizeBytes: e.SizeBytes,
		Sha256:    e.SHA256,
		Algorithm: optional(e.Algorithm),
		Target:    optional(e.Target),
		File:      optional(e.File),
		Lineage: gen.ModelLineage{
			Operator:          optional(e.Operator),
			AuthenticatedAs:   optional(e.AuthenticatedAs),
			Notes:             optional(e.Notes),
			JobId:             optional(e.JobID),
			TrainingCsvSha256: optional(e.TrainingCSVSHA256),
			ImportedFrom:      optional(e.ImportedFrom),
		},
	}
	if !e.AddedAt.IsZero() {
		d.AddedAt = ptr(e.AddedAt)
	}
	if e.TrainedSamples > 0 {
		d.TrainedSamples = ptr(e.TrainedSamples)
	}
	if len(e.SourceBatches) > 0 {
		d.Lineage.SourceBatches = ptr(e.SourceBatches)
	}
	d.Lineage.Annotations = contractAnnotations(e.Annotations)
	if e.TrainingRows > 0 {
		d.Lineage.TrainingRows = ptr(e.TrainingRows)
	}
	if e.RowsUsed > 0 {
		d.Lineage.RowsUsed = ptr(e.RowsUsed)
	}
	if m := e.Metrics; m != nil {
		d.Metrics = &gen.TrainingMetrics{Rmse: derefBreakdown(m.RMSE), R2: derefBreakdown(m.R2)}
		if m.Components > 0 {
			d.LatentComponents = ptr(m.Components)
		}
	}
	d.ReportUrl = ptr("/model/" + e.Version + "/report")
	if s := e.Shape; s != nil {
		shapeDetail(s, &d)
	}
	return d
}

// shapeDetail fills the axis, regions and recipe recorded in the entry.
func shapeDetail(s *registry.Shape, d *gen.ModelDetail) {
	if s.WavenumberCount > 0 {
		d.WavenumberCount = ptr(s.WavenumberCount)
		d.WavenumberRange = ptr([]float64{s.WavenumberRange[0], s.WavenumberRange[1]})
	}
	d.Regions = contractRegions(s.Regions)
	d.Preprocessing = contractRecipe(s.Preprocessing)
}
