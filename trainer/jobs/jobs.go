// Package jobs runs training jobs one at a time behind a bounded queue and
// keeps every job's record in a Store, so that GET /training/{id} answers
// across restarts.
//
// Life of a job: Submit records it as queued and returns at once; the single
// worker marks it running, trains (progress follows the trainer's fold x
// component steps), hands the result to Publish (which writes the model into
// the registry as staged) and marks it done, or failed with a code. A record
// is saved whole (Store.Save) at every status change. Close saves the data
// set of every queued job in the UploadSpool, and New queues those jobs
// again. When the process dies, records of running jobs, and of queued
// jobs without a saved data set, are left behind; New turns them into
// failed with code INTERRUPTED.
//
// The same queue and worker run re-scoring jobs (kind rescore, see
// rescore.go): a model applied to the prediction log's spectra.
//
// In a fleet (Options.Fleet, lease.go) there is no process-local queue
// for training: jobs wait in a shared LeaseStore, and each replica's
// workers claim them under a lease that another replica takes over when
// its runner dies.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"runtime"

	"github.com/google/uuid"

	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/membudget"
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
	Operator string `json:"operator"`
	// AuthenticatedAs is the name of the bearer token that uploaded the
	// job (the server's -auth-tokens); "" when authentication was off.
	// Kept beside the self-declared Operator so the two can be compared.
	AuthenticatedAs string   `json:"authenticated_as,omitempty"`
	SourceBatches   []string `json:"source_batches,omitempty"`
	Notes           string   `json:"notes,omitempty"`
	// CSVSHA256 is the hex SHA-256 of the CSV part exactly as uploaded.
	CSVSHA256 string `json:"csv_sha256,omitempty"`
	// Options are the upload's training options; kept in the record so
	// that a job queued across a restart trains with them.
	Options TrainingOptions `json:"options"`
	// Annotations are the console's own data (TrainingMeta.annotations),
	// compact JSON kept and echoed, never read; nil when none.
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// Lineage is what Publish records with a model: the upload's Meta, the
// job that trained it, its row count and the rows that entered the model
// (Rows less Meta.Options.ExcludeScanIDs: the trained model's own
// TrainedSamples).
type Lineage struct {
	Meta
	JobID    string
	Rows     int
	RowsUsed int
}

// Result is what a done job produced. Its size is bounded whatever the
// upload: the CV curve has at most 64 points (the contract's cap on
// components), Outliers at most MaxOutliers entries.
type Result struct {
	NewVersion   string              `json:"new_version"`
	ArtifactPath string              `json:"artifact_path"`
	RMSE         inference.Breakdown `json:"rmse"`
	R2           inference.Breakdown `json:"r2"`
	Components   int                 `json:"components"`
	Review
}

