package server

import (
	"context"
	"errors"
	"io"
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

// labPostSlots is how many lab posts are read, parsed, matched and
// stored at once; the others wait for a slot, or give up with their
// request. The parser streams the body and holds at most
// reconcile.MaxRecords records (the largest post raises the heap by
// about 14 MB: BenchmarkLabPost4MiB), so the slots bound what lab posts
// hold at once. The store commits each post in one transaction, so posts
// at once are each stored whole or not at all; a post waits for the
// other's commit within the store's busy timeout.
const labPostSlots = 2

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

// serverRoutes is the generated echo interface the server registers:
// the strict handler's, but for the lab post. The strict handler would
// bind a JSON post's body into []gen.LabResult before any handler ran;
// a lab post's body is read once instead, by reconcile's parser.
type serverRoutes struct {
	gen.ServerInterface
	api *API
}

// PostLabResults reconciles the lab's results with logged predictions.
func (s serverRoutes) PostLabResults(c echo.Context) error {
	req := c.Request()
	out, err := s.api.postLabResults(req.Context(), req.Header.Get("Content-Type"), req.Body)
	if err != nil {
		return err
	}
	return out.VisitPostLabResultsResponse(c.Response())
}

// errLabPostBound is what the strict interface's PostLabResults answers:
// serverRoutes serves the route, so that the body is parsed once; a
// handler that reached it was registered without serverRoutes.
var errLabPostBound = errors.New("POST /lab-results reached the strict handler, whose binding decodes the body before the parser: register serverRoutes")

// PostLabResults is the strict interface's form of the lab post, which
// the server does not use: see serverRoutes.
func (a *API) PostLabResults(context.Context, gen.PostLabResultsRequestObject) (gen.PostLabResultsResponseObject, error) {
	return nil, errLabPostBound
}

// postLabResults parses a lab post's body with reconcile's parser for its
// media type, the only reading of the body (the contract's validator is
// not attached to the route: see operationMiddlewares), and reconciles
// the records with logged predictions. The parser enforces every rule the
// contract states for the body, and its refusals keep the contract's
// codes: INVALID_LAB_RESULTS naming the record and the field, or, for a
// JSON body, MALFORMED_JSON when it is not JSON and INVALID_REQUEST when
// it is not an array of LabResult (package contract maps them).
func (a *API) postLabResults(ctx context.Context, contentType string, body io.Reader) (gen.PostLabResults200JSONResponse, error) {
	var out gen.PostLabResults200JSONResponse
	if a.Lab == nil {
		return out, errLabUnavailable
	}
	parse, err := labParser(contentType)
	if err != nil {
		return out, err
	}
	records, err := parse(body)
	switch {
	case errors.Is(err, reconcile.ErrInvalidLabRecords):
		return out, err // a refusal of the post, coded by package contract
	case err != nil:
		return out, bodyReadError(err)
	}
	res, err := a.Lab.Post(ctx, records)
	if err != nil {
		return out, err
	}
	out = gen.PostLabResults200JSONResponse{
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
	return out, nil
}

var errLabMediaType = contract.New(contract.UnsupportedMediaType, http.StatusUnsupportedMediaType,
	"lab results must be application/json or text/csv")

// labParser is the parser of a lab post's media type. Media types
// compare without regard to case (RFC 9110), and their parameters do not
// choose the parser.
func labParser(contentType string) (func(io.Reader) ([]reconcile.LabRecord, error), error) {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
		return nil, errLabMediaType
	case strings.EqualFold(mt, "application/json"):
		return reconcile.ParseJSON, nil
	case strings.EqualFold(mt, "text/csv"):
		return reconcile.ParseCSV, nil
	}
	return nil, errLabMediaType
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
	// A report reads up to reconcile.MaxReportSamples spectra's
	// predictions: it shares the review pages' slots, and waits for one
	// at most ReportSlotWait (503 SERVER_BUSY after).
	leave, err := a.enterReportGate(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	rep, err := a.Lab.Performance(ctx, req.Version, since, until)
	if err != nil {
		return nil, err
	}
	out := modelPerformance(req.Version, rep)
	out.Since, out.Until = req.Params.Since, req.Params.Until
	return gen.GetModelPerformance200JSONResponse(out), nil
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

// gateLabPosts lets labPostSlots lab posts at a time into their parser
// and the store; it is attached to the route at its registration.
func (a *API) gateLabPosts(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		leave, err := a.labGate.enter(c.Request().Context())
		if err != nil {
			return err
		}
		defer leave()
		return next(c)
	}
}
