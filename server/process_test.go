package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"ramanserve/registry"
	"ramanserve/server/metrics"
)

// processConfig is what the transport tests configure: the transports and
// the registry directory they serve.
type processConfig struct {
	HTTPAddr    string
	ZMQEndpoint string
	RegistryDir string
	HTTP        HTTPConfig
	Channel     ChannelConfig
	Auth        AuthConfig
	Logger      *slog.Logger
}

// testProcess is the transports serving a registry, built in the order
// the composition root builds them (bind, then open the registry, then
// serve), without training or evidence: what the transport tests need of
// a running server.
type testProcess struct {
	*Transports
	Registry *registry.Registry
}

func startProcess(ctx context.Context, cfg processConfig) (_ *testProcess, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t, err := Listen(Config{HTTPAddr: cfg.HTTPAddr, ZMQEndpoint: cfg.ZMQEndpoint, HTTP: cfg.HTTP, Channel: cfg.Channel, Auth: cfg.Auth}, log)
	if err != nil {
		return nil, err
	}
	p := &testProcess{Transports: t}
	defer func() {
		if err != nil {
			p.Shutdown(context.Background())
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.Registry, err = registry.Open(ctx, cfg.RegistryDir, registry.Options{Openers: registry.FileOpeners(cfg.Channel.ModelOptions())})
	if err != nil {
		return nil, err
	}
	api := &API{Registry: p.Registry, ServerVersion: BuildVersion(), Started: time.Now()}
	httpConns, channelConns := t.Conns()
	api.Metrics = metrics.New(metrics.Sources{Models: p.Registry, HTTPConns: httpConns, ChannelConns: channelConns})
	if err := t.Serve(api, ChannelServices{Models: p.Registry, Recorder: api.Metrics.Channel()}); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *testProcess) Shutdown(ctx context.Context) error {
	p.StopAccepting(ctx)
	err := p.Drain(ctx)
	if p.Registry != nil {
		err = errors.Join(err, p.Registry.Close())
	}
	return err
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
