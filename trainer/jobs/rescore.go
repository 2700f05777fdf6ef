package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
	"ramanserve/trainer"
)

// Re-scoring: a job of kind rescore applies a staged or archived model to
// the spectra the prediction log holds, and writes its predictions to the
// log beside the active ones (role rescore, the original PredictionID and
// time), so that they join the performance statistics. It runs in the same
// queue and worker as training, one job at a time, with the same record,
// progress, cancel and restart rules. Its model is opened when the job is
// submitted and held in memory, so a queued re-scoring job cannot outlive
// the process: a restart records it failed (INTERRUPTED), like a running one.

// Kind tells a training job from a re-scoring job.
type Kind string

// Job kinds. A record without a kind was written before re-scoring
// existed: it is a training job.
const (
	KindTraining Kind = "training"
	KindRescore  Kind = "rescore"
)

// KindOf returns j's kind, training for records without one.
func (j *Job) KindOf() Kind {
	if j.Kind == "" {
		return KindTraining
	}
	return j.Kind
}

// RescoreSpec is what a re-scoring job scores (Version, on the spectra
// logged in [Since, Until)) and, as it runs, how many it scored. The
// record holds it by pointer and replaces it, never changes it in place:
// copies of a Job (Get, List) share it.
type RescoreSpec struct {
	Version string    `json:"version"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until"`
	// Spectra counts the spectra scored (so far, while running).
	Spectra int64 `json:"spectra"`
	// Skipped counts logged spectra the model refused (another axis, out
	// of range); their records are not written.
	Skipped int64 `json:"skipped,omitempty"`
}

// RescoreLog is the prediction log as a re-scoring job sees it: it pages
// the logged spectra and writes the new records, waiting for room in the
// log's queue rather than dropping (*predlog.Writer implements it).
type RescoreLog interface {
	Page(ctx context.Context, f predlog.Filter) (predlog.Page, error)
	RecordWait(ctx context.Context, rec *predlog.Record) error
}

// RescoreRequest is a re-scoring job to queue: Model (opened by the
// caller, like a load would) on the active predictions with spectra that
// Log holds in [Since, Until). A zero Until means the time of submission:
// spectra logged later are not scored. Meta carries who asked.
type RescoreRequest struct {
	Model        inference.Model
	Log          RescoreLog
	Since, Until time.Time
	Meta         Meta
}

// rescoreTask is the part of a task only a re-scoring job has.
type rescoreTask struct {
	model inference.Model
	log   RescoreLog
	// filter selects the spectra: active records with spectra in the
	// job's range, a page at a time.
	filter predlog.Filter
}

// SubmitRescore queues a re-scoring job. It fails with ErrQueueFull
// when every place of the queue is taken, with ErrNoLoggedSpectra
// when no logged spectrum lies in the range, and with a trainer.ErrInvalidOptions
// error for a range that ends before it starts.
func (m *Manager) SubmitRescore(ctx context.Context, req RescoreRequest) (Job, error) {
	if req.Model == nil || req.Log == nil {
		return Job{}, errors.New("jobs: a re-scoring job needs a model and a log")
	}
	now := m.opts.Now()
	until := req.Until
	if until.IsZero() {
		until = now
	}
	if !req.Since.IsZero() && !req.Since.Before(until) {
		return Job{}, fmt.Errorf("%w: since (%s) must be before until (%s)", trainer.ErrInvalidOptions,
			req.Since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano))
	}
	filter := predlog.Filter{Role: predlog.RoleActive, WithSpectra: true, Since: req.Since, Until: until, Limit: predlog.MaxSpectraPageLimit}
	if err := anyLogged(ctx, req.Log, filter); err != nil {
		return Job{}, err
	}
	r, err := m.Reserve(ctx)
	if err != nil {
		return Job{}, err
	}
	defer r.Release()
	version := req.Model.Metadata().Version
	j := &Job{ID: uuid.NewString(), Kind: KindRescore, Status: Queued, SubmittedAt: now, EstimatedSeconds: 1, Meta: req.Meta,
		Rescore: &RescoreSpec{Version: version, Since: req.Since, Until: until}}
	queued, err := m.enqueue(r, j, &task{id: j.ID, rescore: &rescoreTask{model: req.Model, log: req.Log, filter: filter}})
	if err != nil {
		return Job{}, err
	}
	m.log.Info("re-scoring job queued", "job", j.ID, "version", version, "since", req.Since, "until", until)
	return queued, nil
}

