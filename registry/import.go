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
	"ramanserve/platform/regularfile"
)

// maxSidecarBytes bounds the JSON sidecar of an imported file.
const maxSidecarBytes = 1 << 20

// CheckImportPath applies the file-load rules before any byte of the file is
// read: the path must be absolute, contain no ".." element, end in
// ".joblib", and, once every symlink is resolved, lie under an allowed root.
// It returns the resolved path. Errors wrap ErrPathNotAllowed, or
// ErrModelNotFound for an allowed path where no file exists.
func (r *Registry) CheckImportPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %q is not an absolute path", inference.ErrPathNotAllowed, p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q contains a '..' element", inference.ErrPathNotAllowed, p)
		}
	}
	if !strings.HasSuffix(p, ".joblib") {
		return "", fmt.Errorf("%w: %q does not end in .joblib", inference.ErrPathNotAllowed, p)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && r.underRoot(filepath.Clean(p)) {
			return "", fmt.Errorf("%w: no file at %q", inference.ErrModelNotFound, p)
		}
		return "", fmt.Errorf("%w: %q cannot be resolved under an allowed root", inference.ErrPathNotAllowed, p)
	}
	if !r.underRoot(resolved) {
		return "", fmt.Errorf("%w: %q resolves to %q, outside the allowed roots", inference.ErrPathNotAllowed, p, resolved)
	}
	if !strings.HasSuffix(resolved, ".joblib") {
		return "", fmt.Errorf("%w: %q resolves to a file not ending in .joblib", inference.ErrPathNotAllowed, p)
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

// importFile copies an allowed .joblib file (and its optional sidecar) into
// models/ under the requested version. The copy is what gets opened, so
// the registry serves exactly the bytes it lists.
func (r *Registry) importFile(ctx context.Context, req LoadRequest) (*Entry, error) {
	if req.Path == "" {
		return nil, fmt.Errorf("%w: source \"file\" requires a path", inference.ErrPathNotAllowed)
	}
	resolved, err := r.CheckImportPath(req.Path)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	_, taken := r.ix.Models[req.Version]
	r.mu.Unlock()
	if taken {
		return nil, fmt.Errorf("%w: version %q is already in the registry; choose a new name", inference.ErrVersionExists, req.Version)
	}
	rel := "models/" + req.Version + ".joblib"
	dst := filepath.Join(r.dir, filepath.FromSlash(rel))
	if exists(dst) || exists(dst+".json") {
		// A file put there by hand since start-up: never overwrite it.
		return nil, fmt.Errorf("%w: %s already exists in the registry (not yet listed: it is adopted at the next start); choose a new name", inference.ErrVersionExists, rel)
	}
	size, sum, mtime, err := r.copyRegular(ctx, resolved, dst, r.opts.MaxImportBytes)
	if err != nil {
		return nil, err
	}
	entry := &Entry{
		Version: req.Version, Status: StatusStaged, File: rel, SizeBytes: size, SHA256: sum,
		TrainedAt: mtime.UTC(), ImportedFrom: req.Path, AuthenticatedAs: req.AuthenticatedAs, AddedAt: r.opts.Now().UTC(),
	}
	sidecar := resolved + ".json"
	if fi, err := os.Lstat(sidecar); err == nil {
		if sidecarResolved, err := filepath.EvalSymlinks(sidecar); err == nil && r.underRoot(sidecarResolved) && fi.Size() <= maxSidecarBytes {
			if _, _, _, err := r.copyRegular(ctx, sidecarResolved, dst+".json", maxSidecarBytes); err != nil {
				_ = os.Remove(dst)
				return nil, err
			}
			sc, err := readSidecar(dst + ".json")
			if err != nil {
				_ = os.Remove(dst)
				_ = os.Remove(dst + ".json")
				return nil, err
			}
			if !sc.trainedAt.IsZero() {
				entry.TrainedAt = sc.trainedAt
			}
			entry.Target = sc.target
		}
	}
	return entry, nil
}

// sidecar is what an imported file's sidecar says: its training time
// (zero when not given) and, for a one-target model, the analyte.
type sidecar struct {
	trainedAt time.Time
	target    string
}

// readSidecar reads an imported file's sidecar, once, at import. A sidecar
// that is not a JSON object, or whose trained_at is not an RFC 3339 time,
// fails the import: it was put there to say something, and silently
// ignoring it would list the model with the wrong date (or serve a
// one-target model without its analyte). Whether target names a known
// analyte is the model reader's call (MODEL_TARGETS_UNKNOWN).
func readSidecar(path string) (sidecar, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return sidecar{}, fmt.Errorf("%w: read the sidecar: %w", inference.ErrModelCorrupted, err)
	}
	var raw struct {
		TrainedAt *string `json:"trained_at"`
		Target    string  `json:"target"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return sidecar{}, fmt.Errorf("%w: the sidecar %s is not a JSON object: %v", inference.ErrModelCorrupted, filepath.Base(path), err)
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

// copyRegular copies a regular file of at most limit bytes to dst
// atomically and returns its size, SHA-256 and modification time. The
// source is opened without following a final symlink (it has been resolved
// already), so a swap after the check cannot redirect it.
func (r *Registry) copyRegular(ctx context.Context, src, dst string, limit int64) (int64, string, time.Time, error) {
	// A FIFO planted under an allowed root must not block the open (and
	// with it every later load): regularfile refuses it without blocking.
	f, fi, err := regularfile.Open(src)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, "", time.Time{}, fmt.Errorf("%w: no file at %q", inference.ErrModelNotFound, src)
	case errors.Is(err, regularfile.ErrNotRegular):
		return 0, "", time.Time{}, fmt.Errorf("%w: %q is not a regular file", inference.ErrPathNotAllowed, src)
	case err != nil:
		return 0, "", time.Time{}, fmt.Errorf("%w: open %q: %w", inference.ErrModelCorrupted, src, err)
	}
	defer f.Close()
	if fi.Size() > limit {
		return 0, "", time.Time{}, fmt.Errorf("%w: %q is %d bytes, over the %d-byte limit", inference.ErrModelCorrupted, src, fi.Size(), limit)
	}
	n, sum, err := writeStreamAtomic(dst, func(w io.Writer) error {
		_, err := io.Copy(w, &ctxReader{ctx: ctx, r: io.LimitReader(f, limit+1)})
		return err
	})
	if err != nil {
		return 0, "", time.Time{}, fmt.Errorf("%w: copy %q into the registry: %w", inference.ErrRegistry, src, err)
	}
	if n > limit {
		_ = os.Remove(dst)
		return 0, "", time.Time{}, fmt.Errorf("%w: %q grew over the %d-byte limit while copying", inference.ErrModelCorrupted, src, limit)
	}
	return n, sum, fi.ModTime(), nil
}

// ctxReader stops a long copy when the request is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
