package registry

import (
	"context"
	"encoding/json"
	"fmt"

	"ramanserve/inference"
	"ramanserve/registry/store"
)

// Describe returns one version's entry as the index records it (lineage,
// metrics, checksum, size), without opening its file. Like List, an entry
// recorded as active whose model is not serving reads archived.
// ErrModelNotFound when the version is not in the registry.
func (r *Registry) Describe(version string) (Entry, error) {
	e, _, err := r.DescribeTagged(version)
	return e, err
}

// DescribeTagged is Describe with the ETag of the state described, read
// together.
func (r *Registry) DescribeTagged(version string) (Entry, string, error) {
	r.mu.Lock()
	e, ok := r.ix.Models[version]
	var c Entry
	if ok {
		c = *e
		c.SourceBatches = append([]string(nil), e.SourceBatches...)
		c.Annotations = append(json.RawMessage(nil), e.Annotations...)
	}
	etag := r.etagLocked()
	loaded := r.active.Load()
	r.mu.Unlock()
	if !ok {
		return Entry{}, "", fmt.Errorf("%w: version %q is not in the registry", ErrModelNotFound, version)
	}
	if c.Status == StatusActive {
		if loaded == nil || loaded.model.Metadata().Version != c.Version {
			c.Status = StatusArchived
		}
	}
	return c, etag, nil
}

// ActiveTagged is Active with the ETag of the state it belongs to, read
// together; not for the hot path.
func (r *Registry) ActiveTagged() (inference.Model, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	etag := r.etagLocked()
	if a := r.active.Load(); a != nil {
		return a.model, etag
	}
	return nil, etag
}

// Delete removes a staged or archived version: its entry from the index,
// then its artifact (and a .joblib's sidecar) from the artifact store. It
// takes the load lock, so it never races a swap (ErrLoadInProgress while
// a load or another delete runs). The active version is refused
// (ErrModelActive), also when it is recorded active but failed to
// restore: it is restored at the next start.
//
// The index write is the commit point. The index that drops the entry
// lists the artifact under "removing" with its size and checksum; the
// artifact is then removed (the file store renames it to a temp name,
// which start-up sweeps, and unlinks it). A crash after the index write
// therefore never brings the version back: start-up removes a listed
// artifact that still has the recorded size and checksum, before it
// adopts unindexed files. A crash before the index write leaves the
// version listed with its file, as if the delete had not been asked.
//
// Only the artifact at the entry's own name that still has the size and
// checksum the entry recorded is removed (store.ArtifactStore.Delete),
// never a file replaced by hand since, a symbolic link or special file
// put in its place (each is left for start-up to adopt or quarantine),
// never an artifact another entry also names, never an import's original
// path (the entry names the registry's copy) and never anything
// quarantined.
func (r *Registry) Delete(ctx context.Context, version string) error {
	release, err := r.exclusive(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := ctx.Err(); err != nil {
		return err
	}
	rm, shared, shadowCleared, err := r.dropEntry(ctx, version)
	if err != nil {
		return err
	}
	if shadowCleared {
		r.tellClear()
		r.log.Info("shadow cleared: its version is deleted", "version", version)
	}
	if shared {
		r.log.Warn("deleted a version whose file another entry also names; the file stays", "version", version, "file", rm.File)
		return nil
	}
	if r.deleteCommitted != nil {
		r.deleteCommitted()
	}
	if err := r.removeFile(ctx, rm); err != nil {
		r.log.Warn("deleted model's file not removed", "file", rm.File, "err", err)
	}
	r.mu.Lock()
	r.ix.Removing = withoutRemoval(r.ix.Removing, rm.File)
	r.mu.Unlock()
	r.log.Info("model deleted", "version", version, "file", rm.File)
	return nil
}

// dropEntry writes the index without version's entry, its file listed
// under removing (unless another entry names the same file: shared), and
// without the shadow when version is the shadow (shadowCleared).
func (r *Registry) dropEntry(ctx context.Context, version string) (rm store.Removal, shared, shadowCleared bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.ix.Models[version]
	if !ok {
		return store.Removal{}, false, false, fmt.Errorf("%w: version %q is not in the registry", ErrModelNotFound, version)
	}
	if e.Status == StatusActive || r.ix.Active == version {
		return store.Removal{}, false, false, fmt.Errorf("%w: version %q is the active model; activate another version first", ErrModelActive, version)
	}
	rm = store.Removal{File: e.File, SizeBytes: e.SizeBytes, SHA256: e.SHA256}
	next := r.ix.Clone()
	delete(next.Models, version)
	for _, other := range next.Models {
		if other.File == e.File {
			shared = true
		}
	}
	if !shared {
		next.Removing = append(withoutRemoval(next.Removing, rm.File), rm)
	}
	if next.Shadow == version {
		next.Shadow, shadowCleared = "", true
	}
	if err := r.commit(ctx, next); err != nil {
		return store.Removal{}, false, false, err
	}
	if shadowCleared {
		r.shadow.problem, r.shadow.restored = "", nil
	}
	return rm, shared, shadowCleared, nil
}

func withoutRemoval(list []store.Removal, file string) []store.Removal {
	out := list[:0:0]
	for _, rm := range list {
		if rm.File != file {
			out = append(out, rm)
		}
	}
	return out
}

// removeFile removes a deleted entry's artifact (and a .joblib's
// sidecar) when it still holds the bytes the entry recorded: the
// artifact store removes nothing else (store.ArtifactStore.Delete; the
// file store puts back a symbolic link, a special file or a file replaced
// by hand, and start-up adopts or quarantines it). The delete is
// committed: the check runs to its end even if the caller has gone.
func (r *Registry) removeFile(ctx context.Context, rm store.Removal) error {
	return r.artifacts.Delete(context.WithoutCancel(ctx), rm.File, store.Fingerprint{SizeBytes: rm.SizeBytes, SHA256: rm.SHA256})
}

// finishRemovals, at start-up, removes the artifacts of entries deleted
// just before a crash: each listed artifact that no entry names and that
// still has the size and checksum recorded when it was deleted
// (removeFile checks them). Other content (put there by hand since) is
// left for adoption. It reports whether the list was non-empty (the
// caller rewrites the index).
func (r *Registry) finishRemovals(ctx context.Context) bool {
	if len(r.ix.Removing) == 0 {
		return false
	}
	named := map[string]bool{}
	for _, e := range r.ix.Models {
		named[e.File] = true
	}
	present, err := r.artifactNames(ctx)
	if err != nil {
		r.log.Warn("the model files cannot be listed; the deleted ones left by a crash are removed at a later start", "err", err)
		return false
	}
	for _, rm := range r.ix.Removing {
		if named[rm.File] || !present[rm.File] {
			continue
		}
		if err := r.removeFile(ctx, rm); err != nil {
			r.log.Warn("a deleted model's file was not removed; it is adopted or quarantined instead", "file", rm.File, "err", err)
			continue
		}
		r.log.Warn("removed the file of a model deleted just before the last stop", "file", rm.File)
	}
	r.ix.Removing = nil
	return true
}
