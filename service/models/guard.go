package models

import (
	"context"
	"fmt"
	"sync"

	"ramanserve/registry"
	"ramanserve/trainer/jobs"
)

// rescoreGuard keeps the deletion of a version and its re-scoring apart.
// A re-scoring job holds its model in memory and writes records that name
// the version, so a version is not deleted while a job for it is queued or
// running, or while a request is between its registry check and the queue
// (ErrModelBusy: MODEL_BUSY). A re-scoring request for a version
// being deleted waits for the delete to end, then checks the registry: it
// finds the version gone (MODEL_NOT_FOUND), or still there if the delete
// failed. Either way no job is queued for a version that is gone.
//
// The guard's lock is held only to look and to mark, never across the
// registry's write or the opening of a model: a delete of one version and
// a re-scoring of another do not wait for each other.
type rescoreGuard struct {
	reg  *registry.Registry
	jobs *jobs.Manager

	mu sync.Mutex
	// queueing counts, per version, the re-scoring requests between their
	// registry check and their job's place in the queue; a delete refuses
	// while it is above zero, as it would once the job is queued.
	queueing map[string]int
	// deleting holds the versions being deleted; each channel is closed
	// when its delete returned.
	deleting map[string]chan struct{}
}

func newRescoreGuard(reg *registry.Registry, m *jobs.Manager) *rescoreGuard {
	return &rescoreGuard{reg: reg, jobs: m, queueing: map[string]int{}, deleting: map[string]chan struct{}{}}
}

// beginQueueing marks a re-scoring request of version until the returned
// done is called (after the job is queued, or the request failed). While
// version is being deleted it first waits for that delete to return.
func (g *rescoreGuard) beginQueueing(ctx context.Context, version string) (done func(), err error) {
	g.mu.Lock()
	for {
		deleted, ok := g.deleting[version]
		if !ok {
			break
		}
		g.mu.Unlock()
		select {
		case <-deleted:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		g.mu.Lock()
	}
	g.queueing[version]++
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.queueing[version]--; g.queueing[version] == 0 {
			delete(g.queueing, version)
		}
	}, nil
}

// Delete deletes version from the registry unless a re-scoring job for it
// is queued or running, or a request is queueing one
// (ErrModelBusy). A second delete of a version already being
// deleted is registry.ErrLoadInProgress, as the registry answers any
// delete while another runs.
func (g *rescoreGuard) Delete(ctx context.Context, version string) error {
	deleted, err := g.beginDelete(version)
	if err != nil {
		return err
	}
	defer g.endDelete(version, deleted)
	return g.reg.Delete(ctx, version)
}

// beginDelete marks version as being deleted, unless it is in use.
func (g *rescoreGuard) beginDelete(version string) (chan struct{}, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.deleting[version]; ok {
		return nil, fmt.Errorf("%w: version %q is being deleted", registry.ErrLoadInProgress, version)
	}
	if g.queueing[version] > 0 {
		return nil, fmt.Errorf("%w: a re-scoring job for version %q is being queued; retry once it ended (GET /training lists it)",
			ErrModelBusy, version)
	}
	if j, ok := g.jobs.RescoreInProgress(version); ok {
		return nil, fmt.Errorf("%w: re-scoring job %s of version %q is %s; retry once it ended (GET /training/%s), or cancel it (POST /training/%s/cancel)",
			ErrModelBusy, j.ID, version, j.Status, j.ID, j.ID)
	}
	deleted := make(chan struct{})
	g.deleting[version] = deleted
	return deleted, nil
}

// endDelete unmarks version and wakes the requests waiting for its delete.
func (g *rescoreGuard) endDelete(version string, deleted chan struct{}) {
	g.mu.Lock()
	delete(g.deleting, version)
	g.mu.Unlock()
	close(deleted)
}