// RescoreInProgress returns the re-scoring job of version that is running,
// else the oldest one queued, if there is any. The job scores with a model
// it holds in memory and writes records that name version, so that
// version is still in use until the job ends.
func (m *Manager) RescoreInProgress(version string) (Job, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	scores := func(t *task) bool {
		j := m.jobs[t.id]
		return t.rescore != nil && (j.Status == Queued || j.Status == Running) && j.Rescore != nil && j.Rescore.Version == version
	}
	if t := m.current; t != nil && scores(t) {
		return *m.jobs[t.id], true
	}
	for _, t := range m.pending {
		if scores(t) {
			return *m.jobs[t.id], true
		}
	}
	return Job{}, false
}

// anyLogged fails with ErrNoLoggedSpectra unless the log holds
// at least one spectrum f selects.
func anyLogged(ctx context.Context, log RescoreLog, f predlog.Filter) error {
	f.Limit = 1
	page, err := log.Page(ctx, f)
	if err != nil {
		return err
	}
	if len(page.Records) == 0 {
		return fmt.Errorf("%w: the prediction log holds no spectrum of an active prediction between %s and %s",
			ErrNoLoggedSpectra, rangeEnd(f.Since, "the start"), f.Until.Format(time.RFC3339Nano))
	}
	return nil
}

func rangeEnd(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return t.Format(time.RFC3339Nano)
}

