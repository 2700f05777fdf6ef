package pgjobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"ramanserve/platform/pgtest"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/pgjobs"
	"ramanserve/trainer/synth"
)

// stager counts the models a fleet stages, by job; block, when set, holds
// every Publish until it is closed (or the publisher's context ends), and
// entered receives the job id of every Publish that begins.
type stager struct {
	mu      sync.Mutex
	staged  map[string]int
	block   chan struct{}
	entered chan string
}

func newStager() *stager { return &stager{staged: map[string]int{}, entered: make(chan string, 16)} }

func (s *stager) publish(ctx context.Context, _ *trainer.Result, lin jobs.Lineage) (string, string, error) {
	select {
	case s.entered <- lin.JobID:
	default:
	}
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staged[lin.JobID]++
	return "pls-" + lin.JobID, "models/" + lin.JobID + ".npz", nil
}

func (s *stager) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staged[id]
}

// replica starts a fleet Manager on the database at url, with its own
// pool, as a replica process does.
func replica(t *testing.T, url, name string, workers int, lease time.Duration, p jobs.PublishFunc) *jobs.Manager {
	t.Helper()
	store := pgjobs.New(pgtest.Open(t, url))
	m, err := jobs.New(context.Background(), store, store, jobs.Options{
		Publish: p,
		Train:   trainer.Options{Seed: 1, MaxComponents: 4, Folds: 3},
		Workers: workers,
		Fleet:   &jobs.FleetOptions{Replica: name, Lease: lease, Poll: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func submitTo(t *testing.T, m *jobs.Manager, seed uint64) string {
	t.Helper()
	j, err := m.Submit(context.Background(), synth.New(synth.Config{Seed: seed}).Dataset(30), jobs.Meta{Operator: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// waitEnded waits, at most 30 s, until m reports job id done or failed.
func waitEnded(t *testing.T, m *jobs.Manager, id string) jobs.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := m.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	return j
}

// TestFleetRunsAJobOnAnotherReplicaOnce: a job accepted by a replica that
// never trains runs on the one that does, once, and both replicas report
// it alike.
func TestFleetRunsAJobOnAnotherReplicaOnce(t *testing.T) {
	url := pgtest.Database(t)
	st := newStager()
	front := replica(t, url, "front", 0, 2*time.Second, st.publish)
	worker := replica(t, url, "worker", 1, 2*time.Second, st.publish)
	id := submitTo(t, front, 1)
	j := waitEnded(t, front, id)
	if j.Status != jobs.Done || j.Attempts != 1 || j.Result == nil || j.Result.NewVersion != "pls-"+id {
		t.Fatalf("job as the front replica reports it: %+v", j)
	}
	if n := st.count(id); n != 1 {
		t.Fatalf("%d models staged, want 1", n)
	}
	other, err := worker.Get(context.Background(), id)
	if err != nil || other.Status != j.Status || other.Progress != j.Progress || other.Result.NewVersion != j.Result.NewVersion {
		t.Fatalf("the worker reports %+v, %v; the front %+v", other, err, j)
	}
	for _, m := range []*jobs.Manager{front, worker} {
		page, err := m.List("", 10, "")
		if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != id || page.Jobs[0].Status != jobs.Done {
			t.Fatalf("list: %+v, %v", page, err)
		}
	}
}

// TestFleetTakesOverTheJobOfADeadRunner: a runner stops renewing (as a
// killed process does) while it stages its model; once its lease ran out
// the other replica claims the job, runs it and stages it; the dead
// runner stages nothing when it wakes up, and the record says the job ran
// twice.
func TestFleetTakesOverTheJobOfADeadRunner(t *testing.T) {
	url := pgtest.Database(t)
	lease := time.Second
	// The dead runner is a claim made through the store whose holder then
	// vanishes: nothing renews it.
	dead := pgjobs.New(pgtest.Open(t, url))
	st := newStager()
	front := replica(t, url, "front", 0, lease, st.publish)
	id := submitTo(t, front, 2)
	claimed, err := dead.Claim(context.Background(), "killed-replica/run", lease, func(j *jobs.Job) { j.Status = jobs.Running })
	if err != nil || claimed.ID != id {
		t.Fatalf("the doomed runner's claim: %+v, %v", claimed, err)
	}
	heir := replica(t, url, "heir", 1, lease, st.publish)
	j := waitEnded(t, heir, id)
	if j.Status != jobs.Done || j.Attempts != 2 {
		t.Fatalf("after the take-over: %s attempts %d (%+v)", j.Status, j.Attempts, j.Error)
	}
	if n := st.count(id); n != 1 {
		t.Fatalf("%d models staged, want 1", n)
	}
	// The dead runner, back from its pause, can write nothing.
	claimed.Status = jobs.Failed
	if err := dead.SaveLeased(context.Background(), claimed, "killed-replica/run"); !errors.Is(err, jobs.ErrLeaseLost) {
		t.Fatalf("the dead runner's save: %v, want ErrLeaseLost", err)
	}
	if got, _ := front.Get(context.Background(), id); got.Status != jobs.Done || got.Attempts != 2 {
		t.Fatalf("the front replica reports %s attempts %d", got.Status, got.Attempts)
	}
}

// TestFleetCancelsAJobRunningOnAnotherReplica: a cancel sent to replica
// b ends the job replica a runs: the record says CANCELLED on both, and a,
// whose lease the cancel dropped, cannot write it back. (a was already
// staging: that model stays staged, the known window of a cancel that
// crosses replicas.)
func TestFleetCancelsAJobRunningOnAnotherReplica(t *testing.T) {
	url := pgtest.Database(t)
	lease := time.Second
	slow := newStager()
	slow.block = make(chan struct{})
	a := replica(t, url, "a", 1, lease, slow.publish)
	id := submitTo(t, a, 3)
	select {
	case <-slow.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("replica a never began staging")
	}
	b := replica(t, url, "b", 0, lease, newStager().publish)
	if _, err := b.Cancel(context.Background(), id); err != nil {
		t.Fatalf("cancel from replica b: %v", err)
	}
	close(slow.block)
	for _, m := range []*jobs.Manager{a, b} {
		if j := waitEnded(t, m, id); j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "CANCELLED" {
			t.Fatalf("cancelled job: %+v", j)
		}
	}
	if _, err := b.Cancel(context.Background(), id); !errors.Is(err, jobs.ErrJobFinished) {
		t.Fatalf("second cancel: %v, want ErrJobFinished", err)
	}
}

// TestFleetReplicaShuttingDownGivesItsJobBack: a replica closed while it
// stages a job puts the job back in the queue, and another replica runs
// it: one model staged, two attempts.
func TestFleetReplicaShuttingDownGivesItsJobBack(t *testing.T) {
	url := pgtest.Database(t)
	lease := time.Second
	stuck := newStager()
	stuck.block = make(chan struct{})
	a := replica(t, url, "a", 1, lease, stuck.publish)
	id := submitTo(t, a, 4)
	select {
	case <-stuck.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("replica a never began staging")
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := newStager()
	b := replica(t, url, "b", 1, lease, st.publish)
	j := waitEnded(t, b, id)
	if j.Status != jobs.Done || j.Attempts != 2 || st.count(id) != 1 || stuck.count(id) != 0 {
		t.Fatalf("after the hand-over: %s attempts %d, staged %d by b and %d by a", j.Status, j.Attempts, st.count(id), stuck.count(id))
	}
}

// TestFleetRunsEveryJobOnce: two training replicas share six jobs; each
// job is staged exactly once, and by its first attempt. The lease is long
// enough that no renewal misses it on a busy machine (a lost lease, and
// the second attempt it brings, are the hand-over tests' subject).
func TestFleetRunsEveryJobOnce(t *testing.T) {
	url := pgtest.Database(t)
	st := newStager()
	const lease = 30 * time.Second
	a := replica(t, url, "a", 2, lease, st.publish)
	b := replica(t, url, "b", 2, lease, st.publish)
	var ids []string
	for k := range 6 {
		m := a
		if k%2 == 1 {
			m = b
		}
		ids = append(ids, submitTo(t, m, uint64(10+k)))
	}
	for _, id := range ids {
		if j := waitEnded(t, a, id); j.Status != jobs.Done || j.Attempts != 1 || st.count(id) != 1 {
			t.Fatalf("job %s: %s attempts %d, staged %d times", id, j.Status, j.Attempts, st.count(id))
		}
	}
}
