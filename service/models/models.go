// Package models holds the use cases of the model registry that span more
// than the registry: staging a model a training job produced, queueing a
// re-scoring job for a registered version on the logged spectra, and
// deleting a version only while no such job needs it. The
// transports call it; it knows nothing of HTTP or the prediction channel.
package models

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
)

// ErrInvalidRange is a re-scoring range whose since is not before its
// until.
var ErrInvalidRange = errors.New("models: the range is empty")

// Service is the models' use cases over a registry and the job queue.
type Service struct {
	reg  *registry.Registry
	jobs *jobs.Manager
	// log is the prediction log's spectra; nil when the server does not
	// log spectra, and every re-scoring request is then NO_LOGGED_SPECTRA.
	log   jobs.RescoreLog
	guard *rescoreGuard // keeps deletes and re-scoring of one version apart
	now   func() time.Time
}

// New returns the service over the registry and the job queue; log is
// nil when no spectra are logged.
func New(reg *registry.Registry, queue *jobs.Manager, log jobs.RescoreLog) *Service {
	return &Service{reg: reg, jobs: queue, log: log, guard: newRescoreGuard(reg, queue), now: time.Now}
}

// Stager is the job queue's publish step: it stores a trained model in
// the registry as staged. It is apart from Service because the queue is
// built with it, before the service that uses the queue.
type Stager struct{ Registry *registry.Registry }

// Stage stores a trained model as staged, with its lineage and
// cross-validated figures, and returns its version and file.
func (st Stager) Stage(ctx context.Context, res *trainer.Result, lin jobs.Lineage) (string, string, error) {
	params := res.Params
	return st.Registry.AddStaged(ctx, registry.StagedModel{
		Ext:               ".npz",
		TrainedAt:         params.Meta.TrainedAt,
		TrainedSamples:    params.Meta.TrainedSamples,
		Algorithm:         params.Meta.Algorithm,
		Operator:          lin.Operator,
		AuthenticatedAs:   lin.AuthenticatedAs,
		SourceBatches:     lin.SourceBatches,
		Notes:             lin.Notes,
		Annotations:       lin.Annotations,
		JobID:             lin.JobID,
		TrainingCSVSHA256: lin.CSVSHA256,
		TrainingRows:      lin.Rows,
		RowsUsed:          lin.RowsUsed,
		Metrics:           &registry.Metrics{RMSE: params.Meta.RMSE, R2: params.Meta.R2, Components: res.Components},
		Shape:             registry.ShapeOf(params),
		Write: func(version string, w io.Writer) error {
			stamped := *params
			stamped.Meta.Version = version
			return inference.WriteArtifact(w, &stamped)
		},
	})
}

// RescoreRequest asks for version to be scored on the spectra logged in
// [Since, Until). A zero Since is open; a zero Until is now.
type RescoreRequest struct {
	Version         string
	Since, Until    time.Time
	AuthenticatedAs string // the token's name, for the job's record
}

// Rescore checks the request against the registry and the server's
// configuration, opens the model as a load would, and queues the job.
func (s *Service) Rescore(ctx context.Context, req RescoreRequest) (jobs.Job, error) {
	until := req.Until
	if until.IsZero() {
		until = s.now()
	}
	if !req.Since.IsZero() && !req.Since.Before(until) {
		return jobs.Job{}, fmt.Errorf("%w: since (%s) must be before until (%s)", ErrInvalidRange,
			req.Since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano))
	}
	// From the registry check to the queue, a delete of the version waits
	// or is refused: no job is queued for a version that is gone.
	queued, err := s.guard.beginQueueing(ctx, req.Version)
	if err != nil {
		return jobs.Job{}, err
	}
	defer queued()
	// An unknown version is told before anything about the log.
	if _, err := s.reg.Describe(req.Version); err != nil {
		return jobs.Job{}, err
	}
	if s.log == nil {
		return jobs.Job{}, fmt.Errorf("%w: the server runs without -log-spectra, so no spectrum is logged to re-score", jobs.ErrNoLoggedSpectra)
	}
	model, err := s.reg.OpenVersion(ctx, req.Version)
	if err != nil {
		return jobs.Job{}, err
	}
	return s.jobs.SubmitRescore(ctx, jobs.RescoreRequest{Model: model, Log: s.log, Since: req.Since, Until: until,
		Meta: jobs.Meta{AuthenticatedAs: req.AuthenticatedAs}})
}

// Delete deletes a staged or archived version unless a re-scoring job for
// it is queued or running, or a request is queueing one
// (ErrModelBusy).
func (s *Service) Delete(ctx context.Context, version string) error {
	return s.guard.Delete(ctx, version)
}

// Axis returns the wavenumbers (cm-1) a spectrum for version must have,
// in order: the active model's from memory, any other version's by
// opening its file as a load would (size, checksum, reader). Unknown
// version: registry.ErrModelNotFound. A model that records no axis gives
// an empty slice. The slice is the model's own: callers must not change
// it.
func (s *Service) Axis(ctx context.Context, version string) ([]float64, error) {
	if m := s.reg.Active(); m != nil && m.Metadata().Version == version {
		return m.Metadata().Wavenumbers, nil
	}
	m, err := s.reg.OpenVersion(ctx, version)
	if err != nil {
		return nil, err
	}
	return m.Metadata().Wavenumbers, nil
}
