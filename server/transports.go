package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"ramanserve/server/auth"
	"ramanserve/server/channel"
	"ramanserve/server/metrics"
)

// Config configures the two transports: the management HTTP server and
// the prediction channel.
type Config struct {
	HTTPAddr    string // e.g. ":5556"
	ZMQEndpoint string // e.g. "tcp://*:5555"
	HTTP        HTTPConfig
	Channel     ChannelConfig
	Auth        AuthConfig // bearer tokens on the management channel (auth.go)
}

// Transports are the server's two channels. Listen binds both ports and
// reads their credentials without serving; Serve starts answering on
// services the composition root built in between. Binding first lets a
// server started by mistake on ports in use fail before it writes
// anything.
type Transports struct {
	cfg        Config
	log        *slog.Logger
	tokens     *auth.Store // nil: authentication off
	tls        *managementTLS
	httpLn     *connLimitListener
	channel    *predictionChannel
	httpServer *http.Server
	bodies     *httpHandler
	done       chan error
	stopping   atomic.Bool // set when StopAccepting runs: listener errors are expected then
	// chDrained carries the end of the prediction channel's drain, which
	// StopAccepting starts (it closes the channel's listener first thing)
	// and Drain waits for.
	chDrained chan error
}

// Tokens is the bearer tokens in force, reloaded on SIGHUP; nil when
// authentication is off. The OPC UA server checks user names and
// passwords against it.
func (t *Transports) Tokens() *auth.Store { return t.tokens }

// Listen reads the tokens, the TLS files and the CurveZMQ keys, then binds
// the management port (behind the connection limit) and the prediction
// port. A file that cannot be read binds nothing.
func Listen(cfg Config, log *slog.Logger) (_ *Transports, err error) {
	t := &Transports{cfg: cfg, log: log, done: make(chan error, 1), chDrained: make(chan error, 1)}
	if err := t.loadAuth(); err != nil {
		return nil, err
	}
	if err := t.loadTLS(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	t.httpLn = newConnLimitListener(ln, cfg.HTTP.withDefaults().MaxConnections)
	ch, err := listenChannel(cfg.ZMQEndpoint, cfg.Channel, log.With("component", "channel"))
	if err != nil {
		_ = t.httpLn.Close()
		return nil, fmt.Errorf("prediction channel: %w", err)
	}
	t.channel = ch
	t.warnWithoutAuth()
	return t, nil
}

// maxHeaderBytes bounds a request's header block (net/http allows 4 KiB
// more; beyond, 431). Our clients send a few hundred bytes; the default
// 1 MiB would let each of the max + 16 connection slots hold about 1 MiB
// of header for ReadHeaderTimeout.
const maxHeaderBytes = 64 << 10

// ChannelServices are what the prediction channel answers from.
type ChannelServices struct {
	Models   channel.Models        // the live model and its swaps
	Recorder channel.Recorder      // per-predict metrics
	Log      channel.PredictionLog // evidence hook; nil: nothing is logged
	Live     channel.LiveFeed      // live values (OPC UA); nil: not published
}

// Serve starts both channels: HTTP on api, the prediction channel on ch.
func (t *Transports) Serve(api *API, ch ChannelServices) error {
	api.ChannelUp = t.channel.up
	handler, err := newHTTPHandler(api, t.cfg.HTTP, t.log.With("component", "http"))
	if err != nil {
		return err
	}
	t.bodies = handler
	if t.tokens != nil {
		handler.gate = &tokenGate{tokens: t.tokens, health: t.cfg.Auth.Health}
	}
	t.httpServer = &http.Server{
		Handler:           handler,          // the health reserve's gate is inside
		ReadHeaderTimeout: 10 * time.Second, // also the TLS handshake's: net/http gives it the smallest timeout set
		MaxHeaderBytes:    maxHeaderBytes,
		IdleTimeout:       2 * time.Minute,
		ConnContext:       connContext,
		ConnState:         trackState,
		ErrorLog:          httpErrorLog(t.log),
	}
	t.channel.serve(channel.Options{Models: ch.Models, ServerVersion: api.ServerVersion, Started: api.Started,
		Recorder: ch.Recorder, Log: ch.Log, Live: ch.Live, Logger: t.log.With("component", "channel")})
	go func() {
		err := t.httpServer.Serve(t.httpListener())
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !t.stopping.Load() {
			t.done <- fmt.Errorf("http server: %w", err)
		}
	}()
	return nil
}

// Bound reports why the transports cannot take requests: a port not
// bound (or no longer, once StopAccepting ran); nil when both are.
func (t *Transports) Bound() error {
	switch {
	case t.stopping.Load():
		return errors.New("both ports are closed: the server is shutting down")
	case t.httpServer == nil:
		return errors.New("the management port is not serving yet")
	case t.channel == nil || !t.channel.up():
		return errors.New("the prediction port is not listening")
	}
	return nil
}

// HTTPAddr is the bound management address, e.g. "127.0.0.1:5556".
func (t *Transports) HTTPAddr() string { return t.httpLn.Addr().String() }

// ZMQEndpoint is a connectable prediction endpoint, e.g. "tcp://127.0.0.1:5555".
func (t *Transports) ZMQEndpoint() string { return t.channel.endpoint() }

// Done delivers a fatal serving error.
func (t *Transports) Done() <-chan error { return t.done }

// Conns are the connection counters the metrics read at scrape time.
func (t *Transports) Conns() (httpConns, channelConns metrics.ConnectionCounter) {
	return t.httpLn, t.channel
}

// Reload re-reads what an operator may change without a restart (SIGHUP):
// the bearer tokens, the TLS certificates and the CurveZMQ client
// allowlist. Each part that fails to read keeps its previous value, and
// its error is returned; the others still take effect.
func (t *Transports) Reload(ctx context.Context) error {
	return errors.Join(t.reloadAuth(ctx), t.reloadTLS(ctx), t.reloadCurveClients(ctx))
}

// StopAccepting closes both listeners and cuts request bodies still
// arriving (their clients get 503 SHUTTING_DOWN). Requests and predicts
// in flight go on until ctx ends; Drain waits for them.
func (t *Transports) StopAccepting(ctx context.Context) {
	t.stopping.Store(true)
	if t.httpLn != nil {
		_ = t.httpLn.Close()
	}
	if t.channel != nil {
		// The drain closes the channel's listener at once and lets its
		// predicts finish within ctx.
		go func() { t.chDrained <- t.channel.shutdown(ctx) }()
	} else {
		t.chDrained <- nil
	}
	if t.bodies != nil {
		t.bodies.abortBodies()
	}
	if t.httpLn != nil {
		t.httpLn.endConnsWithoutRequest()
	}
}

// Drain lets in-flight requests and predicts finish within ctx, both
// channels at once; it follows StopAccepting. What is still open when ctx ends is closed, and ctx's
// error returned.
func (t *Transports) Drain(ctx context.Context) error {
	var errHTTP error
	if t.httpServer != nil {
		if errHTTP = t.httpServer.Shutdown(ctx); errHTTP != nil {
			// The grace ran out: cut the connections still open.
			_ = t.httpServer.Close()
			errHTTP = fmt.Errorf("http: %w", errHTTP)
		}
	} else if t.httpLn != nil {
		_ = t.httpLn.Close()
	}
	return errors.Join(errHTTP, <-t.chDrained)
}
