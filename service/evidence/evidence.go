// Package evidence holds the use cases of the evidence a model is judged
// on: lab results reconciled with the prediction log, a version's
// performance, and whether the log holds a version's predictions. The
// transports call it; it knows nothing of HTTP.
package evidence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/registry"
)

// ErrUnknownVersion: a performance report names a version that is
// neither in the registry nor in the prediction log.
var ErrUnknownVersion = errors.New("model version unknown")

// Versions is what the lab asks the registry: whether a version is
// registered (registry.ErrModelNotFound when it is not).
type Versions interface {
	Describe(version string) (registry.Entry, error)
}

// Lab reconciles lab results with the prediction log.
type Lab struct {
	*reconcile.Reconciler
	log      predlog.Reader
	versions Versions
}

// NewLab returns the lab's use cases over a reconciler, the log it reads
// and the registry's versions.
func NewLab(rec *reconcile.Reconciler, log predlog.Reader, versions Versions) *Lab {
	return &Lab{Reconciler: rec, log: log, versions: versions}
}

// Performance reports a version's error against the lab over the spectra
// logged in [since, until). The version must be registered, or have
// predictions in the log (a deleted version is still judged on them):
// ErrUnknownVersion otherwise.
func (l *Lab) Performance(ctx context.Context, version string, since, until time.Time) (reconcile.Report, error) {
	if err := l.known(ctx, version); err != nil {
		return reconcile.Report{}, err
	}
	return l.Reconciler.Performance(ctx, version, since, until)
}

func (l *Lab) known(ctx context.Context, version string) error {
	_, err := l.versions.Describe(version)
	if err == nil || !errors.Is(err, registry.ErrModelNotFound) {
		return err
	}
	logged, err := l.Logged(ctx, version)
	if err != nil {
		return err
	}
	if !logged {
		return fmt.Errorf("%w: model version %q is neither in the registry nor in the prediction log", ErrUnknownVersion, version)
	}
	return nil
}

// Logged reports whether the prediction log holds any prediction of
// version.
func (l *Lab) Logged(ctx context.Context, version string) (bool, error) {
	page, err := l.log.Page(ctx, predlog.Filter{ModelVersion: version, Limit: 1})
	if err != nil {
		return false, err
	}
	return len(page.Records) > 0, nil
}
