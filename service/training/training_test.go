package training

import (
	"context"
	"errors"
	"testing"
	"time"

	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/synth"
)

// fixture is the service over a real queue and the embedded key store,
// with a clock the test moves.
type fixture struct {
	svc  *Service
	keys *jobfiles.Dir
	now  time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	files, err := jobfiles.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(context.Context, *trainer.Result, jobs.Lineage) (string, string, error) { return "v", "", nil }
	m, err := jobs.New(context.Background(), files, files, jobs.Options{QueueSize: 4, Publish: publish,
		Train: trainer.Options{Seed: 1, MaxComponents: 2, Folds: 3}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	f := &fixture{svc: New(m, files), keys: files, now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	f.svc.now = func() time.Time { return f.now }
	return f
}

// submit is one upload through the service: a slot, a data set, Submit.
func (f *fixture) submit(t *testing.T, once Once) (jobs.Job, error) {
	t.Helper()
	u, err := f.svc.Reserve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Release()
	return u.Submit(context.Background(), synth.New(synth.Config{Seed: 5}).Dataset(20), jobs.Meta{Operator: "op"}, once)
}

// TestKeyedSubmit: the same key and digest return the first job and queue
// nothing; another digest is ErrKeyReused; a claim whose job is not
// recorded is ErrKeyInUse while it is fresh and taken over once it is
// older than the grace; no key queues a job each time.
func TestKeyedSubmit(t *testing.T) {
	f := newFixture(t)
	first, err := f.submit(t, Once{Key: "k", RequestHash: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.submit(t, Once{Key: "k", RequestHash: "h1"})
	if err != nil || again.ID != first.ID {
		t.Fatalf("the same key and digest: job %q, %v; want %q", again.ID, err, first.ID)
	}
	if _, err := f.submit(t, Once{Key: "k", RequestHash: "h2"}); !errors.Is(err, jobs.ErrKeyReused) {
		t.Fatalf("another digest: %v, want ErrKeyReused", err)
	}
	a, _ := f.submit(t, Once{})
	b, _ := f.submit(t, Once{})
	if a.ID == "" || a.ID == b.ID {
		t.Fatalf("uploads without a key: jobs %q and %q, want two", a.ID, b.ID)
	}

	// A claim whose process died before it recorded its job.
	held := jobs.KeyRecord{Key: "orphan", RequestHash: "h", JobID: "never-recorded", CreatedAt: f.now}
	if _, ok, err := f.keys.ClaimKey(context.Background(), held, jobs.DefaultKeyLimits()); !ok || err != nil {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	if _, err := f.submit(t, Once{Key: "orphan", RequestHash: "h"}); !errors.Is(err, jobs.ErrKeyInUse) {
		t.Fatalf("a fresh claim without its job: %v, want ErrKeyInUse", err)
	}
	f.now = f.now.Add(claimGrace + time.Second)
	took, err := f.submit(t, Once{Key: "orphan", RequestHash: "h"})
	if err != nil || took.ID == "" || took.ID == held.JobID {
		t.Fatalf("a stale claim without its job: %q, %v; want a new job", took.ID, err)
	}
	if again, err := f.submit(t, Once{Key: "orphan", RequestHash: "h"}); err != nil || again.ID != took.ID {
		t.Fatalf("after the takeover: %q, %v; want %q", again.ID, err, took.ID)
	}
}
