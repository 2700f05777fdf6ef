package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"ramanserve/evidence/reconcile"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/server/contract"
)

// POST /lab-results and GET /model/{version}/performance: the lab's
// results reconciled with the prediction log. The request path is
//
//	handler (parse the body, check the query) -> LabService -> reconcile.Reconciler
//	                                             (predlog reader + labstore)

// labResultsPath is the route whose body may be as large as
// reconcile.MaxInputBytes (http.go's body limit).
const labResultsPath = "/lab-results"

// LabService reconciles lab results with the prediction log.
type LabService interface {
	// Post matches records to logged predictions and keeps them.
	Post(ctx context.Context, records []reconcile.LabRecord) (reconcile.PostResult, error)
	// Performance reports a version's error against the lab over the
	// spectra logged in [since, until).
	Performance(ctx context.Context, version string, since, until time.Time) (reconcile.Report, error)
	// Logged reports whether the prediction log holds any prediction of
	// version.
	Logged(ctx context.Context, version string) (bool, error)
}

var errLabUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server keeps no lab results")

// PostLabResults reconciles the lab's results with logged predictions.
func (a *API) PostLabResults(ctx context.Context, req gen.PostLabResultsRequestObject) (gen.PostLabResultsResponseObject, error) {
	if a.Lab == nil {
		return nil, errLabUnavailable
	}
	records, err := parseLabResults(req)
	if err != nil {
		return nil, err
	}
	res, err := a.Lab.Post(ctx, records)
	if err != nil {
		return nil, err
	}
	out := gen.LabResultsOutcome{
		Received:  len(records),
		Matched:   res.Matched,
		Replaced:  res.Replaced,
		Unmatched: make([]gen.UnmatchedLabResult, 0, len(res.Unmatched)),
	}
	for _, u := range res.Unmatched {
		out.Unmatched = append(out.Unmatched, gen.UnmatchedLabResult{
			Index:       u.Index,
			LabSampleId: u.LabSampleID,
			Reason:      gen.UnmatchedLabResultReason(u.Reason),
			Message:     unmatchedMessage(u.Reason),
		})
	}
	return gen.PostLabResults200JSONResponse(out), nil
}

// parseLabResults reads the post's records with reconcile's parsers, so
// that JSON and CSV follow the same rules and their errors
// (INVALID_LAB_RESULTS) name the record and the field. The JSON array
// arrives already decoded by the generated handler, after the contract's
// schema was checked; it is encoded again, which loses nothing the schema
// admits, for ParseJSON's record rules.
func parseLabResults(req gen.PostLabResultsRequestObject) ([]reconcile.LabRecord, error) {
	switch {
	case req.JSONBody != nil:
		body, err := json.Marshal(*req.JSONBody)
		if err != nil {
			return nil, fmt.Errorf("encode the lab post again: %w", err)
		}
		return reconcile.ParseJSON(bytes.NewReader(body))
	case req.Body != nil:
		// The body limit (reconcile.MaxInputBytes) is the router's; the
		// parser stops at the same size.
		records, err := reconcile.ParseCSV(req.Body)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, contract.New(contract.PayloadTooLarge, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("the lab post exceeds %d bytes", reconcile.MaxInputBytes))
		}
		return records, err
	}
	return nil, contract.New(contract.UnsupportedMediaType, http.StatusUnsupportedMediaType,
		"lab results must be application/json or text/csv")
}

// unmatchedMessage explains an unmatched record's reason to a person.
func unmatchedMessage(r reconcile.Reason) string {
	switch r {
	case reconcile.ReasonUnknownBatch:
		return "no prediction of this batch_id is in the prediction log (never logged, or deleted by retention)"
	case reconcile.ReasonNoPredictionForScanSeq:
		return "the batch is logged, but no active prediction of it has this scan_seq"
	case reconcile.ReasonNoneWithinWindow:
		return "the batch is logged, but no active prediction of it lies within the lab match window of sampled_at"
	}
	return string(r)
}

// GetModelPerformance reports a version's error against the lab.
func (a *API) GetModelPerformance(ctx context.Context, req gen.GetModelPerformanceRequestObject) (gen.GetModelPerformanceResponseObject, error) {
	if a.Lab == nil {
		return nil, errLabUnavailable
	}
	// A report reads up to reconcile.MaxReportSamples spectra's
	// predictions: it shares the review pages' slots.
	leave, err := a.reportGate.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	var since, until time.Time
	if req.Params.Since != nil {
		since = *req.Params.Since
	}
	if req.Params.Until != nil {
		until = *req.Params.Until
	}
	if req.Params.Since != nil && req.Params.Until != nil && !since.Before(until) {
		return nil, contract.New(contract.InvalidRequest, http.StatusBadRequest, "since must be before until")
	}
	if err := a.versionKnown(ctx, req.Version); err != nil {
		return nil, err
	}
	rep, err := a.Lab.Performance(ctx, req.Version, since, until)
	if err != nil {
		return nil, err
	}
	out := modelPerformance(req.Version, rep)
	out.Since, out.Until = req.Params.Since, req.Params.Until
	return gen.GetModelPerformance200JSONResponse(out), nil
}

