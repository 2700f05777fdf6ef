package server

import (
	"context"

	"github.com/getkin/kin-openapi/openapi3"

	"fmt"
	"net/http"
	"runtime"
	"time"

	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/platform/buildinfo"
	"ramanserve/registry"
	"ramanserve/server/contract"
	"ramanserve/server/metrics"
)

// ProtocolVersion is the prediction channel's protocol version.
const ProtocolVersion = 1

// API implements gen.StrictServerInterface: a thin layer that turns
// requests into calls on the services it holds and their results into
// contract types. Failures are returned as errors; errorHandler maps them.
type API struct {
	Registry *registry.Registry
	// Training serves the training routes; nil answers 501 NOT_IMPLEMENTED.
	Training TrainingService
	// Rescore starts re-scoring jobs (rescore.go); nil answers 501.
	Rescore RescoreService
	// Deleter deletes versions (DELETE /model/{version}) under the rules
	// of the jobs that use them (rescoreGuard); nil deletes through
	// Registry alone, for a server that queues no such job.
	Deleter VersionDeleter
	// Exporter writes versions as files (GET /model/{version}/export);
	// nil answers 501.
	Exporter ModelExporter
	// Axes gives a version's axis (GET /model/{version}/axis); nil
	// answers 501.
	Axes AxisReader
	// ChannelUp reports whether the prediction channel is listening.
	ChannelUp     func() bool
	ServerVersion string
	Started       time.Time
	// Metrics is the server's registry (GET /metrics), which the web layer
	// and LoadModel record into; nil: the handler makes its own.
	Metrics *metrics.Metrics
	// Predictions serves GET /predictions; nil answers 501.
	Predictions PredictionService
	// Spectra serves GET /predictions/{predictionId} and its page; nil
	// answers 501.
	Spectra SpectrumService
	// PredictionLog reports the log's counters in GET /health; nil leaves
	// them out.
	PredictionLog PredictionLogStats
	// Lab serves POST /lab-results and GET /model/{version}/performance;
	// nil answers 501.
	Lab       LabService
	logLosses lossWatch // write failures of the prediction log, for health
	// Shadow is the running shadow's comparison (GET /model/shadow); nil:
	// the shadow is named without figures.
	Shadow ShadowScores
	// LabReports adds the lab section to the review pages; nil leaves it
	// out.
	LabReports LabReports
	// ReportSlotWait bounds how long a review page or a performance
	// report waits for a report slot before it is answered 503
	// SERVER_BUSY; 0 means DefaultReportSlotWait.
	ReportSlotWait time.Duration
	// Store is the shared store's monitor; nil for the embedded store.
	// While it cannot reach the store, health reads degraded.
	Store metrics.StoreState
	// Fleet lists the replicas sharing the store (GET /fleet); nil
	// answers 501.
	Fleet FleetService
	// Batches serves the batch routes (trajectories, reference marks,
	// the control band page); nil answers 501.
	Batches BatchService
	// Readiness answers GET /readyz; nil: ready whenever it answers.
	Readiness ReadinessService

	metaSchema *openapi3.Schema // TrainingMeta, for the upload's meta part
	spec       specDocuments    // GET /openapi.yaml and /openapi.json
	writeProbe writeProbe       // health's registry write probe, one at a time
	reportGate slotGate         // review pages and performance reports computed at once
	labGate    slotGate         // lab posts parsed and stored at once (labPostSlots)
}

var _ gen.StrictServerInterface = (*API)(nil)

// BuildVersion is the module version from the Go build information, or
// "devel" for a local build.
func BuildVersion() string { return buildinfo.Read().Version }

// LoadModel swaps the active model, counting the load by its result.
func (a *API) LoadModel(ctx context.Context, req gen.LoadModelRequestObject) (_ gen.LoadModelResponseObject, err error) {
	defer func() { a.Metrics.ModelLoad(err) }()
	body := req.Body
	source := registry.SourceStaged
	if body.Source != nil {
		source = registry.Source(*body.Source)
	}
	lr := registry.LoadRequest{Version: body.Version, Source: source, ExpectedActive: body.ExpectedActive}
	if req.Params.IfMatch != nil {
		if *req.Params.IfMatch == "" {
			return nil, contract.New(contract.InvalidRequest, http.StatusBadRequest, "header If-Match: empty; send the ETag of GET /model/list, or leave the header out")
		}
		lr.IfMatch = *req.Params.IfMatch
	}
	if source == registry.SourceFile {
		lr.AuthenticatedAs = authenticatedAs(ctx) // the import's lineage
		if body.Path == nil || *body.Path == "" {
			return nil, contract.New(contract.InvalidRequest, http.StatusBadRequest, `field "path": required when source is "file"`)
		}
		lr.Path = *body.Path
	}
	res, err := a.Registry.Load(ctx, lr)
	if err != nil {
		return nil, err
	}
	return gen.LoadModel200JSONResponse{
		LoadedVersion:   res.Loaded,
		PreviousVersion: res.Previous,
		LoadTimeMs:      int(res.Duration.Milliseconds()),
		Algorithm:       optional(res.Algorithm),
	}, nil
}

