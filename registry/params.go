package registry

import (
	"context"
	"fmt"
	"path"
	"runtime/debug"

	"ramanserve/inference"
	"ramanserve/inference/modelfile"
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
