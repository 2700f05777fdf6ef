package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime/debug"

	"ramanserve/inference"
	"ramanserve/inference/modelfile"
	"ramanserve/registry/store"
)

// ReadParams reads the parameters of one version from its artifact,
// whatever its status, without activating it (for the review page). The
// artifact is checked like a load: the size and SHA-256 the index
// recorded, else ErrModelCorrupted; the artifact store hands out the
// bytes it checked (store.ArtifactStore.Open), so a file replaced between
// the check and the read is never read. A version deleted meanwhile is
// ErrModelNotFound, as is one that was never in the registry.
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
	art, err := r.artifacts.Open(ctx, e.File, fingerprint(e), max(r.opts.MaxImportBytes, maxArtifactBytes))
	if err != nil {
		return nil, artifactError(e, err)
	}
	defer art.Close()
	// A reader fault on a hostile file must not take the server down.
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("model reader panicked", "version", e.Version, "file", e.File, "panic", v, "stack", string(debug.Stack()))
			p, err = nil, fmt.Errorf("%w: %s could not be read (reader fault: %v)", inference.ErrModelCorrupted, path.Base(e.File), v)
		}
	}()
	return modelfile.Read(ctx, art, art.Size(), path.Ext(e.File), e.Target)
}

// ReadArtifact returns one version's file as the registry stores it, with
// its extension (".npz" or ".joblib"), checked like ReadParams: the size
// and SHA-256 the index recorded, else ErrModelCorrupted;
// ErrModelNotFound for a version that is not, or no longer, in the
// registry. What it reads is bounded by the recorded size.
func (r *Registry) ReadArtifact(ctx context.Context, version string) ([]byte, string, error) {
	e, err := r.Describe(version)
	if err != nil {
		return nil, "", err
	}
	b, err := r.readEntryBytes(ctx, &e)
	if err != nil {
		if _, derr := r.Describe(version); derr != nil {
			return nil, "", derr // deleted while it was being read
		}
		return nil, "", err
	}
	return b, path.Ext(e.File), nil
}

func (r *Registry) readEntryBytes(ctx context.Context, e *Entry) ([]byte, error) {
	art, err := r.artifacts.Open(ctx, e.File, fingerprint(e), max(r.opts.MaxImportBytes, maxArtifactBytes))
	if err != nil {
		return nil, artifactError(e, err)
	}
	defer art.Close()
	b := make([]byte, art.Size())
	if _, err := art.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && len(b) == 0) {
		return nil, fmt.Errorf("%w: read %s: %w", store.ErrRegistry, e.File, err)
	}
	return b, nil
}
