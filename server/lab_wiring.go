package server

import (
	"context"
	"fmt"

	"ramanserve/evidence/labstore"
	"ramanserve/evidence/reconcile"
)

// openLab opens the lab result store (lab-results.db in the registry
// directory) and serves the lab routes through a Reconciler over it and
// the prediction log. It runs after openEvidence: it needs the log, and
// without one (-prediction-log=false) the lab routes answer 501.
func (a *App) openLab(ctx context.Context) error {
	if a.predlog == nil {
		return nil // the log is off: lab results have nothing to match
	}
	store, err := labstore.Open(ctx, a.Registry.Dir())
	if err != nil {
		return fmt.Errorf("lab results: %w", err)
	}
	rec, err := reconcile.New(a.predlog, store, reconcile.Options{MatchWindow: a.cfg.Evidence.MatchWindow})
	if err != nil {
		store.Close()
		return fmt.Errorf("lab results: %w", err)
	}
	a.labstore = store
	a.api.Lab = labService{Reconciler: rec, log: a.predlog}
	a.api.LabReports = rec
	return nil
}

// closeLab closes the lab result store, after the HTTP server (its only
// user) has stopped.
func (a *App) closeLab() error {
	if a.labstore == nil {
		return nil
	}
	if err := a.labstore.Close(); err != nil {
		return fmt.Errorf("lab results: %w", err)
	}
	return nil
}