// runRescore scores t's spectra page by page under jobCtx (Cancel and
// Close stop it between two records), then records the job done unless
// it was cancelled meanwhile. Records already written stay in the log: each
// is a true prediction of the model, whole.
func (m *Manager) runRescore(ctx, jobCtx context.Context, t *task) {
	defer t.cancel()
	started := m.opts.Now()
	rt := t.rescore
	version := rt.model.Metadata().Version
	m.log.Info("re-scoring started", "job", t.id, "version", version)
	sc := scorer{model: rt.model, version: version}
	err := sc.run(jobCtx, rt.log, rt.filter, func(p float64, pageEnd bool) {
		m.rescoreProgress(t.id, p, pageEnd, sc.scored, sc.skipped)
	})
	if err == nil && sc.scored == 0 && sc.skipped > 0 {
		err = fmt.Errorf("%w: the model refused all %d logged spectra; the first: %v", inference.ErrInvalidSpectrum, sc.skipped, sc.firstErr)
	}
	finished := m.opts.Now()
	if err != nil {
		m.fail(ctx, t, err, finished)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[t.id]
	if j.Status != Running {
		return // cancelled: recorded by Cancel
	}
	spec := *j.Rescore
	spec.Spectra, spec.Skipped = sc.scored, sc.skipped
	j.Status, j.FinishedAt, j.Progress, j.Rescore = Done, &finished, 1, &spec
	m.persistOrKeep(j)
	m.log.Info("re-scoring done", "job", t.id, "version", version, "spectra", sc.scored, "skipped", sc.skipped,
		"first_refusal", sc.firstErr, "elapsed", finished.Sub(started))
}

// rescoreProgress records a running re-scoring job's progress and counts,
// written at the end of a page (a few hundred spectra) and else at most
// every progressSaveInterval. As for training, the progress a client reads
// is the progress saved, so a crash never sets it back.
func (m *Manager) rescoreProgress(id string, p float64, pageEnd bool, scored, skipped int64) {
	p = progressShare * p
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[id]
	if j.Status != Running || p <= j.Progress || (!pageEnd && time.Since(j.savedAt) < progressSaveInterval) {
		return
	}
	spec := *j.Rescore
	spec.Spectra, spec.Skipped = scored, skipped
	j.Progress, j.Rescore = p, &spec
	if err := m.persist(j); err != nil {
		j.savedAt = time.Now()
		m.log.Error("cannot write job record", "job", id, "err", err)
	}
}

// scorer applies one model to logged spectra and writes its records.
type scorer struct {
	model   inference.Model
	version string

	scored, skipped int64
	firstErr        error

	// axis32 and axis are the last page's axis and its float64 copy:
	// records that share an axis share its slice.
	axis32 []float32
	axis   []float64
	spec   inference.Spectrum
}

// run pages through f's records, scores each, and reports progress after
// every record (the callback saves it at the end of each page, and else at
// most every progressSaveInterval): the share of the time range [first record or Since, Until)
// scored so far, since the pages come in time order and counting them
// first would cost a second pass.
func (s *scorer) run(ctx context.Context, log RescoreLog, f predlog.Filter, progress func(p float64, pageEnd bool)) error {
	var start time.Time
	for {
		page, err := log.Page(ctx, f)
		if err != nil {
			return err
		}
		if len(page.Records) > 0 && start.IsZero() {
			start = f.Since
			if start.IsZero() {
				start = page.Records[0].Time
			}
		}
		for i := range page.Records {
			rec := &page.Records[i]
			if err := s.score(ctx, log, rec); err != nil {
				return err
			}
			progress(timeShare(start, f.Until, rec.Time), i == len(page.Records)-1)
		}
		if page.Next == "" {
			return nil
		}
		f.Cursor = page.Next
	}
}

// timeShare is where at lies in [start, end), from 0 to 1.
func timeShare(start, end, at time.Time) float64 {
	span := end.Sub(start)
	if span <= 0 {
		return 0
	}
	return min(1, max(0, float64(at.Sub(start))/float64(span)))
}

// score predicts one logged spectrum and writes the rescore record: the
// original's PredictionID, time and scan context, the model's figures.
func (s *scorer) score(ctx context.Context, log RescoreLog, orig *predlog.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.setSpectrum(orig)
	var p inference.Prediction
	if err := s.model.Predict(&s.spec, &p); err != nil {
		s.skipped++
		if s.firstErr == nil {
			s.firstErr = fmt.Errorf("prediction %s: %w", orig.PredictionID, err)
		}
		return nil
	}
	rec := &predlog.Record{
		PredictionID: orig.PredictionID, Time: orig.Time, ModelVersion: s.version, Role: predlog.RoleRescore,
		ScanContext: orig.ScanContext,
	}
	rec.SetPrediction(&p)
	if err := log.RecordWait(ctx, rec); err != nil {
		return err
	}
	s.scored++
	return nil
}

// setSpectrum makes s.spec the float64 form of orig's logged spectrum,
// converting the axis only when it changed.
func (s *scorer) setSpectrum(orig *predlog.Record) {
	if !sameSlice(s.axis32, orig.Wavenumbers) {
		s.axis32 = orig.Wavenumbers
		s.axis = widen(s.axis, orig.Wavenumbers)
	}
	s.spec.Wavenumbers = s.axis
	s.spec.Intensities = widen(s.spec.Intensities, orig.Spectrum)
}

func sameSlice(a, b []float32) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// widen converts x to float64 into dst's storage when it is large enough.
// The model does not keep the spectrum past Predict, so dst is reused.
func widen(dst []float64, x []float32) []float64 {
	if cap(dst) < len(x) {
		dst = make([]float64, len(x))
	}
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = float64(v)
	}
	return dst
}

// interruptQueuedRescore records a re-scoring job still queued when Close
// ran as failed (INTERRUPTED): its model lives in this process only.
func (m *Manager) interruptQueuedRescore(t *task) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[t.id]
	now := m.opts.Now()
	j.Status, j.FinishedAt = Failed, &now
	if j.StartedAt == nil {
		j.StartedAt = &now
	}
	j.Error = &Failure{Code: m.opts.Classify(ErrInterrupted),
		Message: "the server shut down while this re-scoring job was queued; post the re-scoring again"}
	m.persistOrKeep(j)
}
