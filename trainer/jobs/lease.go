package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"ramanserve/trainer"
)

// A fleet is several processes (replicas) sharing one LeaseStore and one
// UploadSpool. Its Managers keep no queue of their own: an accepted job is
// its saved data set plus a queued record in the shared store, and every
// replica with a free worker (Options.Workers) claims the oldest claimable
// job with a lease, renews the lease while it runs the job, and writes the
// job's records only while it holds the lease. A runner that dies stops
// renewing; once its lease ran out, another replica claims the job again
// (Job.Attempts counts the runs), reads its data set back from the spool
// and runs it from the start. Reads (Get, List, Wait) come from the shared
// store, so every replica answers them alike.
//
// Lease timings (FleetOptions): a lease of 20 s renewed every 20/3 s, and
// idle workers polling every 2 s, so a dead runner's job starts again on
// another replica within about 22 s.

// LeaseStore is a Store that a fleet of Managers shares: on top of Store
// it hands each unfinished job to one runner at a time. A lease's expiry
// is the store's clock, never a replica's. Implementations are safe for
// concurrent use by every replica; jobstoretest.RunLeaseStore is the
// contract.
type LeaseStore interface {
	Store
	// Claim takes the oldest claimable job (queued or running, whose
	// lease is not held: none was taken, or it ran out) for owner for
	// lease: it adds one to the job's Attempts, lets start change the
	// record (mark it running) and writes it, all at once, so that two
	// claimers never get the same job. It returns ErrNothingToClaim when
	// no job is claimable.
	Claim(ctx context.Context, owner string, lease time.Duration, start func(*Job)) (*Job, error)
	// Hold writes j, a new record, held by owner for lease: a job this
	// replica runs from its own memory (a re-scoring job), which no other
	// replica claims while the lease is renewed.
	Hold(ctx context.Context, j *Job, owner string, lease time.Duration) error
	// Renew extends owner's lease of job id to lease from now. It fails
	// with ErrLeaseLost when owner no longer holds the job (another runner
	// claimed it, or it was cancelled).
	Renew(ctx context.Context, id, owner string, lease time.Duration) error
	// SaveLeased writes j's record, like Save, only if owner holds its
	// lease (else ErrLeaseLost). The lease is kept while j is running and
	// dropped with any other status: a finished job is nobody's, and a
	// queued one is claimable at once.
	SaveLeased(ctx context.Context, j *Job, owner string) error
	// Load returns one record, or an error wrapping ErrJobNotFound.
	Load(ctx context.Context, id string) (*Job, error)
	// Update changes job id's record with change, reading and writing it
	// while no one else can (a claim, a renewal, another update), and
	// returns the record written. An error of change leaves the record as
	// it was and is returned. A record change leaves finished has its
	// lease dropped: its runner learns at its next Renew.
	Update(ctx context.Context, id string, change func(*Job) error) (*Job, error)
}

// Errors of a LeaseStore.
var (
	// ErrLeaseLost: the runner no longer holds the job's lease.
	ErrLeaseLost = errors.New("jobs: the job's lease was lost")
	// ErrNothingToClaim: no job is waiting for a runner.
	ErrNothingToClaim = errors.New("jobs: no job to claim")
)

// Finished reports whether s is a final status.
func Finished(s Status) bool { return s == Done || s == Failed }

// FleetOptions make a Manager one replica of a fleet (see LeaseStore);
// its Store must be a LeaseStore.
type FleetOptions struct {
	// Replica names this process in lease owners and logs.
	Replica string
	// Lease is how long a runner's claim lasts without renewal; it is
	// renewed every Lease/3. Default 20 s.
	Lease time.Duration
	// Poll is how often an idle worker looks for a job; default 2 s.
	Poll time.Duration
	// MaxAttempts is how many runs a job gets: a job whose runners kept
	// dying (a data set that kills the process) fails after it.
	// Default 3.
	MaxAttempts int
}

func (f *FleetOptions) setDefaults() {
	if f.Lease <= 0 {
		f.Lease = 20 * time.Second
	}
	if f.Poll <= 0 {
		f.Poll = 2 * time.Second
	}
	if f.MaxAttempts <= 0 {
		f.MaxAttempts = 3
	}
}

