package jobs

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"ramanserve/trainer"
)

// TestQueuedJobsLeavingTheQueueEndTheirWait: a queued job that never runs
// (cancelled, or taken by Close) closes its ended channel, which a Wait
// that began while it was queued is waiting on. The worker is kept from
// taking the tasks (closing), so both stay queued until then.
func TestQueuedJobsLeavingTheQueueEndTheirWait(t *testing.T) {
	m, err := New(context.Background(), keepNothing{}, keepNothing{}, Options{Publish: func(context.Context, *trainer.Result, Lineage) (string, string, error) {
		t.Error("nothing is published here")
		return "", "", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	queue := func(id string) *task {
		tk := &task{id: id, rescore: &rescoreTask{}, ended: make(chan struct{})}
		m.jobs[id] = &Job{ID: id, Kind: KindRescore, Status: Queued, SubmittedAt: time.Now(), Rescore: &RescoreSpec{Version: "v1"}}
		m.pending = append(m.pending, tk)
		m.slots++
		return tk
	}
	m.mu.Lock()
	m.closing = true
	cancelled, saved := queue("cancelled"), queue("saved")
	m.mu.Unlock()

	if _, err := m.Cancel(context.Background(), cancelled.id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled.ended:
	default:
		t.Fatal("Cancel of a queued job left its ended channel open: a Wait on it never returns")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-saved.ended:
	default:
		t.Fatal("Close left a queued job's ended channel open: a Wait on it never returns")
	}
	if j, err := m.Wait(context.Background(), saved.id); err != nil || j.Status != Failed {
		t.Fatalf("Wait after Close: %s, %v; want failed (INTERRUPTED)", j.Status, err)
	}
}

// keepNothing is a Store and an UploadSpool that keep nothing: the test
// looks at the Manager's memory only.
type keepNothing struct{}

func (keepNothing) Save(context.Context, *Job) error { return nil }
func (keepNothing) LoadAll(context.Context) ([]*Job, []error, error) {
	return nil, nil, nil
}
func (keepNothing) Put(_ context.Context, _ string, r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	return err
}
func (keepNothing) Open(_ context.Context, id string) (io.ReadCloser, int64, error) {
	return nil, 0, fmt.Errorf("%w: %s", ErrNoUpload, id)
}
func (keepNothing) Remove(context.Context, string) error { return nil }
