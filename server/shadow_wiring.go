package server

import (
	"context"
	"fmt"

	"ramanserve/inference/shadow"
)

// TEMPORARY (branch i13-shadow), until the core wiring of issue 13
// (i13-core) lands: it starts the shadow scorer without a sink (its
// comparison only, nothing logged) so that /model/shadow works. The core
// wiring replaces this file: it creates the scorer with the evidence
// package's sink, attaches it with Registry.FollowShadow, sets api.Shadow,
// and closes it in shutdown after the channel drained, before the log.

// startShadow creates the scorer and makes it follow the registry's shadow
// (the one restored at start-up first).
func (a *App) startShadow() error {
	a.shadow = shadow.New(shadow.Options{Logger: a.log.With("component", "shadow")})
	a.api.Shadow = a.shadow
	if err := a.Registry.FollowShadow(a.shadow); err != nil {
		return fmt.Errorf("shadow: %w", err)
	}
	return nil
}

// stopShadow scores what is queued and stops the scorer.
func (a *App) stopShadow(ctx context.Context) error {
	if a.shadow == nil {
		return nil
	}
	if err := a.shadow.Close(ctx); err != nil {
		return fmt.Errorf("shadow: %w", err)
	}
	return nil
}
