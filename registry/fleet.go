package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ramanserve/registry/store"
)

// A fleet is several processes over one shared store (PostgreSQL). Each
// keeps its own copy of the index and serves its own active model; the
// store's index is the truth, and its revisions tell a copy that is
// behind. Three things keep the copies in step:
//
//   - a load, a delete or a shadow change takes the fleet's lock
//     (Fleet.TryLock) beside the process's own, so one runs at a time
//     across the fleet, and first catches up with the store: it decides
//     on the index every replica will see, and previous_version is the
//     fleet's;
//   - a load answers once every live replica serves the new model
//     (Fleet.AwaitServed, bounded by ConvergeTimeout), still holding the
//     fleet's lock: when POST /model/load returns, the whole fleet serves
//     the new version, and the next swap cannot begin before;
//   - every other replica catches up when told of a commit (Refresh,
//     which the process calls on the store's change notification and on
//     a timer as a fallback): it reads the index and, if the active or
//     shadow version changed, opens that model and swaps it in, as a load
//     does;
//   - an additive commit (a trained model staged) that meets a newer
//     revision reads the index again and retries (AddStaged).

// Fleet is what the processes sharing the registry's stores do
// together: a lock exclusive across them, and a record of the index
// revision each one serves.
type Fleet interface {
	// TryLock takes the fleet's lock without waiting. It fails with an
	// error wrapping ErrLoadInProgress when another process holds it;
	// release gives it back.
	TryLock(ctx context.Context) (release func(), err error)
	// Served records that this process serves the index at rev (its
	// active and shadow models are the ones rev names).
	Served(ctx context.Context, rev store.Revision) error
	// AwaitServed waits until every other live process serves rev or a
	// later revision, or ctx ends; it returns the processes still behind
	// then.
	AwaitServed(ctx context.Context, rev store.Revision) (behind []string, err error)
}

// ConvergeTimeout bounds how long a load waits for the rest of the
// fleet to serve the new model before it answers anyway (and logs the
// replicas behind). The fleet's goal is every replica within 1 s; the
// bound is wider so that a replica slowed by a loaded machine still
// counts, and narrow enough that one stuck replica (waited for until it
// has been silent for a few seconds) does not hold loads for long.
const ConvergeTimeout = 10 * time.Second

