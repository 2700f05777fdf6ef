package server

import (
	"context"
	"fmt"
	"log/slog"

	"ramanserve/server/zmtp"
	"ramanserve/server/zmtp/curve"
)

// CurveConfig turns CurveZMQ (RFC 26) on for the prediction channel
// (-zmq-curve-secret-key, -zmq-curve-clients). With it on, NULL peers
// are refused.
type CurveConfig struct {
	// SecretKeyFile holds the server's secret key in Z85. Empty: NULL.
	SecretKeyFile string
	// ClientsFile lists the client public keys (Z85, one per line) that
	// may connect. Empty: any client that knows the server key.
	ClientsFile string
	// HelloRate and HelloBurst bound the HELLOs answered per source
	// address (zmtp.CurveConfig); 0 takes the defaults, a negative rate
	// turns the limit off.
	HelloRate  float64
	HelloBurst int
}

// curveAccess is the prediction channel's CURVE state: the server's secret
// key, read once at start, and the client allowlist, which SIGHUP
// replaces as a whole while handshakes read it.
type curveAccess struct {
	secret      curve.SecretKey
	clientsFile string
	helloRate   float64
	helloBurst  int
	clients     *curve.Allowlist // nil: no allowlist, any client
	log         *slog.Logger
}

// loadCurve reads the secret key (a file group or others may read is
// refused) and the allowlist. Nil without a secret key file: NULL.
func loadCurve(cfg CurveConfig, log *slog.Logger) (*curveAccess, error) {
	if cfg.SecretKeyFile == "" {
		if cfg.ClientsFile != "" {
			return nil, fmt.Errorf("a CurveZMQ client allowlist (%s) needs the server's secret key", cfg.ClientsFile)
		}
		return nil, nil
	}
	secret, err := curve.ReadSecretKeyFile(cfg.SecretKeyFile)
	if err != nil {
		return nil, fmt.Errorf("CurveZMQ secret key: %w", err)
	}
	c := &curveAccess{secret: secret, clientsFile: cfg.ClientsFile, helloRate: cfg.HelloRate, helloBurst: cfg.HelloBurst, log: log}
	if cfg.ClientsFile != "" {
		c.clients = curve.NewAllowlist(nil)
		if _, err := c.reloadClients(); err != nil {
			return nil, err
		}
	}
	log.Info("CurveZMQ on: NULL peers are refused", "public_key", secret.Public().String(), "allowlist", cfg.ClientsFile)
	return c, nil
}

// transport is the ZMTP server's CURVE configuration.
func (c *curveAccess) transport() *zmtp.CurveConfig {
	tc := &zmtp.CurveConfig{Secret: c.secret, HelloRate: c.helloRate, HelloBurst: c.helloBurst}
	if c.clients != nil {
		tc.Allow = c.clients.Allowed
	}
	return tc
}

// reloadClients reads the allowlist file and swaps it in whole. A file
// that does not read or parse leaves the list in force as it was.
func (c *curveAccess) reloadClients() (int, error) {
	keys, err := curve.ReadPublicKeysFile(c.clientsFile)
	if err != nil {
		return 0, fmt.Errorf("CurveZMQ client allowlist: %w", err)
	}
	c.clients.Replace(keys)
	n := c.clients.Len()
	if n == 0 {
		c.log.Warn("the CurveZMQ client allowlist is empty: every client is refused", "file", c.clientsFile)
	}
	return n, nil
}

// reloadCurveClients re-reads the client allowlist (SIGHUP). Connections
// already established stay; the new list decides every later handshake.
func (t *Transports) reloadCurveClients(ctx context.Context) error {
	if t.channel == nil || t.channel.curve == nil || t.channel.curve.clientsFile == "" {
		return nil
	}
	n, err := t.channel.curve.reloadClients()
	if err != nil {
		return fmt.Errorf("%w; the previous list stays in force", err)
	}
	t.log.Info("CurveZMQ client allowlist reloaded", "file", t.channel.curve.clientsFile, "clients", n)
	return nil
}
