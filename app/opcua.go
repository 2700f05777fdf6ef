package app

import (
	"context"
	"fmt"
	"path/filepath"

	"ramanserve/server"
	"ramanserve/server/opcua"
	"ramanserve/service/live"
)

// startOPCUA starts the OPC UA server on the live feed the prediction
// channel fills (-opcua-addr), once both channels serve.
func (a *App) startOPCUA() error {
	cfg := a.cfg.OPCUA
	if cfg.Addr == "" {
		return nil
	}
	opts := opcua.Options{
		Addr:           cfg.Addr,
		AllowInsecure:  cfg.AllowInsecure,
		Feed:           a.liveFeed,
		UncertainBelow: cfg.UncertainBelow,
		ServerVersion:  server.BuildVersion(),
		Logger:         a.log.With("component", "opcua"),
		Status:         a.opcuaStatus,
	}
	if cfg.CertFile != "" || cfg.KeyFile != "" {
		der, key, err := opcua.LoadKeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return err
		}
		opts.Certificate, opts.Key = der, key
	}
	if cfg.TrustedDir != "" {
		rejected := cfg.RejectedDir
		if rejected == "" {
			rejected = filepath.Join(filepath.Dir(filepath.Clean(cfg.TrustedDir)), "rejected")
		}
		opts.Trust = &opcua.TrustList{Trusted: cfg.TrustedDir, Rejected: rejected, Log: opts.Logger}
	}
	if tokens := a.transports.Tokens(); tokens != nil {
		opts.Users = tokens
	}
	srv, err := opcua.Start(opts)
	if err != nil {
		return fmt.Errorf("opc ua: %w", err)
	}
	a.opcua = srv
	return nil
}

// opcuaStatus is what the OPC UA Server folder shows.
func (a *App) opcuaStatus() opcua.Status {
	var st opcua.Status
	if m := a.Registry.Active(); m != nil {
		st.Active = m.Metadata().Version
	}
	st.Shadow = a.Registry.Shadow()
	st.Ready = a.ready != nil && len(a.ready.Reasons(context.Background())) == 0
	return st
}

// newLiveFeed is the prediction channel's hand-off to the OPC UA server;
// nil when it is off, so the channel hands nothing over.
func (a *App) newLiveFeed() {
	if a.cfg.OPCUA.Addr != "" {
		a.liveFeed = live.NewFeed(live.DefaultMaxSources)
	}
}

// OPCUA is the OPC UA server; nil when it is off.
func (a *App) OPCUA() *opcua.Server { return a.opcua }
