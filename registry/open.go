package registry

import (
	"context"
	"fmt"

	"ramanserve/inference"
)

// OpenVersion opens version's model, whatever its status (staged,
// archived or active), through the same checks and readers as a load
// (size, checksum, reader; a reader fault is MODEL_CORRUPTED), without
// serving it: for a job that scores logged spectra with it. It takes no
// load lock: it changes nothing, and a concurrent delete leaves the file
// it already opened readable or fails the open. Unknown or invalid
// version: ErrModelNotFound.
func (r *Registry) OpenVersion(ctx context.Context, version string) (inference.Model, error) {
	if !ValidVersion(version) {
		return nil, fmt.Errorf("%w: version %q is not a valid version name", ErrModelNotFound, version)
	}
	r.mu.Lock()
	e, ok := r.ix.Models[version]
	var c Entry
	if ok {
		c = *e
	}
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: version %q is not in the registry", ErrModelNotFound, version)
	}
	return r.openVerified(ctx, &c)
}
