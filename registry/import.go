package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/ctxio"
	"ramanserve/platform/regularfile"
	"ramanserve/registry/store"
)

// CheckImportPath applies the file-load rules before any byte of the file is
// read: the path must be absolute, contain no ".." element, end in
// ".joblib", and, once every symlink is resolved, lie under an allowed root.
// It returns the resolved path. Errors wrap ErrPathNotAllowed, or
// ErrModelNotFound for an allowed path where no file exists.
func (r *Registry) CheckImportPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %q is not an absolute path", ErrPathNotAllowed, p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q contains a '..' element", ErrPathNotAllowed, p)
		}
	}
	if !strings.HasSuffix(p, ".joblib") {
		return "", fmt.Errorf("%w: %q does not end in .joblib", ErrPathNotAllowed, p)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && r.underRoot(filepath.Clean(p)) {
			return "", fmt.Errorf("%w: no file at %q", ErrModelNotFound, p)
		}
		return "", fmt.Errorf("%w: %q cannot be resolved under an allowed root", ErrPathNotAllowed, p)
	}
	if !r.underRoot(resolved) {
		return "", fmt.Errorf("%w: %q resolves to %q, outside the allowed roots", ErrPathNotAllowed, p, resolved)
	}
	if !strings.HasSuffix(resolved, ".joblib") {
		return "", fmt.Errorf("%w: %q resolves to a file not ending in .joblib", ErrPathNotAllowed, p)
	}
	return resolved, nil
}

