package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"ramanserve/evidence/reconcile"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/server/contract"
	"ramanserve/server/report"
	"ramanserve/trainer/jobs"

	"github.com/labstack/echo/v4"
)

// LabReports gives the review page a version's performance against the
// lab's results; *reconcile.Reconciler implements it. The API's field is
// left nil when the server keeps no lab results: the page then has no lab
// section.
type LabReports interface {
	Performance(ctx context.Context, version string, since, until time.Time) (reconcile.Report, error)
}

// labReportFallback is the range the page reports on when every lab
// result is more than reconcile.MaxReportSamples: the last week, the
// question a plant asks of a model in service.
const labReportFallback = 7 * 24 * time.Hour

// GetModelReport renders the review page of one registry version. The
// route names beside /model/{version} (load, list, info, shadow) are never
// versions, and have no report route of their own: 404 MODEL_NOT_FOUND
// like any name the registry does not hold.
func (a *API) GetModelReport(ctx context.Context, req gen.GetModelReportRequestObject) (gen.GetModelReportResponseObject, error) {
	page, err := a.modelReport(ctx, req.Version, scoresChoice(req.Params.ScoresX, req.Params.ScoresY, (*string)(req.Params.ScoresColor)))
	if err != nil {
		return nil, versionNotFound(err)
	}
	return page, nil
}

// scoresChoice is the scores plot the query asks for; the generated
// validator has checked the ranges and the analyte's name, the page
// checks the components against the model (report.ErrScoresNotInModel).
func scoresChoice[X, Y ~int](x *X, y *Y, color *string) report.ScoresChoice {
	var c report.ScoresChoice
	if x != nil {
		c.X = int(*x)
	}
	if y != nil {
		c.Y = int(*y)
	}
	if color != nil {
		if a, ok := inference.ParseAnalyte(*color); ok {
			c.Color, c.HasColor = a, true
		}
	}
	return c
}

// GetTrainingReport renders the review page of the model a done job trained.
func (a *API) GetTrainingReport(ctx context.Context, req gen.GetTrainingReportRequestObject) (gen.GetTrainingReportResponseObject, error) {
	if a.Training == nil {
		return nil, errTrainingUnavailable
	}
	page, err := a.trainingReport(ctx, req.JobId, scoresChoice(req.Params.ScoresX, req.Params.ScoresY, (*string)(req.Params.ScoresColor)))
	if err != nil {
		return nil, versionNotFound(err)
	}
	return page, nil
}

// modelReport reads the version's entry and file (without activating
// it) and renders its page. registry.ErrModelNotFound for an unknown or
// deleted version.
func (a *API) modelReport(ctx context.Context, version string, scores report.ScoresChoice) (htmlPage, error) {
	leave, err := a.enterReportGate(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	entry, err := a.Registry.Describe(version)
	if err != nil {
		return nil, err
	}
	params, err := a.Registry.ReadParams(ctx, version)
	if err != nil {
		return nil, err
	}
	lab, err := a.labEvidence(ctx, version)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, report.Model{Entry: entry, Params: params, Lab: lab, Scores: scores}); err != nil {
		return nil, err
	}
	return htmlPage(buf.Bytes()), nil
}

// labEvidence reads the version's performance against the lab over every
// lab result, or over the last labReportFallback when they are too many;
// nil without LabReports.
func (a *API) labEvidence(ctx context.Context, version string) (*report.LabEvidence, error) {
	if a.LabReports == nil {
		return nil, nil
	}
	rep, err := a.LabReports.Performance(ctx, version, time.Time{}, time.Time{})
	if !errors.Is(err, reconcile.ErrRangeTooLarge) {
		if err != nil {
			return nil, fmt.Errorf("lab performance of %q: %w", version, err)
		}
		return &report.LabEvidence{Report: rep}, nil
	}
	since := time.Now().Add(-labReportFallback).UTC().Truncate(time.Second)
	rep, err = a.LabReports.Performance(ctx, version, since, time.Time{})
	switch {
	case errors.Is(err, reconcile.ErrRangeTooLarge):
		return &report.LabEvidence{Unavailable: fmt.Sprintf(
			"More than %d lab results are matched, even in the last %d days: GET /model/%s/performance?since=&until= reports on a narrower range.",
			reconcile.MaxReportSamples, labReportFallback/(24*time.Hour), version)}, nil
	case err != nil:
		return nil, fmt.Errorf("lab performance of %q: %w", version, err)
	}
	return &report.LabEvidence{Report: rep, Narrowed: fmt.Sprintf(
		"More than %d lab results are matched in all: this section covers the spectra of the last %d days only (GET /model/%s/performance?since=&until= reports on any range).",
		reconcile.MaxReportSamples, labReportFallback/(24*time.Hour), version)}, nil
}

