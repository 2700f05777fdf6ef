// Package evidence holds the use cases of the evidence a model is judged
// on: lab results reconciled with the prediction log, a version's
// performance, and whether the log holds a version's predictions. The
// transports call it; it knows nothing of HTTP.
package evidence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
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
	logger   *slog.Logger

	// refresh makes one recomputation of the agreement at a time, so that
	// a slower, older one never replaces a newer one.
	refresh   sync.Mutex
	agreement atomic.Pointer[[]Agreement]
}

// NewLab returns the lab's use cases over a reconciler, the log it reads
// and the registry's versions; logger takes what a post cannot report
// (a failed recomputation of the agreement).
func NewLab(rec *reconcile.Reconciler, log predlog.Reader, versions Versions, logger *slog.Logger) *Lab {
	return &Lab{Reconciler: rec, log: log, versions: versions, logger: logger}
}

// AgreementWindow is how far back Agreement reaches: the lab results of
// the spectra logged in the last seven days, long enough for several
// batches, short enough to show a model that has started to drift.
const AgreementWindow = 7 * 24 * time.Hour

// Agreement is one version's agreement with the lab on one analyte over
// the lab results of AgreementWindow (reconcile.Stats).
type Agreement struct {
	Version string
	Analyte inference.Analyte
	// N is the number of pairs, at least 1.
	N int
	// Bias (predicted minus lab) and RMSEP, in g/L.
	Bias, RMSEP float64
}

// Post matches records to logged predictions and keeps them
// (reconcile.Reconciler.Post); when a record matched, it recomputes the
// agreement. A recomputation that fails is logged and the previous
// figures stay: the post itself is stored and answered.
func (l *Lab) Post(ctx context.Context, records []reconcile.LabRecord) (reconcile.PostResult, error) {
	res, err := l.Reconciler.Post(ctx, records)
	if err != nil || res.Matched == 0 {
		return res, err
	}
	if err := l.RefreshAgreement(ctx); err != nil {
		l.logger.Warn("lab agreement not recomputed after a post; the previous figures stay", "err", err)
	}
	return res, nil
}

// RefreshAgreement recomputes the agreement of every version with the
// lab over AgreementWindow, ending now.
func (l *Lab) RefreshAgreement(ctx context.Context) error {
	l.refresh.Lock()
	defer l.refresh.Unlock()
	all, err := l.AllVersions(ctx, time.Now().Add(-AgreementWindow), time.Time{})
	if err != nil {
		return err
	}
	var out []Agreement
	for _, vs := range all {
		for _, as := range vs.Analytes {
			if as.N == 0 || as.Bias == nil || as.RMSEP == nil {
				continue
			}
			out = append(out, Agreement{Version: vs.Version, Analyte: as.Analyte, N: as.N, Bias: *as.Bias, RMSEP: *as.RMSEP})
		}
	}
	l.agreement.Store(&out)
	return nil
}

// Agreement returns the figures of the last recomputation (none before
// the first), leaving out the versions no longer in the registry: a
// deleted version's figures go with it, so the versions reported are
// bounded by the registry.
func (l *Lab) Agreement() []Agreement {
	p := l.agreement.Load()
	if p == nil {
		return nil
	}
	out := make([]Agreement, 0, len(*p))
	for _, a := range *p {
		if _, err := l.versions.Describe(a.Version); err == nil {
			out = append(out, a)
		}
	}
	return out
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