// startFleet makes m a replica of a fleet: its records are a cache of the
// shared store (no recovery: the jobs other replicas left are theirs
// until their leases run out), its local worker runs the re-scoring jobs
// it accepted, and opts.Workers workers claim training jobs.
func (m *Manager) startFleet(ctx context.Context) error {
	ls, ok := m.records.(LeaseStore)
	if !ok {
		return errors.New("jobs: a fleet needs a record store with leases (LeaseStore)")
	}
	if m.opts.Workers < 0 {
		return fmt.Errorf("jobs: %d training workers", m.opts.Workers)
	}
	m.opts.Fleet.setDefaults()
	m.leases, m.held = ls, map[string]*task{}
	if err := m.refresh(ctx); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(3 + m.opts.Workers)
	go m.work(runCtx)
	go m.retryWrites(runCtx)
	go m.renewLeases(runCtx)
	for range m.opts.Workers {
		go m.claimLoop(runCtx)
	}
	return nil
}

// refresh replaces the cached records with the shared store's, but for
// those whose last change this replica still has to write.
func (m *Manager) refresh(ctx context.Context) error {
	records, skipped, err := m.records.LoadAll(ctx)
	if err != nil {
		return fmt.Errorf("jobs: load the records: %w", err)
	}
	for _, err := range skipped {
		m.log.Warn("skipping unreadable job record", "err", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range records {
		if _, mine := m.unsaved[j.ID]; !mine {
			m.cacheLocked(j)
		}
	}
	return nil
}

// cacheLocked stores j as the cached record of its job, but for a job
// this replica holds the lease of: its record is the one this replica
// writes. Called with m.mu held.
func (m *Manager) cacheLocked(j *Job) {
	if t := m.held[j.ID]; t != nil && !t.lost {
		return
	}
	m.jobs[j.ID] = j
}

// newOwner names one claim: the replica and a random token, so that a
// lease names one run, and a restarted replica of the same name owns
// none of its predecessor's.
func (m *Manager) newOwner() string {
	return m.opts.Fleet.Replica + "/" + uuid.NewString()
}

// submitShared accepts a training job in a fleet: its data set is saved
// in the shared spool before its queued record is written, so that no
// claimer finds a job without its data. r's slot and memory are given
// back then: the job waits in the store, not here.
func (m *Manager) submitShared(ctx context.Context, r *Reservation, ds *trainer.Dataset, j *Job) (Job, error) {
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return Job{}, fmt.Errorf("%w: the server is shutting down", ErrInterrupted)
	}
	if err := m.saveSpool(ctx, j.ID, ds); err != nil {
		return Job{}, fmt.Errorf("jobs: save the data set: %w", err)
	}
	m.mu.Lock()
	err := m.persist(j)
	if err == nil {
		m.jobs[j.ID] = j
	}
	out := *j
	m.mu.Unlock()
	if err != nil {
		m.removeSpool(j.ID)
		return Job{}, err
	}
	r.Release()
	m.log.Info("training job queued in the fleet", "job", j.ID, "samples", ds.Len())
	m.wakeClaimers()
	return out, nil
}

// wakeClaimers makes an idle worker of this replica look for a job now.
func (m *Manager) wakeClaimers() {
	select {
	case m.claimWake <- struct{}{}:
	default:
	}
}

// claimLoop is one training worker of a fleet replica: it claims a job,
// runs it and claims the next, polling while there is none.
func (m *Manager) claimLoop(ctx context.Context) {
	defer m.wg.Done()
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		t, jobCtx, err := m.claim(ctx)
		if err != nil && ctx.Err() == nil {
			m.log.Warn("cannot claim a training job", "err", err)
		}
		if t == nil {
			poll.Reset(m.opts.Fleet.Poll)
			select {
			case <-ctx.Done():
				return
			case <-m.claimWake:
			case <-poll.C:
			}
			continue
		}
		m.run(ctx, jobCtx, t)
		m.finishClaimed(t)
	}
}