// Failure is why a job failed: a contract code and a message.
type Failure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Job is a job's record, as stored and as reported.
type Job struct {
	ID string `json:"job_id"`
	// Kind is training or rescore; "" in records written before
	// re-scoring existed, which are training jobs (KindOf).
	Kind             Kind       `json:"kind,omitempty"`
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
	// Rescore is what a re-scoring job scores and scored; nil for
	// training jobs.
	Rescore *RescoreSpec `json:"rescore,omitempty"`
	// Attempts counts the runs a fleet started of this job (LeaseStore
	// Claim): 2 or more means a runner died holding it and another
	// replica ran it again. 0 for the embedded queue, which never retries.
	Attempts int `json:"attempts,omitempty"`

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
type PublishFunc func(ctx context.Context, res *trainer.Result, lineage Lineage) (version, artifactPath string, err error)

// Options configure a Manager.
type Options struct {
	QueueSize int // jobs that may wait behind the running one; default 4
	Publish   PublishFunc
	// Classify maps a training error to its contract code (the server
	// passes its single error mapping); nil uses a generic mapping.
	Classify func(error) string
	Train    trainer.Options
	Logger   *slog.Logger
	Now      func() time.Time
	// Budget is charged for every upload being parsed (through its
	// Reservation) and every data set of a queued or running job, and for
	// the parallel fits of the running one; nil means no budget.
	Budget *membudget.Budget
	// RetryInterval is how often records that could not be written are
	// tried again; default 5 s.
	RetryInterval time.Duration
	// Fleet, when set, makes the Manager one replica of a fleet sharing
	// its Store (a LeaseStore) and UploadSpool: see lease.go. Without it
	// the Manager runs its own queue, one job at a time.
	Fleet *FleetOptions
	// Workers is how many training jobs a fleet replica runs at once;
	// 0 means it never trains (it only accepts jobs and answers about
	// them). The embedded queue always runs one.
	Workers int
}

// Manager owns the queue, the worker and the records.
type Manager struct {
	opts    Options
	records Store
	uploads UploadSpool
	log     *slog.Logger
	wake    chan struct{} // a job was queued (capacity 1)

	mu   sync.Mutex
	jobs map[string]*Job
	// unsaved holds the jobs whose last change the store refused; they are
	// written by retryWrites or with the next record that is written.
	unsaved map[string]*Job
	pending []*task // queued jobs, oldest first
	// slots counts reservations, queued jobs and the running job; at most
	// QueueSize + 1 (the running job's slot and QueueSize waiting ones).
	slots   int
	running bool  // the worker holds a job taken off pending (one of the slots)
	current *task // that job, nil when none
	closing bool  // Close began: no job starts any more

	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Fleet mode (lease.go); nil outside a fleet.
	leases LeaseStore
	// held are the jobs whose lease this replica holds (under mu): the
	// training jobs its workers claimed, and its re-scoring jobs.
	held      map[string]*task
	claimWake chan struct{} // a job was accepted here (capacity 1)
}

type task struct {
	id      string
	ds      *trainer.Dataset
	opts    trainer.Options // the manager's options with the job's own
	charged int64           // bytes of the budget the job holds
	// rescore is set for a re-scoring job (ds is then nil).
	rescore *rescoreTask

	// Set when the worker takes the task (under m.mu):
	cancel     context.CancelFunc // stops the training (Cancel)
	publishing bool               // the job can no longer be cancelled: its model is being staged
	// ended is closed once the job left this process's queue and worker
	// (it ended, Cancel took it off the queue, or Close saved it) and its
	// slot and memory are given back.
	ended chan struct{}

	// In a fleet (under m.mu): owner names this run's lease ("" outside a
	// fleet), renewed is when the lease was last renewed, and lost is set
	// once the lease is no longer this run's: it then writes and stages
	// nothing.
	owner   string
	renewed time.Time
	lost    bool
}

// Reservation is an upload's claim on a queue slot, taken before its body
// is read. It charges the memory budget for the data set being parsed (it
// is the trainer.Charger of that data set), and becomes the job's slot and
// charge on SubmitReserved; Release gives both back if the upload fails.
// A Reservation is used by one goroutine.
type Reservation struct {
	m       *Manager
	charged int64
	done    bool // released or submitted
}

// TryAcquire charges n bytes of the budget to the upload.
func (r *Reservation) TryAcquire(n int64) bool {
	if r.done {
		return false
	}
	if b := r.m.opts.Budget; b != nil && !b.TryAcquire(n) {
		return false
	}
	r.charged += n
	return true
}

// Limit is the size of the memory budget, 0 when there is none; error
// messages name it.
func (r *Reservation) Limit() int64 {
	if b := r.m.opts.Budget; b != nil {
		return b.Limit()
	}
	return 0
}

// Release gives the slot and every charged byte back. It does nothing
// after SubmitReserved or a first Release, so callers defer it.
func (r *Reservation) Release() {
	if r.done {
		return
	}
	r.done = true
	r.m.release(r.charged)
	r.charged = 0
}

// releaseBytes gives charged bytes back to the budget.
func (m *Manager) releaseBytes(n int64) {
	if b := m.opts.Budget; b != nil && n > 0 {
		b.Release(n)
	}
}

// release frees one slot and charged bytes.
func (m *Manager) release(charged int64) {
	m.releaseBytes(charged)
	m.mu.Lock()
	m.slots--
	m.mu.Unlock()
}

// New loads the job records, queues again the jobs a previous process
// left queued whose data set it saved, marks the other jobs it left queued
// or running as failed (INTERRUPTED), and starts the worker. A record the
// store cannot read is skipped with a warning: it never stops the start.
func New(ctx context.Context, records Store, uploads UploadSpool, opts Options) (*Manager, error) {
	if records == nil || uploads == nil {
		return nil, errors.New("jobs: a record store and an upload spool are required")
	}
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
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = 5 * time.Second
	}
	m := &Manager{opts: opts, records: records, uploads: uploads, log: opts.Logger, wake: make(chan struct{}, 1),
		jobs: map[string]*Job{}, unsaved: map[string]*Job{}, claimWake: make(chan struct{}, 1)}
	if opts.Fleet != nil {
		fleet := *opts.Fleet
		m.opts.Fleet = &fleet
		if err := m.startFleet(ctx); err != nil {
			return nil, err
		}
		return m, nil
	}
	if err := m.recover(ctx); err != nil {
		m.releasePending()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(2)
	go m.work(ctx)
	go m.retryWrites(ctx)
	m.signal()
	return m, nil
}

// releasePending gives back the budget of re-queued jobs when New fails.
func (m *Manager) releasePending() {
	for _, t := range m.pending {
		m.releaseBytes(t.charged)
	}
	m.pending = nil
}

func defaultClassify(err error) string {
	switch {
	case errors.Is(err, trainer.ErrTrainingDiverged):
		return "TRAINING_DIVERGED"
	case errors.Is(err, ErrCancelled):
		return "CANCELLED"
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return "INTERRUPTED"
	}
	return "INTERNAL_ERROR"
}

// recover loads every record: a queued job whose spool reads back is
// queued again; running jobs, and queued jobs without a readable spool,
// are failed as INTERRUPTED.
func (m *Manager) recover(ctx context.Context) error {
	records, skipped, err := m.records.LoadAll(ctx)
	if err != nil {
		return fmt.Errorf("jobs: load the records: %w", err)
	}
	for _, err := range skipped {
		m.log.Warn("skipping unreadable job record", "err", err)
	}
	for _, j := range records {
		if _, dup := m.jobs[j.ID]; dup {
			m.log.Warn("skipping a second record of a job", "job", j.ID)
			continue
		}
		m.jobs[j.ID] = j
		switch {
		case j.KindOf() == KindRescore && (j.Status == Queued || j.Status == Running):
			// Its model was held in memory: post the re-scoring again.
			m.interrupt(j, "the server stopped while this re-scoring job was "+string(j.Status)+"; post the re-scoring again")
		case j.Status == Queued:
			if err := m.requeue(ctx, j); err != nil {
				m.interrupt(j, "the server stopped while this job was queued and "+err.Error()+"; upload the data again")
			}
		case j.Status == Running:
			m.interrupt(j, "the server stopped while this job was running; upload the data again")
		default:
			// A finished job's spool, if a crash left one, is ours to delete.
			m.removeSpool(j.ID)
		}
	}
	sort.Slice(m.pending, func(a, b int) bool {
		return m.jobs[m.pending[a].id].SubmittedAt.Before(m.jobs[m.pending[b].id].SubmittedAt)
	})
	return nil
}

// requeue reads a queued job's spool back, charging the budget, and puts
// the job back in the queue. Its error says why it could not.
func (m *Manager) requeue(ctx context.Context, j *Job) error {
	t, err := m.prepareTask(ctx, j)
	if err != nil {
		return err
	}
	m.pending = append(m.pending, t)
	m.slots++
	m.log.Info("training job queued again after a restart", "job", j.ID, "samples", t.ds.Len())
	return nil
}

// prepareTask reads a queued job's saved data set back, charging the
// budget, and checks its options: the job's work, ready to run. Its error
// says why it could not.
func (m *Manager) prepareTask(ctx context.Context, j *Job) (*task, error) {
	c := &Reservation{m: m}
	ds, err := m.loadSpool(ctx, j.ID, c)
	var mbe *trainer.MemoryBudgetError
	switch {
	case errors.Is(err, ErrNoUpload):
		return nil, errors.New("its data set was not saved")
	case errors.As(err, &mbe):
		m.releaseBytes(c.charged)
		return nil, fmt.Errorf("its saved data set does not fit the training memory budget (%d bytes)", c.Limit())
	case err != nil:
		m.releaseBytes(c.charged)
		return nil, fmt.Errorf("its saved data set could not be read (%v)", err)
	}
	opts, prepared, err := m.jobOptions(ds, j.Meta.Options)
	if err == nil {
		err = chargePrepared(c, ds, prepared)
	}
	if err != nil {
		m.releaseBytes(c.charged)
		return nil, fmt.Errorf("its options no longer apply (%v)", err)
	}
	return &task{id: j.ID, ds: ds, opts: opts, charged: c.charged, ended: make(chan struct{})}, nil
}

// interrupt records a job the previous process left unfinished as failed
// (INTERRUPTED) and deletes its spool.
func (m *Manager) interrupt(j *Job, msg string) {
	now := m.opts.Now()
	j.Status = Failed
	j.FinishedAt = &now
	if j.StartedAt == nil {
		j.StartedAt = &now
	}
	// Progress stays where the record last saved it: it never goes back,
	// even across a restart.
	j.Error = &Failure{Code: m.opts.Classify(ErrInterrupted), Message: msg}
	m.persistOrKeep(j)
	m.removeSpool(j.ID)
	m.log.Info("training job interrupted by a restart", "job", j.ID, "reason", msg)
}

// removeSpool deletes the spool of a job that ended: a file this package
// wrote under the job's own name.
func (m *Manager) removeSpool(id string) {
	ctx, cancel := storeContext()
	defer cancel()
	if err := m.uploads.Remove(ctx, id); err != nil {
		m.log.Warn("cannot delete a finished job's saved data set", "job", id, "err", err)
	}
}

// estimateSeconds is a rough duration for the 202 reply: the fits cost
// about n x p x components x (folds + 1) multiply-adds, at the rate measured
// on a 2-core machine (2000 x 2048 x 20 x 11 in about 2.5 s).
func estimateSeconds(ds *trainer.Dataset, opts trainer.Options) int {
	folds := opts.Folds
	if folds == 0 {
		folds = trainer.DefaultFolds
	}
	components := trainer.DefaultMaxComponents
	switch {
	case opts.Components > 0:
		components = opts.Components
	case opts.MaxComponents > 0:
		components = opts.MaxComponents
	}
	work := float64(ds.Len()) * float64(ds.Features()) * float64(components) * float64(folds+1)
	return int(math.Max(1, math.Ceil(work*2.8e-9)))
}

// Reserve takes a queue slot for an upload before its body is read. It
// fails at once with ErrQueueFull when every slot is taken (by
// the running job, queued jobs and other uploads), and with
// ErrInterrupted once Close began.
func (m *Manager) Reserve(ctx context.Context) (*Reservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil, fmt.Errorf("%w: the server is shutting down", ErrInterrupted)
	}
	if m.slots >= m.opts.QueueSize+1 {
		return nil, fmt.Errorf("%w: %s", ErrQueueFull, m.slotHoldersLocked())
	}
	m.slots++
	return &Reservation{m: m}, nil
}

