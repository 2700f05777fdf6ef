package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/inference/registry"
	"ramanserve/server/contract"
	"ramanserve/trainer/jobs"
)

// RescoreService starts re-scoring jobs: a version of the registry applied
// to the spectra of the prediction log, in the training queue.
type RescoreService interface {
	// Rescore queues a job scoring version on the logged spectra in
	// [since, until) (zero: open at that end; until defaults to now).
	Rescore(ctx context.Context, version string, since, until time.Time) (gen.TrainingJobAccepted, error)
}

var errRescoreUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server does not re-score")

// RescoreModel scores a version on logged spectra as a background job.
func (a *API) RescoreModel(ctx context.Context, req gen.RescoreModelRequestObject) (gen.RescoreModelResponseObject, error) {
	if a.Rescore == nil {
		return nil, errRescoreUnavailable
	}
	accepted, err := a.Rescore.Rescore(ctx, string(req.Version), deref(req.Params.Since), deref(req.Params.Until))
	if err != nil {
		return nil, err
	}
	return gen.RescoreModel202JSONResponse(accepted), nil
}

// rescoreService checks a re-scoring request against the registry and the
// server's configuration, opens the model as a load would, and queues the
// job (jobs.Manager.SubmitRescore).
type rescoreService struct {
	reg  *registry.Registry
	jobs *jobs.Manager
	// guard keeps the version from being deleted until its job is queued
	// (and the job's, from then on); the API's Deleter is the same guard.
	guard *rescoreGuard
	// log is the prediction log; nil when the server does not log spectra
	// (-log-spectra off): every request is then NO_LOGGED_SPECTRA.
	log jobs.RescoreLog
}

func (s rescoreService) Rescore(ctx context.Context, version string, since, until time.Time) (gen.TrainingJobAccepted, error) {
	// The range is checked here, against the contract, after until takes
	// its default: a since in the future is a bad request, not bad
	// training options.
	if until.IsZero() {
		until = time.Now()
	}
	if !since.IsZero() && !since.Before(until) {
		return gen.TrainingJobAccepted{}, contract.New(contract.InvalidRequest, http.StatusBadRequest,
			fmt.Sprintf("since (%s) must be before until (%s)", since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano)))
	}
	// From the registry check to the queue, a delete of version waits
	// or is refused: no job is queued for a version that is gone.
	queued, err := s.guard.beginQueueing(ctx, version)
	if err != nil {
		return gen.TrainingJobAccepted{}, err
	}
	defer queued()
	// An unknown version is told before anything about the log.
	if _, err := s.reg.Describe(version); err != nil {
		return gen.TrainingJobAccepted{}, err
	}
	if s.log == nil {
		return gen.TrainingJobAccepted{}, fmt.Errorf("%w: the server runs without -log-spectra, so no spectrum is logged to re-score", inference.ErrNoLoggedSpectra)
	}
	model, err := s.reg.OpenVersion(ctx, version)
	if err != nil {
		return gen.TrainingJobAccepted{}, err
	}
	j, err := s.jobs.SubmitRescore(ctx, jobs.RescoreRequest{Model: model, Log: s.log, Since: since, Until: until,
		Meta: jobs.Meta{AuthenticatedAs: authenticatedAs(ctx)}})
	if err != nil {
		return gen.TrainingJobAccepted{}, err
	}
	url := "/training/" + j.ID
	return gen.TrainingJobAccepted{JobId: j.ID, EstimatedDurationSeconds: ptr(j.EstimatedSeconds), StatusUrl: &url}, nil
}

// wireRescore plugs re-scoring into the API once the job manager and the
// prediction log are open, and deletes versions through the same guard.
// Without -log-spectra the service has no log.
func (a *App) wireRescore() {
	if a.jobs == nil {
		return
	}
	guard := newRescoreGuard(a.Registry, a.jobs)
	s := rescoreService{reg: a.Registry, jobs: a.jobs, guard: guard}
	if a.cfg.Evidence.LogSpectra && a.predlog != nil {
		s.log = a.predlog
	}
	a.api.Rescore = s
	a.api.Deleter = guard
}

// rescoreSpec is a job's re-scoring spec as the contract shows it.
func rescoreSpec(j *jobs.Job) *gen.RescoreResult {
	r := j.Rescore
	if r == nil {
		return nil
	}
	out := &gen.RescoreResult{Version: r.Version, Spectra: r.Spectra, Until: ptr(r.Until)}
	if !r.Since.IsZero() {
		out.Since = ptr(r.Since)
	}
	return out
}