// claim takes a job from the shared store and readies it to run: nil
// when there was none, or when the job claimed could not run here and was
// ended instead (a re-scoring job of a dead replica, a job out of
// attempts, a data set that cannot be read back).
func (m *Manager) claim(ctx context.Context) (*task, context.Context, error) {
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return nil, nil, nil
	}
	owner := m.newOwner()
	now := m.opts.Now()
	j, err := m.leases.Claim(ctx, owner, m.opts.Fleet.Lease, func(j *Job) {
		j.Status, j.FinishedAt = Running, nil
		if j.StartedAt == nil {
			j.StartedAt = &now
		}
	})
	if errors.Is(err, ErrNothingToClaim) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	t := &task{id: j.ID, owner: owner, renewed: time.Now(), ended: make(chan struct{})}
	m.mu.Lock()
	m.jobs[j.ID] = j
	m.held[j.ID] = t
	m.mu.Unlock()
	if j.Attempts > 1 {
		m.log.Warn("training job taken over from a runner whose lease ran out", "job", j.ID, "attempt", j.Attempts)
	}
	if why := m.cannotRun(ctx, j, t); why != "" {
		m.endClaimed(t, why)
		return nil, nil, nil
	}
	jobCtx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	t.cancel = cancel
	lost := t.lost
	m.mu.Unlock()
	if lost {
		// Cancelled while its data set was read.
		cancel()
	}
	return t, jobCtx, nil
}

// cannotRun reads the claimed job's data set into t, or says why the job
// cannot run (anywhere: it is to be failed).
func (m *Manager) cannotRun(ctx context.Context, j *Job, t *task) string {
	switch {
	case j.KindOf() == KindRescore:
		return "the server running this re-scoring job stopped; post the re-scoring again"
	case j.Attempts > m.opts.Fleet.MaxAttempts:
		return fmt.Sprintf("its runner stopped %d times while running it; upload the data again", j.Attempts-1)
	}
	loaded, err := m.prepareTask(ctx, j)
	if err != nil {
		return "its runner stopped and " + err.Error() + "; upload the data again"
	}
	t.ds, t.opts, t.charged = loaded.ds, loaded.opts, loaded.charged
	return ""
}

// endClaimed fails a claimed job that cannot run (INTERRUPTED, saying
// why) and lets it go.
func (m *Manager) endClaimed(t *task, why string) {
	m.mu.Lock()
	j := m.jobs[t.id]
	now := m.opts.Now()
	j.Status, j.FinishedAt = Failed, &now
	j.Error = &Failure{Code: m.opts.Classify(ErrInterrupted), Message: why}
	m.persistOrKeep(j)
	m.mu.Unlock()
	m.log.Warn("claimed training job cannot run", "job", t.id, "reason", why)
	m.finishClaimed(t)
}

// finishClaimed lets a claimed job go: its memory is given back, and its
// saved data set deleted once the job ended, unless its lease was lost
// (the data set is then the new runner's).
func (m *Manager) finishClaimed(t *task) {
	m.mu.Lock()
	ended := Finished(m.jobs[t.id].Status) && !t.lost
	delete(m.held, t.id)
	m.mu.Unlock()
	if ended {
		m.removeSpool(t.id)
	}
	m.releaseBytes(t.charged)
	t.ds = nil
	close(t.ended)
}

// giveBackLocked puts a claimed job that this replica stops running (it
// shuts down) back in the queue, for another replica to run. Called with
// m.mu held.
func (m *Manager) giveBackLocked(t *task) {
	j := m.jobs[t.id]
	j.Status = Queued
	m.persistOrKeep(j)
	m.log.Info("training job given back to the fleet at shutdown", "job", t.id)
}

// loseLocked stops a job whose lease this replica no longer holds: it
// writes nothing more of it and stages nothing. Called with m.mu held.
func (m *Manager) loseLocked(t *task) {
	if t.lost {
		return
	}
	t.lost = true
	if t.cancel != nil {
		t.cancel()
	}
	m.log.Warn("training job lease lost; stopping it here", "job", t.id)
}

// confirmLease renews t's lease right before its model is staged, so that
// a runner that lost it stages nothing. A no-op outside a fleet.
func (m *Manager) confirmLease(ctx context.Context, t *task) error {
	if t.owner == "" {
		return nil
	}
	err := m.leases.Renew(ctx, t.id, t.owner, m.opts.Fleet.Lease)
	if errors.Is(err, ErrLeaseLost) {
		m.mu.Lock()
		m.loseLocked(t)
		m.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("jobs: confirm the lease before staging: %w", err)
	}
	m.mu.Lock()
	t.renewed = time.Now()
	m.mu.Unlock()
	return nil
}