// trainingReport is the page of the version a done job staged;
// jobs.ErrJobNotDone while it is queued or running, or when it failed.
func (a *API) trainingReport(ctx context.Context, jobID string, scores report.ScoresChoice) (htmlPage, error) {
	job, err := a.Training.Get(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if job.Status != jobs.Done || job.Result == nil {
		return nil, fmt.Errorf("%w: job %q is %s, so it has no model to report on", jobs.ErrJobNotDone, jobID, job.Status)
	}
	return a.modelReport(ctx, job.Result.NewVersion, scores)
}

// maxConcurrentReports bounds the pages read and rendered at once. One
// page reads the version's file (an import may be hundreds of MB) and
// allocates tens of MB while it draws (about 45 MB for 2000 training
// rows): a client asking for many at once waits for a slot (at most
// ReportSlotWait, or until it gives up with its context) instead of
// multiplying that.
const maxConcurrentReports = 2

// DefaultReportSlotWait is how long a review page or a performance report
// waits for one of the maxConcurrentReports slots before it is answered
// 503 SERVER_BUSY (retryable, with Retry-After). While it waits, its
// client holds one of the capped management connections
// (-max-http-connections): without a bound, a burst of reports would
// queue behind each other for as long as the reports take, each holding
// a connection throughout. Five seconds covers a few reports of the
// largest range (reconcile.MaxReportSamples) ahead of it.
const DefaultReportSlotWait = 5 * time.Second

// slotGate lets at most size requests through at once (maxConcurrentReports
// when size is 0); the others wait for a slot or give up with their
// context. Its zero value is ready.
type slotGate struct {
	size  int
	once  sync.Once
	slots chan struct{}
}

// enter waits for a slot, as long as ctx lasts; the returned func gives
// it back.
func (g *slotGate) enter(ctx context.Context) (leave func(), err error) {
	return g.enterWithin(ctx, nil)
}

// enterWithin waits for a slot until ctx ends or bound fires (nil: no
// bound); a bound that fires first is 503 SERVER_BUSY, which tells the
// client to come back rather than that its request failed.
func (g *slotGate) enterWithin(ctx context.Context, bound <-chan time.Time) (leave func(), err error) {
	g.once.Do(func() {
		if g.size <= 0 {
			g.size = maxConcurrentReports
		}
		g.slots = make(chan struct{}, g.size)
	})
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-bound:
		return nil, contract.New(contract.ServerBusy, http.StatusServiceUnavailable,
			"every report slot is taken by other review pages and performance reports; retry after the Retry-After delay")
	}
}

// enterReportGate takes one of the report slots (review pages and
// performance reports share them), waiting at most ReportSlotWait.
func (a *API) enterReportGate(ctx context.Context) (leave func(), err error) {
	wait := a.ReportSlotWait
	if wait <= 0 {
		wait = DefaultReportSlotWait
	}
	bound := time.NewTimer(wait)
	defer bound.Stop()
	return a.reportGate.enterWithin(ctx, bound.C)
}

// gateReports is the route policy of a request that holds one of the
// report slots while it runs.
func (a *API) gateReports(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		leave, err := a.enterReportGate(c.Request().Context())
		if err != nil {
			return err
		}
		defer leave()
		return next(c)
	}
}

// htmlPage is a rendered review page. It is served with a Content
// Security Policy that lets nothing load or run, so even a string the
// escaping missed could not act.
type htmlPage []byte

func (p htmlPage) VisitGetModelReportResponse(w http.ResponseWriter) error { return p.write(w) }

func (p htmlPage) VisitGetTrainingReportResponse(w http.ResponseWriter) error { return p.write(w) }

func (p htmlPage) VisitGetPredictionReportResponse(w http.ResponseWriter) error { return p.write(w) }

func (p htmlPage) write(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", report.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", fmt.Sprint(len(p)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(p)
	return err
}