func (r *Registry) underRoot(p string) bool {
	for _, root := range r.roots {
		rel, err := filepath.Rel(root, p)
		if err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// importFile stores an allowed .joblib file (and its optional sidecar)
// as the artifact of the requested version. The stored copy is what gets
// opened, so the registry serves exactly the bytes it lists. The sidecar
// is read and checked before anything is stored, and stored before the
// artifact, so a crash never leaves an imported artifact without the
// sidecar it came with.
func (r *Registry) importFile(ctx context.Context, req LoadRequest) (*Entry, error) {
	if req.Path == "" {
		return nil, fmt.Errorf("%w: source \"file\" requires a path", ErrPathNotAllowed)
	}
	resolved, err := r.CheckImportPath(req.Path)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	_, taken := r.ix.Models[req.Version]
	r.mu.Unlock()
	if taken {
		return nil, fmt.Errorf("%w: version %q is already in the registry; choose a new name", ErrVersionExists, req.Version)
	}
	name := store.ModelsDir + "/" + req.Version + ".joblib"
	if r.artifactOrSidecarExists(ctx, name) {
		// A file put there by hand since start-up: never overwrite it.
		return nil, versionFileExists(name)
	}
	src, err := openImport(resolved)
	if err != nil {
		return nil, err
	}
	defer src.f.Close()
	if src.size > r.opts.MaxImportBytes {
		return nil, fmt.Errorf("%w: %q is %d bytes, over the %d-byte limit", inference.ErrModelCorrupted, resolved, src.size, r.opts.MaxImportBytes)
	}
	entry := &Entry{
		Version: req.Version, Status: StatusStaged, File: name,
		TrainedAt: src.mtime.UTC(), ImportedFrom: req.Path, AuthenticatedAs: req.AuthenticatedAs, AddedAt: r.opts.Now().UTC(),
	}
	side, err := r.readImportSidecar(resolved)
	if err != nil {
		return nil, err
	}
	if side != nil {
		sc, err := parseSidecar(side, filepath.Base(resolved)+".json")
		if err != nil {
			return nil, err
		}
		if !sc.trainedAt.IsZero() {
			entry.TrainedAt = sc.trainedAt
		}
		entry.Target = sc.target
		if err := r.artifacts.PutSidecar(ctx, name, side); err != nil {
			return nil, importStoreError(name, resolved, err)
		}
	}
	limit := r.opts.MaxImportBytes
	size, sum, err := r.artifacts.Put(ctx, name, func(w io.Writer) error {
		n, err := io.Copy(w, ctxio.Reader(ctx, io.LimitReader(src.f, limit+1)))
		if err == nil && n > limit {
			err = fmt.Errorf("%w: %q grew over the %d-byte limit while copying", inference.ErrModelCorrupted, resolved, limit)
		}
		return err
	})
	if err != nil {
		if side != nil && !errors.Is(err, store.ErrArtifactExists) {
			// No artifact was stored: the sidecar put above goes too.
			_ = r.artifacts.Delete(context.WithoutCancel(ctx), name, store.Fingerprint{})
		}
		return nil, importStoreError(name, resolved, err)
	}
	entry.SizeBytes, entry.SHA256 = size, sum
	return entry, nil
}

// artifactOrSidecarExists reports whether the store has an artifact or a
// sidecar named name (a listing or a read it cannot do counts as one: an
// import then stops rather than risk overwriting).
func (r *Registry) artifactOrSidecarExists(ctx context.Context, name string) bool {
	present, err := r.artifactNames(ctx)
	if err != nil || present[name] {
		return true
	}
	_, err = r.artifacts.ReadSidecar(ctx, name)
	return !errors.Is(err, store.ErrArtifactNotFound)
}

func versionFileExists(name string) error {
	return fmt.Errorf("%w: %s already exists in the registry (not yet listed: it is adopted at the next start); choose a new name", ErrVersionExists, name)
}

// importStoreError is the registry's error for a store that refuses an
// import's artifact or sidecar.
func importStoreError(name, src string, err error) error {
	switch {
	case errors.Is(err, store.ErrArtifactExists):
		return versionFileExists(name)
	case errors.Is(err, inference.ErrModelCorrupted), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: copy %q into the registry: %w", store.ErrRegistry, src, err)
}

// importSource is an opened file to import.
type importSource struct {
	f     *os.File
	size  int64
	mtime time.Time
}

// openImport opens a regular file to import. It is opened without
// following a final symlink (it has been resolved already), so a swap
// after the check cannot redirect it; a FIFO planted under an allowed
// root must not block the open (and with it every later load):
// regularfile refuses it without blocking.
func openImport(path string) (importSource, error) {
	f, fi, err := regularfile.Open(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return importSource{}, fmt.Errorf("%w: no file at %q", ErrModelNotFound, path)
	case errors.Is(err, regularfile.ErrNotRegular):
		return importSource{}, fmt.Errorf("%w: %q is not a regular file", ErrPathNotAllowed, path)
	case err != nil:
		return importSource{}, fmt.Errorf("%w: open %q: %w", inference.ErrModelCorrupted, path, err)
	}
	return importSource{f: f, size: fi.Size(), mtime: fi.ModTime()}, nil
}

// readImportSidecar reads the sidecar beside an import (<file>.json),
// when there is one under an allowed root of at most
// store.MaxSidecarBytes; nil when there is none (or it is elsewhere or
// larger: it is then not the import's).
func (r *Registry) readImportSidecar(resolved string) ([]byte, error) {
	path := resolved + ".json"
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, nil
	}
	sidecarResolved, err := filepath.EvalSymlinks(path)
	if err != nil || !r.underRoot(sidecarResolved) || fi.Size() > store.MaxSidecarBytes {
		return nil, nil
	}
	src, err := openImport(sidecarResolved)
	if err != nil {
		return nil, err
	}
	defer src.f.Close()
	if src.size > store.MaxSidecarBytes {
		return nil, fmt.Errorf("%w: %q is %d bytes, over the %d-byte limit", inference.ErrModelCorrupted, sidecarResolved, src.size, store.MaxSidecarBytes)
	}
	b, err := io.ReadAll(io.LimitReader(src.f, store.MaxSidecarBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read the sidecar: %w", inference.ErrModelCorrupted, err)
	}
	if len(b) > store.MaxSidecarBytes {
		return nil, fmt.Errorf("%w: %q grew over the %d-byte limit while being read", inference.ErrModelCorrupted, sidecarResolved, store.MaxSidecarBytes)
	}
	return b, nil
}

// sidecar is what an imported file's sidecar says: its training time
// (zero when not given) and, for a one-target model, the analyte.
type sidecar struct {
	trainedAt time.Time
	target    string
}

// parseSidecar reads an imported file's sidecar, named file, once, at
// import or adoption. A sidecar that is not a JSON object, or whose
// trained_at is not an RFC 3339 time, fails the import: it was put there
// to say something, and silently ignoring it would list the model with
// the wrong date (or serve a one-target model without its analyte).
// Whether target names a known analyte is the model reader's call
// (MODEL_TARGETS_UNKNOWN).
func parseSidecar(b []byte, file string) (sidecar, error) {
	var raw struct {
		TrainedAt *string `json:"trained_at"`
		Target    string  `json:"target"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return sidecar{}, fmt.Errorf("%w: the sidecar %s is not a JSON object: %v", inference.ErrModelCorrupted, file, err)
	}
	sc := sidecar{target: raw.Target}
	if raw.TrainedAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *raw.TrainedAt)
		if err != nil {
			return sidecar{}, fmt.Errorf("%w: the sidecar's trained_at %q is not an RFC 3339 time", inference.ErrModelCorrupted, *raw.TrainedAt)
		}
		sc.trainedAt = t.UTC()
	}
	return sc, nil
}
