package models

import (
	"context"
	"errors"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/synth"
	"testing"
	"time"
)

// guardFixture is a registry with one staged model trained here, a job
// queue, and an empty prediction log of spectra.
type guardFixture struct {
	reg     *registry.Registry
	jobs    *jobs.Manager
	log     *predlog.Writer
	version string
}

func newGuardFixture(t *testing.T) *guardFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	reg, err := registry.Open(ctx, dir, registry.Options{Openers: registry.FileOpeners(inference.ModelOptions{InstrumentAxis: trainer.DefaultWavenumbers()})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	res, err := trainer.Train(ctx, synth.New(synth.Config{Seed: 3}).Dataset(50), trainer.Options{Seed: 1, MaxComponents: 5, Folds: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	version, _, err := Stager{Registry: reg}.Stage(ctx, res, jobs.Lineage{Meta: jobs.Meta{Operator: "op"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := jobfiles.Open(reg.JobsDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.New(ctx, files, files, jobs.Options{QueueSize: 1, Publish: Stager{Registry: reg}.Stage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	l, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{CommitInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return &guardFixture{reg: reg, jobs: m, log: l, version: version}
}

// TestRescoreGuardOrdersDeleteAndQueueing: the guard's two sides on their
// own. A request between its registry check and the queue makes a delete
// MODEL_BUSY; a request for a version being deleted waits for the delete
// (a request whose context already ended returns that, where a free
// version lets it through), then finds the version gone.
func TestRescoreGuardOrdersDeleteAndQueueing(t *testing.T) {
	f := newGuardFixture(t)
	svc := New(f.reg, f.jobs, f.log)
	g := svc.guard
	ctx := context.Background()
	ended, cancel := context.WithCancel(ctx)
	cancel()

	done, err := g.beginQueueing(ctx, f.version)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(ctx, f.version); !errors.Is(err, ErrModelBusy) {
		t.Fatalf("delete while a re-scoring is being queued: %v, want ErrModelBusy", err)
	}
	done()

	deleted, err := g.beginDelete(f.version)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.beginQueueing(ended, f.version); !errors.Is(err, context.Canceled) {
		t.Fatalf("queueing a version being deleted: %v, want it to wait (context.Canceled)", err)
	}
	if done, err := g.beginQueueing(ended, "another-version"); err != nil {
		t.Fatalf("queueing another version during the delete: %v", err)
	} else {
		done()
	}
	if err := g.Delete(ctx, f.version); !errors.Is(err, registry.ErrLoadInProgress) {
		t.Fatalf("a second delete of the version: %v, want ErrLoadInProgress", err)
	}
	waiter := make(chan error, 1)
	go func() {
		_, err := svc.Rescore(ctx, RescoreRequest{Version: f.version})
		waiter <- err
	}()
	if err := f.reg.Delete(ctx, f.version); err != nil {
		t.Fatal(err)
	}
	g.endDelete(f.version, deleted)
	if err := <-waiter; !errors.Is(err, registry.ErrModelNotFound) {
		t.Fatalf("re-scoring a version deleted meanwhile: %v, want ErrModelNotFound", err)
	}
	if _, ok := f.jobs.RescoreInProgress(f.version); ok {
		t.Fatal("a re-scoring job was queued for the deleted version")
	}
}