// renewLeases renews the lease of every job this replica holds every
// Lease/3, until ctx ends. A job whose lease was lost is stopped; one
// whose renewals kept failing for a whole lease is stopped too, since
// another replica may have claimed it.
func (m *Manager) renewLeases(ctx context.Context) {
	defer m.wg.Done()
	tick := time.NewTicker(m.opts.Fleet.Lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			m.renewHeld(ctx)
		}
	}
}

func (m *Manager) renewHeld(ctx context.Context) {
	m.mu.Lock()
	held := make([]*task, 0, len(m.held))
	for _, t := range m.held {
		if t.owner != "" && !t.lost {
			held = append(held, t)
		}
	}
	m.mu.Unlock()
	for _, t := range held {
		err := m.leases.Renew(ctx, t.id, t.owner, m.opts.Fleet.Lease)
		m.mu.Lock()
		switch {
		case err == nil:
			t.renewed = time.Now()
		case errors.Is(err, ErrLeaseLost):
			m.loseLocked(t)
		case ctx.Err() == nil:
			m.log.Warn("cannot renew a training job's lease", "job", t.id, "err", err)
			if time.Since(t.renewed) > m.opts.Fleet.Lease {
				m.loseLocked(t)
			}
		}
		m.mu.Unlock()
	}
}

// getShared reads a job's record from the shared store.
func (m *Manager) getShared(ctx context.Context, id string) (Job, error) {
	j, err := m.leases.Load(ctx, id)
	if err != nil {
		return Job{}, err
	}
	m.mu.Lock()
	if _, mine := m.unsaved[id]; mine {
		j = m.jobs[id]
	} else {
		m.cacheLocked(j)
	}
	out := *j
	m.mu.Unlock()
	return out, nil
}

// waitShared polls the shared store until job id ended, or ctx ends.
func (m *Manager) waitShared(ctx context.Context, id string) (Job, error) {
	poll := time.NewTicker(min(m.opts.Fleet.Poll, 250*time.Millisecond))
	defer poll.Stop()
	for {
		j, err := m.getShared(ctx, id)
		if err != nil || Finished(j.Status) {
			return j, err
		}
		select {
		case <-ctx.Done():
			return Job{}, ctx.Err()
		case <-poll.C:
		}
	}
}

// cancelShared cancels a job of the fleet, wherever it waits or runs: the
// record is changed in the shared store, which drops the runner's lease;
// a runner on another replica stops at its next renewal. A re-scoring job
// this replica runs from memory is cancelled as in the embedded queue.
func (m *Manager) cancelShared(ctx context.Context, id string) (Job, error) {
	m.mu.Lock()
	t := m.held[id]
	if t != nil && t.owner != "" && t.rescore != nil {
		m.mu.Unlock()
		return m.cancelLocal(ctx, id)
	}
	if t != nil && t.publishing {
		m.mu.Unlock()
		select {
		case <-t.ended:
		case <-ctx.Done():
			return Job{}, ctx.Err()
		}
		j, err := m.getShared(ctx, id)
		if err != nil {
			return Job{}, err
		}
		return Job{}, fmt.Errorf("%w: job %s is %s", ErrJobFinished, id, j.Status)
	}
	m.mu.Unlock()
	now := m.opts.Now()
	var was Status
	j, err := m.leases.Update(ctx, id, func(j *Job) error {
		if Finished(j.Status) {
			return fmt.Errorf("%w: job %s is %s", ErrJobFinished, id, j.Status)
		}
		was = j.Status
		m.markCancelled(j, now)
		return nil
	})
	if err != nil {
		return Job{}, err
	}
	m.mu.Lock()
	t = m.held[id]
	if t != nil {
		m.loseLocked(t)
	}
	m.cacheLocked(j)
	out := *j
	m.mu.Unlock()
	m.removeSpool(id)
	m.log.Info("training job cancelled", "job", id, "was", was)
	if t != nil {
		select {
		case <-t.ended:
		case <-ctx.Done():
		}
	}
	return out, nil
}
