// Package jobs runs training jobs one at a time behind a bounded queue and
// keeps every job's record on disk, so that GET /training/{id} answers
// across restarts.
//
// Life of a job: Submit records it as queued and returns at once; the single
// worker marks it running, trains (progress follows the trainer's fold x
// component steps), hands the result to Publish (which writes the model into
// the registry as staged) and marks it done, or failed with a code. A record
// is rewritten atomically (temp file, fsync, rename) at every status change.
// When the process dies, records of queued or running jobs are left behind;
// New turns them into failed with code INTERRUPTED.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"ramanserve/inference"
	"ramanserve/inference/registry"
	"ramanserve/trainer"
)

// Status is a job's state.
type Status string

// Job states, in the order a job goes through them.
const (
	Queued  Status = "queued"
	Running Status = "running"
	Done    Status = "done"
	Failed  Status = "failed"
)

// Meta is the operator's description of a training upload.
type Meta struct {
	Operator      string   `json:"operator"`
	SourceBatches []string `json:"source_batches,omitempty"`
	Notes         string   `json:"notes,omitempty"`
}

// Result is what a done job produced.
type Result struct {
	NewVersion   string              `json:"new_version"`
	ArtifactPath string              `json:"artifact_path"`
	RMSE         inference.Breakdown `json:"rmse"`
	R2           inference.Breakdown `json:"r2"`
	Components   int                 `json:"components"`
}

// Failure is why a job failed: a contract code and a message.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Job is a job's record, as stored and as reported.
type Job struct {
	ID               string     `json:"job_id"`
	Status           Status     `json:"status"`
	Progress         float64    `json:"progress"`
	Samples          int        `json:"samples"`
	EstimatedSeconds int        `json:"estimated_duration_seconds"`
	SubmittedAt      time.Time  `json:"submitted_at"`
	StartedAt        *time.Time `json:"started_at,omitempty"`
	FinishedAt       *time.Time `json:"finished_at,omitempty"`
	Meta             Meta       `json:"meta"`
	Result           *Result    `json:"result,omitempty"`
	Error            *Failure   `json:"error,omitempty"`

	savedAt time.Time // when the record was last written (not stored)
}

// Elapsed is the running time so far (or in total, once finished); zero
// while queued.
func (j *Job) Elapsed(now time.Time) time.Duration {
	switch {
	case j.StartedAt == nil:
		return 0
	case j.FinishedAt != nil:
		return j.FinishedAt.Sub(*j.StartedAt)
	default:
		return now.Sub(*j.StartedAt)
	}
}

// PublishFunc stores a trained model (as staged, in the registry) and
// returns its version and artifact path.
type PublishFunc func(ctx context.Context, res *trainer.Result, meta Meta) (version, artifactPath string, err error)

// Options configure a Manager.
type Options struct {
	Dir       string // where job records live; created if missing
	QueueSize int    // jobs that may wait behind the running one; default 4
	Publish   PublishFunc
	// Classify maps a training error to its contract code (the server
	// passes its single error mapping); nil uses a generic mapping.
	Classify func(error) string
	Train    trainer.Options
	Logger   *slog.Logger
	Now      func() time.Time
}

// Manager owns the queue, the worker and the records.
type Manager struct {
	opts  Options
	log   *slog.Logger
	queue chan *task

	mu   sync.Mutex
	jobs map[string]*Job

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type task struct {
	id string
	ds *trainer.Dataset
}

// New opens the record directory, marks jobs a previous process left
// queued or running as failed (INTERRUPTED), and starts the worker.
func New(opts Options) (*Manager, error) {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Publish == nil {
		return nil, errors.New("jobs: Publish is required")
	}
	if opts.Classify == nil {
		opts.Classify = defaultClassify
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	m := &Manager{opts: opts, log: opts.Logger, queue: make(chan *task, opts.QueueSize), jobs: map[string]*Job{}}
	if err := m.recover(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go m.work(ctx)
	return m, nil
}

func defaultClassify(err error) string {
	switch {
	case errors.Is(err, trainer.ErrTrainingDiverged):
		return "TRAINING_DIVERGED"
	case errors.Is(err, trainer.ErrInterrupted), errors.Is(err, context.Canceled):
		return "INTERRUPTED"
	}
	return "INTERNAL_ERROR"
}

// recover loads every record and fails the unfinished ones.
func (m *Manager) recover() error {
	entries, err := os.ReadDir(m.opts.Dir)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if registry.IsTempName(name) { // only our own temp names: never delete an operator's file
			os.Remove(filepath.Join(m.opts.Dir, name))
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.opts.Dir, name))
		if err != nil {
			return fmt.Errorf("jobs: read %s: %w", name, err)
		}
		var j Job
		if err := json.Unmarshal(b, &j); err != nil || j.ID == "" {
			m.log.Warn("skipping unreadable job record", "file", name, "err", err)
			continue
		}
		if j.Status == Queued || j.Status == Running {
			state := string(j.Status)
			now := m.opts.Now()
			j.Status = Failed
			j.FinishedAt = &now
			if j.StartedAt == nil {
				j.StartedAt = &now
			}
			// Progress stays where the record last saved it: it never
			// goes back, even across a restart.
			j.Error = &Failure{Code: m.opts.Classify(trainer.ErrInterrupted),
				Message: "the server stopped while this job was " + state + "; upload the data again"}
			if err := m.persist(&j); err != nil {
				return err
			}
			m.log.Info("training job interrupted by a restart", "job", j.ID)
		}
		m.jobs[j.ID] = &j
	}
	return nil
}

// estimateSeconds is a rough duration for the 202 reply: the fits cost
// about n x p x components x (folds + 1) multiply-adds, at the rate measured
// on a 2-core machine (2000 x 2048 x 20 x 11 in about 2.5 s).
func (m *Manager) estimateSeconds(ds *trainer.Dataset) int {
	folds := m.opts.Train.Folds
	if folds == 0 {
		folds = trainer.DefaultFolds
	}
	work := float64(ds.Len()) * float64(ds.Features()) * 20 * float64(folds+1)
	return int(math.Max(1, math.Ceil(work*2.8e-9)))
}

// Submit queues a training on ds. It fails with trainer.ErrQueueFull when
// QueueSize jobs are already waiting.
func (m *Manager) Submit(ctx context.Context, ds *trainer.Dataset, meta Meta) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, err
	}
	j := &Job{ID: uuid.NewString(), Status: Queued, Samples: ds.Len(), SubmittedAt: m.opts.Now(),
		EstimatedSeconds: m.estimateSeconds(ds), Meta: meta}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.queue) >= cap(m.queue) {
		return Job{}, fmt.Errorf("%w: %d jobs are waiting", trainer.ErrQueueFull, cap(m.queue))
	}
	if err := m.persist(j); err != nil {
		return Job{}, err
	}
	m.jobs[j.ID] = j
	m.queue <- &task{id: j.ID, ds: ds}
	return *j, nil
}

