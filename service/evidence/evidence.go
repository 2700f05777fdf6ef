// Package evidence holds the use cases of the evidence a model is judged
// on: lab results reconciled with the prediction log, a version's
// performance, and whether the log holds a version's predictions. The
// transports call it; it knows nothing of HTTP.
package evidence

import (
	"context"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
)

// Lab reconciles lab results with the prediction log.
type Lab struct {
	*reconcile.Reconciler
	log predlog.Reader
}

// NewLab returns the lab's use cases over a reconciler and the log it
// reads.
func NewLab(rec *reconcile.Reconciler, log predlog.Reader) *Lab {
	return &Lab{Reconciler: rec, log: log}
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