// versionKnown is nil when version is in the registry or in the
// prediction log (a deleted version's predictions still have a
// performance), else MODEL_NOT_FOUND.
func (a *API) versionKnown(ctx context.Context, version string) error {
	_, err := a.Registry.Describe(version)
	if err == nil {
		return nil
	}
	if !errors.Is(err, inference.ErrModelNotFound) {
		return err
	}
	logged, err := a.Lab.Logged(ctx, version)
	if err != nil {
		return err
	}
	if !logged {
		return contract.New(contract.ModelNotFound, http.StatusNotFound,
			fmt.Sprintf("model version %q is neither in the registry nor in the prediction log", version))
	}
	return nil
}

// modelPerformance maps a report to the contract's shape: the version
// asked for first among the models, when it scored any matched spectrum.
func modelPerformance(version string, rep reconcile.Report) gen.ModelPerformance {
	out := gen.ModelPerformance{
		Version:  version,
		Analytes: analytePerformances(rep.Version.Analytes),
		Models:   []gen.ModelPerformanceEntry{},
		Batches:  make([]gen.BatchBias, 0, len(rep.Version.Batches)),
	}
	if rep.Samples > 0 {
		out.Models = append(out.Models, modelEntry(rep.Version))
	}
	for _, o := range rep.Others {
		out.Models = append(out.Models, modelEntry(o))
	}
	for _, b := range rep.Version.Batches {
		out.Batches = append(out.Batches, batchBias(b))
	}
	return out
}

func modelEntry(vs reconcile.VersionStats) gen.ModelPerformanceEntry {
	e := gen.ModelPerformanceEntry{Version: vs.Version, Roles: make([]gen.PredictionRole, 0, len(vs.Roles)), Analytes: analytePerformances(vs.Analytes)}
	for _, r := range vs.Roles {
		e.Roles = append(e.Roles, gen.PredictionRole(r.String()))
	}
	return e
}

// analytePerformances places each analyte's statistics in its field.
func analytePerformances(stats []reconcile.AnalyteStats) gen.AnalytePerformances {
	var out gen.AnalytePerformances
	for _, s := range stats {
		p := &gen.AnalytePerformance{N: s.N, Rmsep: s.RMSEP, Bias: s.Bias, Slope: s.Slope, Intercept: s.Intercept}
		switch s.Analyte {
		case inference.EPA:
			out.EPA = p
		case inference.DHA:
			out.DHA = p
		case inference.DPA:
			out.DPA = p
		}
	}
	return out
}

// batchBias is one control-chart point; its n is the most pairs any
// analyte has in the batch (the batch's samples, when each has every
// analyte).
func batchBias(b reconcile.BatchBias) gen.BatchBias {
	out := gen.BatchBias{BatchId: b.BatchID, FirstSampledAt: b.FirstSampleAt.UTC()}
	for _, ab := range b.Analytes {
		out.N = max(out.N, ab.N)
		switch ab.Analyte {
		case inference.EPA:
			out.Bias.EPA = ab.Bias
		case inference.DHA:
			out.Bias.DHA = ab.Bias
		case inference.DPA:
			out.Bias.DPA = ab.Bias
		}
	}
	return out
}

// isLabCSV reports whether req is a CSV lab post, and gives its
// Content-Type the spelling the generated handler looks for (media types
// compare without regard to case). The contract's validator leaves such a
// body alone: its schema is a string, and kin-openapi's CSV decoder would
// report a ragged row as malformed JSON, where ParseCSV names the row and
// the column.
func isLabCSV(req *http.Request) bool {
	if req.URL.Path != labResultsPath {
		return false
	}
	ct := req.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !strings.EqualFold(mt, "text/csv") {
		return false
	}
	req.Header.Set("Content-Type", mime.FormatMediaType("text/csv", params))
	return true
}

// labMediaType names both media types in a lab post's 415.
func labMediaType(req *http.Request, err error) error {
	var ce *contract.Error
	if req.URL.Path == labResultsPath && errors.As(err, &ce) && ce.Code == contract.UnsupportedMediaType {
		return contract.New(contract.UnsupportedMediaType, http.StatusUnsupportedMediaType,
			"lab results must be application/json or text/csv")
	}
	return err
}

// gateLabPosts lets one lab post at a time into the contract check and the
// parsers: on its way a 4 MiB JSON array costs about 200 MB (the check's
// decoded tree, the binding, the parser's records), so concurrent posts
// must not multiply it. The others wait, within their request's time.
func (a *API) gateLabPosts(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Path() != labResultsPath {
			return next(c)
		}
		leave, err := a.labGate.enter(c.Request().Context())
		if err != nil {
			return err
		}
		defer leave()
		return next(c)
	}
}
