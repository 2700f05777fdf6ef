package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"ramanserve/inference"
)

// Describe returns one version's entry as the index records it (lineage,
// metrics, checksum, size), without opening its file. Like List, an entry
// recorded as active whose model is not serving reads archived.
// ErrModelNotFound when the version is not in the registry.
func (r *Registry) Describe(version string) (Entry, error) {
	r.mu.Lock()
	e, ok := r.ix.Models[version]
	var c Entry
	if ok {
		c = *e
		c.SourceBatches = append([]string(nil), e.SourceBatches...)
		c.Annotations = append(json.RawMessage(nil), e.Annotations...)
	}
	r.mu.Unlock()
	if !ok {
		return Entry{}, fmt.Errorf("%w: version %q is not in the registry", inference.ErrModelNotFound, version)
	}
	if c.Status == StatusActive {
		if m := r.Active(); m == nil || m.Metadata().Version != c.Version {
			c.Status = StatusArchived
		}
	}
	return c, nil
}

// Delete removes a staged or archived version: its entry from the index,
// then its file (and a .joblib's sidecar) from models/. It takes the load
// lock, so it never races a swap (ErrLoadInProgress while a load or
// another delete runs). The active version is refused (ErrModelActive),
// also when it is recorded active but failed to restore: it is restored
// at the next start.
//
// The index write is the commit point. The index that drops the entry
// lists the file under "removing" with its size and checksum; the file is
// then renamed to a temp name (which start-up sweeps) and unlinked. A
// crash after the index write therefore never brings the version back:
// start-up removes a listed file that still has the recorded size and
// checksum, before it adopts unindexed files. A crash before the index
// write leaves the version listed with its file, as if the delete had not
// been asked.
//
// Only a regular file at the entry's own path in models/ that still has
// the size and checksum the entry recorded is removed, never a file
// replaced by hand since, a symbolic link or special file put in its place
// (each is left for start-up to adopt or quarantine), never a file
// another entry also names, never an import's original path (the entry
// names the registry's copy) and never anything in quarantine/.
func (r *Registry) Delete(ctx context.Context, version string) error {
	if !r.loadMu.TryLock() {
		return inference.ErrLoadInProgress
	}
	defer r.loadMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	rm, shared, shadowCleared, err := r.dropEntry(version)
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
func (r *Registry) dropEntry(version string) (rm removal, shared, shadowCleared bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.ix.Models[version]
	if !ok {
		return removal{}, false, false, fmt.Errorf("%w: version %q is not in the registry", inference.ErrModelNotFound, version)
	}
	if e.Status == StatusActive || r.ix.Active == version {
		return removal{}, false, false, fmt.Errorf("%w: version %q is the active model; activate another version first", inference.ErrModelActive, version)
	}
	rm = removal{File: e.File, SizeBytes: e.SizeBytes, SHA256: e.SHA256}
	next := r.ix.clone()
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
	if err := writeIndex(r.dir, next); err != nil {
		return removal{}, false, false, fmt.Errorf("%w: %w", inference.ErrRegistry, err)
	}
	r.ix = next
	if shadowCleared {
		r.shadow.problem, r.shadow.restored = "", nil
	}
	return rm, shared, shadowCleared, nil
}

func withoutRemoval(list []removal, file string) []removal {
	out := list[:0:0]
	for _, rm := range list {
		if rm.File != file {
			out = append(out, rm)
		}
	}
	return out
}

// removeFile unlinks a deleted entry's file, and a .joblib's sidecar,
// when the file still holds the bytes the entry recorded. The file is
// first renamed to a temp name in models/ (one atomic step that takes
// whatever is at the path), then checked to be a regular file with the
// recorded size and checksum before it is unlinked; anything else (a
// symbolic link, a special file, a file replaced by hand) is put back
// where it was, with its sidecar, and left to start-up, which adopts or
// quarantines it; the error says why. The delete is committed: the check
// runs to its end even if the caller has gone.
func (r *Registry) removeFile(ctx context.Context, rm removal) error {
	ctx = context.WithoutCancel(ctx)
	dir := filepath.Join(r.dir, modelsDir)
	name := strings.TrimPrefix(rm.File, modelsDir+"/")
	if err := r.unlinkOwn(ctx, dir, name, rm); err != nil {
		return err
	}
	if filepath.Ext(name) == ".joblib" {
		if err := r.unlinkOwn(ctx, dir, name+".json", removal{}); err != nil {
			r.log.Warn("deleted model's sidecar not removed", "file", rm.File+".json", "err", err)
		}
	}
	_ = SyncDir(dir)
	return nil
}

// unlinkOwn removes dir/name when it is a regular file and, for a model
// file (rm.File set), still has rm's size and checksum. A missing file is
// not an error.
func (r *Registry) unlinkOwn(ctx context.Context, dir, name string, rm removal) error {
	src := filepath.Join(dir, name)
	tmp := filepath.Join(dir, TempPrefix+"deleting-"+name)
	if err := os.Rename(src, tmp); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	why := ""
	if st, err := os.Lstat(tmp); err != nil {
		why = err.Error()
	} else if !st.Mode().IsRegular() {
		why = "not a regular file"
	} else if rm.File != "" && !unchangedSince(ctx, tmp, rm) {
		why = "not the bytes the registry recorded (replaced since it was written)"
	}
	if why == "" {
		return os.Remove(tmp)
	}
	// Not the file the registry wrote: put it back untouched.
	if err := os.Rename(tmp, src); err != nil {
		return fmt.Errorf("%s is %s and could not be put back: %w", name, why, err)
	}
	return fmt.Errorf("%s is %s; left in place", name, why)
}

// unchangedSince reports whether the regular file at path has the size
// and checksum recorded in rm (a removal recorded without a checksum, from
// an entry that had none, is matched by size).
func unchangedSince(ctx context.Context, path string, rm removal) bool {
	size, sum, _, err := digest(ctx, path, max(rm.SizeBytes, 0))
	return err == nil && size == rm.SizeBytes && (rm.SHA256 == "" || sum == rm.SHA256)
}

// finishRemovals, at start-up, removes the files of entries deleted just
// before a crash: each listed file that no entry names and that still has
// the size and checksum recorded when it was deleted (removeFile checks
// them). A file with other content (one put there by hand since) is left
// for adoption. It reports
// whether the list was non-empty (the caller rewrites the index).
func (r *Registry) finishRemovals(ctx context.Context) bool {
	if len(r.ix.Removing) == 0 {
		return false
	}
	named := map[string]bool{}
	for _, e := range r.ix.Models {
		named[e.File] = true
	}
	for _, rm := range r.ix.Removing {
		if named[rm.File] {
			continue
		}
		full := filepath.Join(r.dir, filepath.FromSlash(rm.File))
		if _, err := os.Lstat(full); errors.Is(err, os.ErrNotExist) {
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
