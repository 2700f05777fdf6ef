package server

import (
	"context"
	"errors"
	"fmt"

	"ramanserve/evidence"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/shadow"
)

// openEvidence opens the prediction log in the registry directory and
// starts the shadow scorer, whose records the evidence collector writes
// into the log. The collector is the prediction channel's log hook (serve
// hands it to the channel). The registry's shadow version is followed by
// the scorer (Registry.FollowShadow), so the two never disagree. With the
// log off (-prediction-log=false) the shadow still runs, for its
// comparison only, and the routes that read the log answer 501.
func (a *App) openEvidence(ctx context.Context) error {
	cfg := a.cfg.Evidence
	var rec predlog.Recorder // nil: the log is off
	if !cfg.LogOff {
		log, err := sqlitelog.OpenLog(ctx, a.Registry.Dir(), predlog.Options{
			Retention:    cfg.Retention,
			MaxBytes:     cfg.MaxBytes,
			IdlePriority: cfg.IdlePriority,
			Logger:       a.log.With("component", "prediction-log"),
		})
		if err != nil {
			return fmt.Errorf("prediction log: %w", err)
		}
		a.predlog = log
		a.api.Predictions = predictionService{log: log}
		a.api.PredictionLog = log
		rec = log
	}
	a.collector = evidence.New(evidence.Options{Log: rec, LogSpectra: cfg.LogSpectra && !cfg.LogOff})
	a.shadow = shadow.New(shadow.Options{Sink: a.collector, IdlePriority: cfg.IdlePriority, Logger: a.log.With("component", "shadow")})
	a.collector.SetShadow(a.shadow)
	a.api.Shadow = a.shadow
	if err := a.Registry.FollowShadow(a.shadow); err != nil {
		return fmt.Errorf("shadow: %w", err)
	}
	return nil
}

// closeEvidence closes, once the prediction channel has drained and the
// training worker stopped, the shadow scorer first (it writes into the
// log), then the log (it commits what is queued).
func (a *App) closeEvidence(ctx context.Context) error {
	var errShadow, errLog error
	if a.shadow != nil {
		if errShadow = a.shadow.Close(ctx); errShadow != nil {
			errShadow = fmt.Errorf("shadow scorer: %w", errShadow)
		}
	}
	if a.predlog != nil {
		if errLog = a.predlog.Close(ctx); errLog != nil {
			errLog = fmt.Errorf("prediction log: %w", errLog)
		}
	}
	return errors.Join(errShadow, errLog)
}