// Get returns a copy of a job's record.
func (m *Manager) Get(ctx context.Context, id string) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("%w: %q", trainer.ErrJobNotFound, id)
	}
	return *j, nil
}

// List returns every job, newest first.
func (m *Manager) List() []Job {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		out = append(out, *j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].SubmittedAt.After(out[b].SubmittedAt) })
	return out
}

// Close stops the worker: a running training is cancelled and its job
// recorded as failed (INTERRUPTED); queued jobs stay queued on disk and are
// failed as interrupted by the next start.
func (m *Manager) Close(ctx context.Context) error {
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) work(ctx context.Context) {
	defer m.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-m.queue:
			m.run(ctx, t)
		}
	}
}

// progressShare is the part of the progress bar the fits take; the rest is
// publishing the model, so 1.0 means done.
const progressShare = 0.99

func (m *Manager) run(ctx context.Context, t *task) {
	now := m.opts.Now()
	m.update(t.id, func(j *Job) { j.Status, j.StartedAt = Running, &now })
	m.log.Info("training started", "job", t.id, "samples", t.ds.Len())

	res, err := m.train(ctx, t)
	var version, path string
	if err == nil {
		version, path, err = m.opts.Publish(ctx, res, m.meta(t.id))
	}
	finished := m.opts.Now()
	if err != nil {
		code := m.opts.Classify(err)
		m.update(t.id, func(j *Job) {
			j.Status, j.FinishedAt, j.Error = Failed, &finished, &Failure{Code: code, Message: err.Error()}
		})
		m.log.Warn("training failed", "job", t.id, "code", code, "err", err)
		return
	}
	m.update(t.id, func(j *Job) {
		j.Status, j.FinishedAt, j.Progress = Done, &finished, 1
		j.Result = &Result{NewVersion: version, ArtifactPath: path, RMSE: res.Params.Meta.RMSE, R2: res.Params.Meta.R2, Components: res.Components}
	})
	m.log.Info("training done", "job", t.id, "version", version, "components", res.Components, "elapsed", finished.Sub(now))
}

// train runs the fit, turning a panic into an error so that one bad data
// set cannot take the server down.
func (m *Manager) train(ctx context.Context, t *task) (res *trainer.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("training panicked: %v", r)
		}
	}()
	return trainer.Train(ctx, t.ds, m.opts.Train, func(done, total int) {
		if total <= 0 {
			return
		}
		p := progressShare * float64(done) / float64(total)
		m.mu.Lock()
		defer m.mu.Unlock()
		j := m.jobs[t.id]
		// Progress is reported as it is saved, every progressSaveInterval: a
		// job that a crash interrupts then reads failed at the very
		// progress a client last saw, never less.
		if p <= j.Progress || time.Since(j.savedAt) < progressSaveInterval {
			return
		}
		j.Progress = p
		if err := m.persist(j); err != nil {
			m.log.Error("cannot write job record", "job", t.id, "err", err)
		}
	})
}

// progressSaveInterval is how often a running job's progress is written.
const progressSaveInterval = 250 * time.Millisecond

func (m *Manager) meta(id string) Meta {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[id].Meta
}

// update changes a job under the lock and rewrites its record.
func (m *Manager) update(id string, f func(*Job)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[id]
	f(j)
	if err := m.persist(j); err != nil {
		m.log.Error("cannot write job record", "job", id, "err", err)
	}
}

func (m *Manager) persist(j *Job) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	if err := registry.WriteFileAtomic(filepath.Join(m.opts.Dir, j.ID+".json"), b); err != nil {
		return fmt.Errorf("jobs: write record: %w", err)
	}
	j.savedAt = time.Now()
	return nil
}
