package registry

import (
	"context"
	"fmt"

	"ramanserve/inference"
)

// The shadow is a staged or archived version that scores the spectra the
// active model answers (package shadow does the scoring). Which version it
// is lives in the index (Shadow), committed atomically with everything
// else, so that it survives a restart and can never disagree with the
// active pointer: a load that makes the shadow active, and a delete of the
// shadow version, clear it in the same commit.

// ShadowFollower is told every change of the shadow: the scorer that runs
// it (*shadow.Scorer satisfies it). The registry calls it under its load
// lock, after the index write that records the change, so the calls come
// in the order of the writes.
type ShadowFollower interface {
	// Set makes m the shadow, replacing any previous one.
	Set(m inference.Model) error
	// Clear stops shadow scoring.
	Clear()
}

// shadowState is the registry's side of the shadow; guarded by mu.
type shadowState struct {
	follower ShadowFollower
	// restored is the model opened at start-up, held until a follower is
	// attached (FollowShadow hands it over and drops it).
	restored inference.Model
	// problem says why the recorded shadow is not running (restore
	// failed); health lists it until the shadow is set or cleared.
	problem string
	// following is the version the follower was last Set to ("" after a
	// Clear): a replica compares it with the index's shadow to follow
	// another replica's change.
	following string
}

// Shadow returns the shadow version recorded in the index, "" when none.
// A version whose model failed to restore at start-up is still returned
// (Problems says why it is not running) until ClearShadow or SetShadow.
func (r *Registry) Shadow() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ix.Shadow
}

// FollowShadow attaches f, the one follower, and Sets it at once to the
// shadow restored at start-up, if any. Every later change (SetShadow,
// ClearShadow, a load that promotes the shadow, a delete of it) is passed
// on to f. It waits for a load in progress; a second call replaces f.
func (r *Registry) FollowShadow(f ShadowFollower) error {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	r.mu.Lock()
	m := r.shadow.restored
	r.shadow.follower, r.shadow.restored = f, nil
	r.shadow.following = ""
	if m != nil {
		r.shadow.following = m.Metadata().Version
	}
	r.mu.Unlock()
	if m == nil {
		f.Clear()
		return nil
	}
	if err := f.Set(m); err != nil {
		r.setShadowProblem(fmt.Sprintf("shadow model %s restored but not started: %v", m.Metadata().Version, err))
		return fmt.Errorf("start shadow %q: %w", m.Metadata().Version, err)
	}
	return nil
}

// SetShadow makes version, a staged or archived version, the shadow. The
// model is opened through the same readers and checks as a load (size,
// checksum, reader), under the same lock: a concurrent load, delete or
// shadow change fails at once with ErrLoadInProgress. Unknown version:
// ErrModelNotFound; the active version: ErrShadowIsActive. The
// index write is the commit point; the follower is then Set. Setting the
// current shadow again reopens it (its comparison starts again).
func (r *Registry) SetShadow(ctx context.Context, version string) error {
	release, err := r.exclusive(ctx)
	if err != nil {
		return err
	}
	defer release()
	entry, err := r.shadowCandidate(version)
	if err != nil {
		return err
	}
	model, err := r.openVerified(ctx, entry)
	if err != nil {
		return fmt.Errorf("shadow %q: %w", version, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.commitShadow(ctx, version); err != nil {
		return err
	}
	r.log.Info("shadow set", "version", version)
	return r.tellSet(model)
}

// shadowCandidate returns a copy of version's entry when it may become
// the shadow.
func (r *Registry) shadowCandidate(version string) (*Entry, error) {
	if !ValidVersion(version) {
		return nil, fmt.Errorf("%w: version %q is not a valid version name", ErrModelNotFound, version)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.ix.Models[version]
	if !ok {
		return nil, fmt.Errorf("%w: version %q is not in the registry", ErrModelNotFound, version)
	}
	// The index's active pointer, not only the serving model: a version
	// recorded active that failed to restore becomes active again at the
	// next start, and would then shadow itself.
	if e.Status == StatusActive || r.ix.Active == version {
		return nil, fmt.Errorf("%w: %q is the active model; the shadow must be another version", ErrShadowIsActive, version)
	}
	if m := r.Active(); m != nil && m.Metadata().Version == version {
		return nil, fmt.Errorf("%w: %q is the active model; the shadow must be another version", ErrShadowIsActive, version)
	}
	c := *e
	return &c, nil
}

// commitShadow records version ("" clears) as the shadow in one atomic
// index write.
func (r *Registry) commitShadow(ctx context.Context, version string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := r.ix.Clone()
	next.Shadow = version
	if err := r.commit(ctx, next); err != nil {
		return err
	}
	r.shadow.problem = ""
	r.shadow.restored = nil
	return nil
}

// ClearShadow stops shadow scoring: the index records no shadow, and the
// follower is cleared. Clearing when there is none does nothing (and
// writes nothing). It takes the load lock like SetShadow
// (ErrLoadInProgress while a load, delete or shadow change runs).
func (r *Registry) ClearShadow(ctx context.Context) error {
	release, err := r.exclusive(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.Shadow() == "" {
		return nil
	}
	if err := r.commitShadow(ctx, ""); err != nil {
		return err
	}
	r.log.Info("shadow cleared")
	r.tellClear()
	return nil
}

// tellSet passes a new shadow to the follower; called under loadMu.
func (r *Registry) tellSet(m inference.Model) error {
	r.mu.Lock()
	f := r.shadow.follower
	r.shadow.following = m.Metadata().Version
	r.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f.Set(m); err != nil {
		// The index names the shadow; health says it is not running
		// until it is set again or cleared.
		r.setShadowProblem(fmt.Sprintf("shadow model %s recorded but not started: %v", m.Metadata().Version, err))
		return fmt.Errorf("start shadow %q: %w", m.Metadata().Version, err)
	}
	return nil
}

// tellClear clears the follower; called under loadMu.
func (r *Registry) tellClear() {
	r.mu.Lock()
	f := r.shadow.follower
	r.shadow.following = ""
	r.mu.Unlock()
	if f != nil {
		f.Clear()
	}
}

func (r *Registry) setShadowProblem(p string) {
	r.mu.Lock()
	r.shadow.problem = p
	r.mu.Unlock()
}

// restoreShadow opens the shadow recorded in the index at start-up. A
// failure does not fail Open: it is logged and listed in Problems, and the
// index keeps the name until DELETE /model/shadow (or a new PUT), so that
// the operator sees what was lost instead of a silent clear.
func (r *Registry) restoreShadow(ctx context.Context) {
	version := r.ix.Shadow
	err := func() error {
		e, ok := r.ix.Models[version]
		switch {
		case !ok:
			return fmt.Errorf("%w: version %q is not in the registry", ErrModelNotFound, version)
		case e.Status == StatusActive || r.ix.Active == version:
			return fmt.Errorf("%w: %q", ErrShadowIsActive, version)
		}
		m, err := r.openVerified(ctx, e)
		if err != nil {
			return err
		}
		r.shadow.restored = m
		return nil
	}()
	if err != nil {
		r.shadow.problem = fmt.Sprintf("shadow model %s not restored (%v); DELETE /model/shadow clears it, PUT /model/shadow sets one", version, err)
		r.log.Error("shadow model not restored", "version", version, "err", err)
		return
	}
	r.log.Info("shadow model restored", "version", version)
}