// slotHoldersLocked says what holds the slots, for the 429 message: a
// full queue of uploads still arriving is not "jobs waiting". Called
// with m.mu held.
func (m *Manager) slotHoldersLocked() string {
	running := 0
	if m.running {
		running = 1
	}
	queued := len(m.pending)
	uploads := m.slots - running - queued
	return fmt.Sprintf("all %d places are taken: %s, %s and %s (-training-queue %d waiting behind the running one)",
		m.opts.QueueSize+1, count(running, "running job", "running jobs"), count(queued, "queued job", "queued jobs"),
		count(uploads, "upload in progress", "uploads in progress"), m.opts.QueueSize)
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Submit queues a training on ds (whose memory, if charged, is not the
// manager's to release). It fails with ErrQueueFull when every
// slot is taken. Uploads use Reserve and SubmitReserved instead.
func (m *Manager) Submit(ctx context.Context, ds *trainer.Dataset, meta Meta) (Job, error) {
	r, err := m.Reserve(ctx)
	if err != nil {
		return Job{}, err
	}
	defer r.Release()
	return m.SubmitReserved(ctx, r, ds, meta)
}

// SubmitReserved queues a training on ds in r's slot. The job takes over
// r's slot and charged bytes (released when it ends); on error r is left
// to its owner's Release.
func (m *Manager) SubmitReserved(ctx context.Context, r *Reservation, ds *trainer.Dataset, meta Meta) (Job, error) {
	return m.SubmitReservedAs(ctx, r, ds, meta, uuid.NewString())
}

// SubmitReservedAs is SubmitReserved with the job's id chosen by the
// caller (one an idempotency key was claimed for): a fresh, unique one.
func (m *Manager) SubmitReservedAs(ctx context.Context, r *Reservation, ds *trainer.Dataset, meta Meta, id string) (Job, error) {
	if err := ctx.Err(); err != nil {
		return Job{}, err
	}
	if r.done || r.m != m {
		return Job{}, errors.New("jobs: reservation already used")
	}
	opts, prepared, err := m.jobOptions(ds, meta.Options)
	if err != nil {
		return Job{}, err
	}
	if err := chargePrepared(r, ds, prepared); err != nil {
		return Job{}, err
	}
	j := &Job{ID: id, Kind: KindTraining, Status: Queued, Samples: ds.Len(), SubmittedAt: m.opts.Now(),
		EstimatedSeconds: estimateSeconds(ds, opts), Meta: meta}
	if m.leases != nil {
		return m.submitShared(ctx, r, ds, j)
	}
	return m.enqueue(r, j, &task{id: j.ID, ds: ds, opts: opts, charged: r.charged})
}

// enqueue records j as queued in the store and hands t, its work, to the
// worker; r's slot passes to the job. It returns a copy of j taken before
// the worker can change it.
func (m *Manager) enqueue(r *Reservation, j *Job, t *task) (Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return Job{}, fmt.Errorf("%w: the server is shutting down", ErrInterrupted)
	}
	if m.leases != nil {
		// A fleet replica runs this job from its memory: it holds the
		// job's lease from the start, so that no other replica claims it.
		t.owner, t.renewed = m.newOwner(), time.Now()
		ctx, cancel := storeContext()
		defer cancel()
		if err := m.leases.Hold(ctx, j, t.owner, m.opts.Fleet.Lease); err != nil {
			return Job{}, fmt.Errorf("jobs: write record: %w", err)
		}
		j.savedAt = time.Now()
		m.held[j.ID] = t
	} else if err := m.persist(j); err != nil {
		return Job{}, err
	}
	r.done = true
	m.jobs[j.ID] = j
	t.ended = make(chan struct{})
	m.pending = append(m.pending, t)
	m.signal()
	return *j, nil
}

// signal wakes the worker.
func (m *Manager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Get returns a copy of a job's record.
func (m *Manager) Get(ctx context.Context, id string) (Job, error) {
	if m.leases != nil {
		return m.getShared(ctx, id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok {
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	return *j, nil
}

// Wait waits until job id left this process's queue and worker, and
// returns its record then: done or failed, or still queued when Close
// took it off the queue to save it for the next start. It returns at once
// for a job that already ended, and ctx's error if ctx ends first.
func (m *Manager) Wait(ctx context.Context, id string) (Job, error) {
	if m.leases != nil {
		return m.waitShared(ctx, id)
	}
	m.mu.Lock()
	if _, ok := m.jobs[id]; !ok {
		m.mu.Unlock()
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	var ended chan struct{}
	if t := m.current; t != nil && t.id == id {
		ended = t.ended
	}
	for _, t := range m.pending {
		if t.id == id {
			ended = t.ended
		}
	}
	m.mu.Unlock()
	if ended != nil {
		select {
		case <-ended:
		case <-ctx.Done():
			return Job{}, ctx.Err()
		}
	}
	return m.Get(ctx, id)
}

// CountByStatus counts the jobs this manager knows of (records read at
// start-up included) by status. It looks at every job once, under the
// manager's lock; a metrics scrape calls it.
func (m *Manager) CountByStatus() map[Status]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	counts := make(map[Status]int, 4)
	for _, j := range m.jobs {
		counts[j.Status]++
	}
	return counts
}

// Close stops the worker: no queued job starts any more, a running
// training is cancelled and its job recorded as failed (INTERRUPTED), and
// every queued job's data set is saved in the UploadSpool so that the next
// New queues it again; its record stays queued. Records that could not be
// written are tried once more.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.mu.Lock()
	pending := m.pending
	m.pending = nil
	m.mu.Unlock()
	var errs []error
	for _, t := range pending {
		if t.rescore != nil {
			m.interruptQueuedRescore(t)
			close(t.ended)
			continue
		}
		if err := m.saveSpool(ctx, t.id, t.ds); err != nil {
			// The next start fails the job, saying its data was not saved.
			errs = append(errs, fmt.Errorf("save queued job %s: %w", t.id, err))
		} else {
			m.log.Info("queued training job saved for the next start", "job", t.id)
		}
		m.releaseBytes(t.charged)
		close(t.ended)
	}
	m.flushDirty()
	return errors.Join(errs...)
}

func (m *Manager) work(ctx context.Context) {
	defer m.wg.Done()
	for {
		t, jobCtx := m.next(ctx)
		if t == nil {
			select {
			case <-ctx.Done():
				return
			case <-m.wake:
				continue
			}
		}
		if t.rescore != nil {
			m.runRescore(ctx, jobCtx, t)
		} else {
			m.run(ctx, jobCtx, t)
		}
		m.finish(t)
	}
}

// next takes the oldest queued job and marks it running, or returns nil
// when there is none or Close began (checked under the lock Close sets
// closing with, so no job starts after it). The job's own context, a
// child of ctx, is what Cancel stops.
func (m *Manager) next(ctx context.Context) (*task, context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing || len(m.pending) == 0 {
		return nil, nil
	}
	t := m.pending[0]
	m.pending[0] = nil
	m.pending = m.pending[1:]
	m.running, m.current = true, t
	now := m.opts.Now()
	j := m.jobs[t.id]
	j.Status, j.StartedAt = Running, &now
	m.persistOrKeep(j)
	jobCtx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	return t, jobCtx
}

// finish releases a job's slot and memory and deletes its spool, if a
// restart left one, once the job ended.
func (m *Manager) finish(t *task) {
	m.mu.Lock()
	ended := m.jobs[t.id].Status != Queued && m.jobs[t.id].Status != Running
	m.mu.Unlock()
	if ended {
		m.removeSpool(t.id)
	}
	m.releaseBytes(t.charged)
	m.mu.Lock()
	m.slots--
	m.running, m.current = false, nil
	delete(m.held, t.id)
	m.mu.Unlock()
	t.ds = nil
	close(t.ended)
}

// progressShare is the part of the progress bar the fits take; the rest is
// publishing the model, so 1.0 means done.
const progressShare = 0.99

// run trains t under its own context (Cancel stops it), then stages the
// model unless the job was cancelled. Which of the two wins is decided
// under m.mu (see commitToPublish): a cancelled job stages nothing, and a
// job whose model is being staged can no longer be cancelled.
func (m *Manager) run(ctx, jobCtx context.Context, t *task) {
	defer t.cancel()
	started := m.opts.Now()
	workers, extra := m.workers(t.ds, t.opts)
	defer m.releaseBytes(extra)
	m.log.Info("training started", "job", t.id, "samples", t.ds.Len(), "workers", workers)

	res, err := m.train(jobCtx, t, workers)
	var version, path string
	if err == nil {
		var lineage Lineage
		if lineage, err = m.commitToPublish(t, res.Params.Meta.TrainedSamples); err == nil {
			err = m.confirmLease(ctx, t)
		}
		if err == nil {
			// The manager's context, not the job's: Cancel no longer
			// applies, and a half-staged model must not be cut short.
			version, path, err = m.opts.Publish(ctx, res, lineage)
		}
	}
	finished := m.opts.Now()
	if err != nil {
		m.fail(ctx, t, err, finished)
		return
	}
	m.update(t.id, func(j *Job) {
		j.Status, j.FinishedAt, j.Progress = Done, &finished, 1
		j.Result = &Result{NewVersion: version, ArtifactPath: path, RMSE: res.Params.Meta.RMSE, R2: res.Params.Meta.R2, Components: res.Components,
			Review: newReview(res.Params)}
	})
	m.log.Info("training done", "job", t.id, "version", version, "components", res.Components, "elapsed", finished.Sub(started))
}

// commitToPublish decides, under m.mu, that t's model, trained on
// rowsUsed rows, is staged: from here on Cancel answers JOB_FINISHED. A
// job Cancel already ended stages nothing (ErrCancelled).
func (m *Manager) commitToPublish(t *task, rowsUsed int) (Lineage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[t.id]
	if t.lost {
		return Lineage{}, ErrLeaseLost
	}
	if j.Status != Running {
		return Lineage{}, ErrCancelled
	}
	t.publishing = true
	return Lineage{Meta: j.Meta, JobID: j.ID, Rows: j.Samples, RowsUsed: rowsUsed}, nil
}

// fail records why a running job failed, unless Cancel already recorded
// it as cancelled.
func (m *Manager) fail(ctx context.Context, t *task, err error, finished time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.lost {
		// The job is another runner's, or was cancelled: its record is
		// theirs to write.
		return
	}
	if ctx.Err() != nil && t.owner != "" && t.rescore == nil {
		// A fleet replica shutting down: another replica runs the job.
		m.giveBackLocked(t)
		return
	}
	failure := Failure{Code: m.opts.Classify(err), Message: err.Error()}
	if ctx.Err() != nil {
		// Close cancelled the job: that, not the error it surfaced
		// as (context canceled, mid-fold), is why it failed.
		again := "upload the data again"
		if t.rescore != nil {
			again = "post the re-scoring again"
		}
		failure = Failure{Code: m.opts.Classify(ErrInterrupted),
			Message: "the server shut down while this job was running; " + again}
	}
	j := m.jobs[t.id]
	if j.Status != Running {
		return // cancelled: recorded by Cancel
	}
	j.Status, j.FinishedAt, j.Error = Failed, &finished, &failure
	m.persistOrKeep(j)
	m.log.Warn("training failed", "job", t.id, "code", failure.Code, "err", err)
}

// Cancel ends a queued or running job as failed with code CANCELLED and
// returns its record. The record is written (or kept in memory and
// retried, like every record) before Cancel returns. A queued job leaves
// the queue at once, giving back its place, its memory and its saved data
// set. A running job's training is stopped, and Cancel waits (until ctx
// ends) for the worker to give back its place and memory, so that the
// place is free when the caller hears of it. Nothing is staged for a
// cancelled job. A job that ended, or whose model is already being staged,
// is ErrJobFinished (the latter once staging ended); an unknown id
// is ErrJobNotFound.
func (m *Manager) Cancel(ctx context.Context, id string) (Job, error) {
	if m.leases != nil {
		return m.cancelShared(ctx, id)
	}
	return m.cancelLocal(ctx, id)
}

// cancelLocal cancels a job of this process's own queue and worker.
func (m *Manager) cancelLocal(ctx context.Context, id string) (Job, error) {
	m.mu.Lock()
	j, ok := m.jobs[id]
	if !ok {
		m.mu.Unlock()
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	if t := m.current; t != nil && t.id == id {
		return m.cancelRunning(ctx, t, j)
	}
	if j.Status != Queued {
		defer m.mu.Unlock()
		return Job{}, fmt.Errorf("%w: job %s is %s", ErrJobFinished, id, j.Status)
	}
	var t *task
	for i, p := range m.pending {
		if p.id == id {
			t = p
			m.pending = append(m.pending[:i], m.pending[i+1:]...)
			break
		}
	}
	if t == nil {
		// Queued but neither waiting nor running: Close took it to
		// save for the next start.
		defer m.mu.Unlock()
		return Job{}, fmt.Errorf("%w: job %s is being saved for the next start", ErrInterrupted, id)
	}
	m.recordCancelled(j)
	m.slots--
	delete(m.held, id)
	out := *j
	m.mu.Unlock()
	m.releaseBytes(t.charged)
	t.ds = nil
	m.removeSpool(id)
	close(t.ended)
	m.log.Info("queued training job cancelled", "job", id)
	return out, nil
}

// cancelRunning cancels the worker's job t (record j). Called with m.mu
// held; it releases it.
func (m *Manager) cancelRunning(ctx context.Context, t *task, j *Job) (Job, error) {
	if t.publishing || j.Status != Running {
		m.mu.Unlock()
		// The job is staging its model: its end is moments away, and it
		// is done (or failed), not cancelled.
		select {
		case <-t.ended:
		case <-ctx.Done():
			return Job{}, ctx.Err()
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		return Job{}, fmt.Errorf("%w: job %s is %s", ErrJobFinished, j.ID, j.Status)
	}
	m.recordCancelled(j)
	out := *j
	t.cancel()
	m.mu.Unlock()
	m.log.Info("running training job cancelled", "job", j.ID)
	select {
	case <-t.ended:
	case <-ctx.Done():
	}
	return out, nil
}

// recordCancelled marks j failed with code CANCELLED. Called with m.mu held.
func (m *Manager) recordCancelled(j *Job) {
	m.markCancelled(j, m.opts.Now())
	m.persistOrKeep(j)
}

// markCancelled changes j into a job cancelled at now.
func (m *Manager) markCancelled(j *Job, now time.Time) {
	j.Status, j.FinishedAt = Failed, &now
	if j.StartedAt == nil {
		j.StartedAt = &now
	}
	j.Error = &Failure{Code: m.opts.Classify(ErrCancelled), Message: "cancelled by POST /training/" + j.ID + "/cancel; nothing was staged"}
}

// workers picks how many fits run in parallel: as many as configured when
// the budget can hold their copies of the data set, fewer when it cannot,
// and at least one, which the job's own charge already covers. It returns
// the count and the extra bytes charged for it.
func (m *Manager) workers(ds *trainer.Dataset, opts trainer.Options) (int, int64) {
	want := opts.Workers
	if want <= 0 {
		want = runtime.GOMAXPROCS(0)
	}
	folds := opts.Folds
	if folds == 0 {
		folds = trainer.DefaultFolds
	}
	want = max(1, min(want, folds+1))
	if m.opts.Budget == nil {
		return want, 0
	}
	perWorker := int64(ds.Len()) * trainer.WorkerBytesPerRow(ds.Features(), ds.NumTargets())
	for w := want; w > 1; w-- {
		if extra := int64(w-1) * perWorker; m.opts.Budget.TryAcquire(extra) {
			return w, extra
		}
	}
	return 1, 0
}

// train runs the fit, turning a panic into an error so that one bad data
// set cannot take the server down.
func (m *Manager) train(ctx context.Context, t *task, workers int) (res *trainer.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("training panicked: %v", r)
		}
	}()
	opts := t.opts
	opts.Workers = workers
	return trainer.Train(ctx, t.ds, opts, func(done, total int) {
		if total <= 0 {
			return
		}
		p := progressShare * float64(done) / float64(total)
		m.mu.Lock()
		defer m.mu.Unlock()
		j := m.jobs[t.id]
		if j.Status != Running {
			return // cancelled
		}
		// Progress is reported as it is saved, every progressSaveInterval: a
		// job that a crash interrupts then reads failed at the very
		// progress a client last saw, never less.
		if p <= j.Progress || time.Since(j.savedAt) < progressSaveInterval {
			return
		}
		j.Progress = p
		if err := m.persist(j); err != nil {
			// Try again at the next interval, not at every step; the
			// status change that ends the job is kept and retried.
			j.savedAt = time.Now()
			m.log.Error("cannot write job record", "job", t.id, "err", err)
		}
	})
}

// progressSaveInterval is how often a running job's progress is written.
const progressSaveInterval = 250 * time.Millisecond

// update changes a job under the lock and rewrites its record. A record
// that cannot be written keeps the change in memory (Get reports it) and
// is written by retryWrites or with the next record that is written.
func (m *Manager) update(id string, f func(*Job)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[id]
	f(j)
	m.persistOrKeep(j)
}

// persistOrKeep writes j, or marks it to be written later. Called with
// m.mu held (or before the worker starts).
func (m *Manager) persistOrKeep(j *Job) {
	err := m.persist(j)
	if errors.Is(err, ErrLeaseLost) {
		// Not ours to write any more: the job's new runner (or its
		// canceller) wrote its record.
		m.log.Warn("job record not written: its lease was lost", "job", j.ID, "status", j.Status)
		return
	}
	if err != nil {
		m.unsaved[j.ID] = j
		m.log.Error("cannot write job record; keeping it in memory and retrying", "job", j.ID, "status", j.Status, "err", err)
		return
	}
	// The store takes writes again: write what it refused before.
	m.flushDirtyLocked()
}

// retryWrites writes records that could not be written, every
// RetryInterval, until ctx ends.
func (m *Manager) retryWrites(ctx context.Context) {
	defer m.wg.Done()
	tick := time.NewTicker(m.opts.RetryInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			m.flushDirty()
		}
	}
}

func (m *Manager) flushDirty() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.flushDirtyLocked()
}

func (m *Manager) flushDirtyLocked() {
	for _, j := range m.unsaved {
		err := m.persist(j)
		if errors.Is(err, ErrLeaseLost) {
			continue
		}
		if err != nil {
			return // the store still refuses; the next tick tries again
		}
		m.log.Info("job record written after an earlier failure", "job", j.ID, "status", j.Status)
	}
}

// persist saves j's record. Called with m.mu held.
func (m *Manager) persist(j *Job) error {
	ctx, cancel := storeContext()
	defer cancel()
	if err := m.save(ctx, j); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			delete(m.unsaved, j.ID)
		}
		return fmt.Errorf("jobs: write record: %w", err)
	}
	j.savedAt = time.Now()
	delete(m.unsaved, j.ID)
	return nil
}

// save writes j's record: under its lease when this fleet replica holds
// one (a lost lease stops the job here), plainly otherwise. Called with
// m.mu held.
func (m *Manager) save(ctx context.Context, j *Job) error {
	t := m.held[j.ID]
	if m.leases == nil || t == nil || t.owner == "" {
		return m.records.Save(ctx, j)
	}
	if t.lost {
		return ErrLeaseLost
	}
	err := m.leases.SaveLeased(ctx, j, t.owner)
	if errors.Is(err, ErrLeaseLost) {
		m.loseLocked(t)
	}
	return err
}