// ListModels lists the registry.
func (a *API) ListModels(ctx context.Context, req gen.ListModelsRequestObject) (gen.ListModelsResponseObject, error) {
	active, entries, etag := a.Registry.ListTagged()
	if notModified(req.Params.IfNoneMatch, etag) {
		return gen.ListModels304Response{Headers: gen.NotModifiedResponseHeaders{ETag: &etag}}, nil
	}
	out := gen.ModelList{Models: make([]gen.ModelVersion, 0, len(entries))}
	if active != "" {
		out.Active = &active
	}
	for i := range entries {
		e := &entries[i]
		mv := gen.ModelVersion{
			Version:   e.Version,
			Status:    gen.ModelStatus(e.Status),
			TrainedAt: e.TrainedAt,
			SizeKb:    ptr(e.SizeKB()),
			Algorithm: optional(e.Algorithm),
		}
		if e.TrainedSamples > 0 {
			mv.TrainedSamples = ptr(e.TrainedSamples)
		}
		out.Models = append(out.Models, mv)
	}
	return gen.ListModels200JSONResponse{Body: out, Headers: gen.ListModels200ResponseHeaders{ETag: optional(etag)}}, nil
}

// GetModelInfo describes the active model.
func (a *API) GetModelInfo(ctx context.Context, req gen.GetModelInfoRequestObject) (gen.GetModelInfoResponseObject, error) {
	m, etag := a.Registry.ActiveTagged()
	if m == nil {
		return nil, fmt.Errorf("GET /model/info: %w", inference.ErrModelNotLoaded)
	}
	if notModified(req.Params.IfNoneMatch, etag) {
		return gen.GetModelInfo304Response{Headers: gen.NotModifiedResponseHeaders{ETag: &etag}}, nil
	}
	return gen.GetModelInfo200JSONResponse{Body: ModelInfo(m), Headers: gen.GetModelInfo200ResponseHeaders{ETag: &etag}}, nil
}

// ModelInfo converts a model's metadata to the contract's ModelInfo; the
// prediction channel's model_info reply carries the same fields.
func ModelInfo(m inference.Model) gen.ModelInfo {
	md := m.Metadata()
	info := gen.ModelInfo{
		ActiveVersion: md.Version,
		Algorithm:     md.Algorithm,
		TrainedAt:     md.TrainedAt,
		Rmse:          breakdown(md.RMSE),
		R2:            breakdown(md.R2),
	}
	if md.LatentComponents > 0 {
		info.LatentComponents = ptr(md.LatentComponents)
	}
	if md.TrainedSamples > 0 {
		info.TrainedSamples = ptr(md.TrainedSamples)
	}
	if lo, hi, ok := md.WavenumberRange(); ok {
		info.WavenumberRange = &[]float64{lo, hi}
		info.WavenumberCount = ptr(len(md.Wavenumbers))
	}
	return info
}

func breakdown(b inference.Breakdown) *gen.MetricBreakdown {
	var out gen.MetricBreakdown
	any := false
	for a := inference.Analyte(0); a < inference.NumAnalytes; a++ {
		if !b.Valid[a] {
			continue
		}
		v := b.Value[a]
		any = true
		switch a {
		case inference.EPA:
			out.EPA = &v
		case inference.DHA:
			out.DHA = &v
		case inference.DPA:
			out.DPA = &v
		}
	}
	if !any {
		return nil
	}
	return &out
}

// GetHealth reports liveness and the degraded conditions documented in the contract.
func (a *API) GetHealth(ctx context.Context, _ gen.GetHealthRequestObject) (gen.GetHealthResponseObject, error) {
	var reasons []string
	if err := a.writeProbe.check(a.Registry.Writable); err != nil {
		reasons = append(reasons, storageReason(err))
	}
	if err := a.Registry.RestoreError(); err != nil {
		reasons = append(reasons, "the previously active model could not be restored: "+err.Error())
	}
	reasons = append(reasons, a.Registry.Problems()...) // quarantined files, entries without a file
	if a.Store != nil {
		if err, since := a.Store.Err(); err != nil {
			reasons = append(reasons, fmt.Sprintf("the shared store cannot be reached (since %s): %v; predictions go on with the model served, routes that need the store answer STORE_UNAVAILABLE", since.UTC().Format(time.RFC3339), err))
		}
	}
	if a.ChannelUp != nil && !a.ChannelUp() {
		reasons = append(reasons, "prediction channel is not listening")
	}
	logHealth, logReason := a.predictionLogHealth(time.Now())
	if logReason != "" {
		reasons = append(reasons, logReason)
	}
	h := gen.GetHealth200JSONResponse{
		Status:          gen.HealthStatusStatus("ok"),
		UptimeSeconds:   ptr(int(time.Since(a.Started).Seconds())),
		ServerVersion:   ptr(a.ServerVersion),
		ProtocolVersion: ptr(ProtocolVersion),
		PythonVersion:   ptr(runtime.Version()),
		PredictionLog:   logHealth,
	}
	m := a.Registry.Active()
	h.ModelLoaded = ptr(m != nil)
	if m != nil {
		h.ActiveVersion = ptr(m.Metadata().Version)
	}
	if len(reasons) > 0 {
		h.Status = "degraded"
		h.DegradedReasons = &reasons
	}
	return h, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
