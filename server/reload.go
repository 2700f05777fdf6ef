package server

import (
	"context"
	"errors"
)

// Reload re-reads what an operator may change without a restart (SIGHUP):
// the bearer tokens, the TLS certificates and the CurveZMQ client
// allowlist. Each part that fails to read keeps its previous value, and
// its error is returned; the others still take effect.
func (a *App) Reload(ctx context.Context) error {
	return errors.Join(a.reloadAuth(ctx), a.reloadTLS(ctx), a.reloadCurveClients(ctx))
}