// exclusive takes the process's load lock and, in a fleet, the fleet's
// lock, and catches up with the store; release gives both back. A load,
// delete or shadow change already running here or elsewhere is
// ErrLoadInProgress at once. In a fleet, a catch-up running here (which
// holds the load lock while it opens another replica's model) is waited
// for instead: it is not a change the caller should be told to retry.
func (r *Registry) exclusive(ctx context.Context) (release func(), err error) {
	if r.opts.Fleet == nil {
		if !r.loadMu.TryLock() {
			return nil, ErrLoadInProgress
		}
		return r.loadMu.Unlock, nil
	}
	if !r.changing.CompareAndSwap(false, true) {
		return nil, ErrLoadInProgress
	}
	r.loadMu.Lock()
	unlockHere := func() { r.loadMu.Unlock(); r.changing.Store(false) }
	unlock, err := r.opts.Fleet.TryLock(ctx)
	if err != nil {
		unlockHere()
		return nil, err
	}
	release = func() { unlock(); unlockHere() }
	if err := r.catchUp(ctx); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// Refresh brings this process up to the store's index: what another
// replica committed becomes this one's index, and when the active or
// shadow version changed, that model is opened (size and checksum
// checked, as a load does) and swapped in. It waits for a load, delete
// or shadow change of this process to finish. A model that cannot be
// opened leaves the one served in place; the error says why, and
// RestoreError reports it (health: degraded) until a later Refresh or
// load succeeds.
func (r *Registry) Refresh(ctx context.Context) error {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	return r.catchUp(ctx)
}

// Readable reads the index from the store (in a fleet, the shared
// database) and reports why it cannot; it changes nothing.
func (r *Registry) Readable(ctx context.Context) error {
	if _, _, err := r.index.ReadIndex(ctx); err != nil {
		return fmt.Errorf("%w: %w", store.ErrRegistry, err)
	}
	return nil
}

// Revision is the revision of the index this process last read or
// committed.
func (r *Registry) Revision() store.Revision {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rev
}

// catchUp reads the store's index, adopts it when it is another revision
// than this process's, and makes the served and shadow models follow it;
// called with loadMu held.
func (r *Registry) catchUp(ctx context.Context) error {
	ix, rev, err := r.readNewer(ctx)
	if err != nil {
		return err
	}
	if err := errors.Join(r.followActive(ctx, ix), r.followShadow(ctx, ix)); err != nil {
		return err
	}
	return r.served(ctx, rev)
}

// served tells the fleet this process serves rev; a failure to record it
// only delays another replica's load (up to ConvergeTimeout).
func (r *Registry) served(ctx context.Context, rev store.Revision) error {
	if r.opts.Fleet == nil {
		return nil
	}
	if err := r.opts.Fleet.Served(ctx, rev); err != nil {
		return fmt.Errorf("%w: record the revision served: %w", store.ErrRegistry, err)
	}
	return nil
}

// awaitFleet waits, after a swap committed at rev, until the other
// replicas serve it too, at most ConvergeTimeout; called under the
// fleet's lock. Replicas still behind then are logged: they catch up on
// their own, and the load has succeeded all the same.
func (r *Registry) awaitFleet(ctx context.Context, rev store.Revision) {
	if r.opts.Fleet == nil {
		return
	}
	if err := r.served(ctx, rev); err != nil {
		r.log.Warn("could not record the revision this replica serves", "err", err)
	}
	ctx, cancel := context.WithTimeout(ctx, ConvergeTimeout)
	defer cancel()
	behind, err := r.opts.Fleet.AwaitServed(ctx, rev)
	if len(behind) > 0 || (err != nil && !errors.Is(err, context.DeadlineExceeded)) {
		r.log.Warn("replicas not yet serving the new model", "revision", rev, "behind", behind, "err", err)
	}
}

// readNewer reads the store's index and adopts it if its revision is not
// this process's; it returns the index now held (the caller's to read,
// not to change).
func (r *Registry) readNewer(ctx context.Context) (*store.Index, store.Revision, error) {
	ix, rev, err := r.index.ReadIndex(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", store.ErrRegistry, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev != r.rev {
		r.ix, r.rev = ix, rev
	}
	return r.ix.Clone(), r.rev, nil
}

// followActive swaps in the index's active model when it is not the one
// served (another version, or the same version with other bytes).
func (r *Registry) followActive(ctx context.Context, ix *store.Index) error {
	e, ok := ix.Models[ix.Active]
	if ix.Active == "" || !ok {
		return nil
	}
	if cur := r.active.Load(); cur != nil && cur.model.Metadata().Version == e.Version && cur.sha256 == e.SHA256 {
		return nil
	}
	m, err := r.openVerified(ctx, e)
	if err != nil {
		err = fmt.Errorf("follow the fleet's active model %q: %w", e.Version, err)
		r.mu.Lock()
		r.restoreErr = err
		r.mu.Unlock()
		r.log.Error("the fleet's active model could not be opened; the previous one stays", "version", e.Version, "err", err)
		return err
	}
	r.active.Store(&activeModel{model: m, sha256: e.SHA256})
	r.mu.Lock()
	r.restoreErr = nil
	r.mu.Unlock()
	r.log.Info("model activated by another replica", "version", e.Version)
	return nil
}

// followShadow sets or clears the shadow follower when the index's shadow
// is not the version it runs.
func (r *Registry) followShadow(ctx context.Context, ix *store.Index) error {
	r.mu.Lock()
	following, attached := r.shadow.following, r.shadow.follower != nil
	r.mu.Unlock()
	if !attached || ix.Shadow == following {
		return nil
	}
	if ix.Shadow == "" {
		r.tellClear()
		r.log.Info("shadow cleared by another replica")
		return nil
	}
	e, ok := ix.Models[ix.Shadow]
	if !ok {
		return nil
	}
	m, err := r.openVerified(ctx, e)
	if err != nil {
		r.setShadowProblem(fmt.Sprintf("shadow model %s set by another replica but not opened here: %v", e.Version, err))
		return fmt.Errorf("follow the fleet's shadow %q: %w", e.Version, err)
	}
	r.log.Info("shadow set by another replica", "version", e.Version)
	return r.tellSet(m)
}

// commitAdding commits next, made from the index by add; when another
// process committed first (store.ErrConflict), it reads the index again
// and applies add to that, a few times. Called with mu held; add must
// only add to the index it is given.
func (r *Registry) commitAdding(ctx context.Context, add func(next *store.Index) error) error {
	const tries = 5
	for i := 0; ; i++ {
		next := r.ix.Clone()
		if err := add(next); err != nil {
			return err
		}
		err := r.commit(ctx, next)
		if err == nil || !errors.Is(err, store.ErrConflict) || i == tries-1 {
			return err
		}
		ix, rev, rerr := r.index.ReadIndex(ctx)
		if rerr != nil {
			return fmt.Errorf("%w: %w", store.ErrRegistry, rerr)
		}
		r.ix, r.rev = ix, rev
	}
}
