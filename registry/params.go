package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"ramanserve/inference"
	"ramanserve/inference/modelfile"
	"ramanserve/platform/regularfile"
)

// ReadParams reads the parameters of one version from its file, whatever
// its status, without activating it (for the review page). The file is
// checked like a load: a regular file (no symbolic link is followed) of
// the size and SHA-256 the index recorded, else ErrModelCorrupted. It is
// opened once, and the bytes that are hashed are the bytes that are
// parsed, so a file replaced between the check and the read is never
// read. A version deleted meanwhile is ErrModelNotFound, as is one that
// was never in the registry.
//
// What it reads is bounded by the recorded size (and, for a .joblib, by
// the reader's own decompression limit); no lock is taken, so a page can
// be read during a load or a training.
func (r *Registry) ReadParams(ctx context.Context, version string) (*inference.PLSParams, error) {
	e, err := r.Describe(version)
	if err != nil {
		return nil, err
	}
	p, err := r.readEntryParams(ctx, &e)
	if err != nil {
		if _, derr := r.Describe(version); derr != nil {
			return nil, derr // deleted while it was being read
		}
		return nil, err
	}
	p.Meta.Version = e.Version
	if p.Meta.TrainedAt.IsZero() {
		p.Meta.TrainedAt = e.TrainedAt
	}
	return p, nil
}

func (r *Registry) readEntryParams(ctx context.Context, e *Entry) (p *inference.PLSParams, err error) {
	full := filepath.Join(r.dir, filepath.FromSlash(e.File))
	f, st, err := regularfile.Open(full)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s is listed but its file %s is missing", inference.ErrModelCorrupted, e.Version, e.File)
		}
		return nil, fmt.Errorf("%w: %w", inference.ErrModelCorrupted, err)
	}
	defer f.Close()
	size := st.Size()
	if err := r.checkOpenFile(ctx, f, size, e); err != nil {
		return nil, err
	}
	// A reader fault on a hostile file must not take the server down.
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("model reader panicked", "version", e.Version, "file", e.File, "panic", v, "stack", string(debug.Stack()))
			p, err = nil, fmt.Errorf("%w: %s could not be read (reader fault: %v)", inference.ErrModelCorrupted, filepath.Base(full), v)
		}
	}()
	return modelfile.Read(ctx, io.NewSectionReader(f, 0, size), size, filepath.Ext(full), e.Target)
}

// checkOpenFile compares the open file with the size and SHA-256 the
// index recorded for the entry.
func (r *Registry) checkOpenFile(ctx context.Context, f *os.File, size int64, e *Entry) error {
	limit := e.SizeBytes
	if limit <= 0 {
		limit = max(r.opts.MaxImportBytes, maxArtifactBytes)
	}
	if size > limit || (e.SizeBytes > 0 && size != e.SizeBytes) {
		return fmt.Errorf("%w: %s is %d bytes, the index recorded %d", inference.ErrModelCorrupted, e.File, size, e.SizeBytes)
	}
	if e.SHA256 == "" {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, &ctxReader{ctx: ctx, r: io.NewSectionReader(f, 0, size)}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: read %s: %w", inference.ErrModelCorrupted, e.File, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != e.SHA256 {
		return fmt.Errorf("%w: %s does not match the checksum recorded when it was written (sha256 %s, recorded %s)", inference.ErrModelCorrupted, e.File, sum, e.SHA256)
	}
	return nil
}
