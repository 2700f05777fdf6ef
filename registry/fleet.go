package registry

import (
	"context"
	"errors"
	"fmt"

	"ramanserve/registry/store"
)

// A fleet is several processes over one shared store (PostgreSQL). Each
// keeps its own copy of the index and serves its own active model; the
// store's index is the truth, and its revisions tell a copy that is
// behind. Three things keep the copies in step:
//
//   - a load, a delete or a shadow change takes the fleet's lock
//     (FleetLock) beside the process's own, so one runs at a time across
//     the fleet, and first catches up with the store: it decides on the
//     index every replica will see, and previous_version is the fleet's;
//   - every other replica catches up when told of a commit (Refresh,
//     which the process calls on the store's change notification and on
//     a timer as a fallback): it reads the index and, if the active or
//     shadow version changed, opens that model and swaps it in, as a load
//     does;
//   - an additive commit (a trained model staged) that meets a newer
//     revision reads the index again and retries (AddStaged).

// FleetLock is exclusive across the processes sharing the registry's
// stores.
type FleetLock interface {
	// TryLock takes the lock without waiting. It fails with an error
	// wrapping ErrLoadInProgress when another process holds it; release
	// gives it back.
	TryLock(ctx context.Context) (release func(), err error)
}

// exclusive takes the process's load lock and, in a fleet, the fleet's
// lock, and catches up with the store; release gives both back. A lock
// held elsewhere is ErrLoadInProgress at once.
func (r *Registry) exclusive(ctx context.Context) (release func(), err error) {
	if !r.loadMu.TryLock() {
		return nil, ErrLoadInProgress
	}
	if r.opts.FleetLock == nil {
		return r.loadMu.Unlock, nil
	}
	unlock, err := r.opts.FleetLock.TryLock(ctx)
	if err != nil {
		r.loadMu.Unlock()
		return nil, err
	}
	release = func() { unlock(); r.loadMu.Unlock() }
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
	ix, err := r.readNewer(ctx)
	if err != nil {
		return err
	}
	return errors.Join(r.followActive(ctx, ix), r.followShadow(ctx, ix))
}

// readNewer reads the store's index and adopts it if its revision is not
// this process's; it returns the index now held (the caller's to read,
// not to change).
func (r *Registry) readNewer(ctx context.Context) (*store.Index, error) {
	ix, rev, err := r.index.ReadIndex(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrRegistry, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev != r.rev {
		r.ix, r.rev = ix, rev
	}
	return r.ix.Clone(), nil
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
