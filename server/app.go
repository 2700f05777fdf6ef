package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"

	"ramanserve/inference/registry"
	"ramanserve/trainer/jobs"
)

// Config is the whole server configuration; cmd/ramanserve fills it from
// flags and RAMAN_* environment variables.
type Config struct {
	HTTPAddr       string   // e.g. ":5556"
	ZMQEndpoint    string   // e.g. "tcp://*:5555"
	RegistryDir    string   // e.g. "./var/registry"
	AllowFileRoots []string // empty: the registry's import/ folder
	HTTP           HTTPConfig
	Channel        ChannelConfig
	Training       TrainingConfig
	Logger         *slog.Logger
	// WrapOpen, when set, wraps every model reader. It is a test seam: the
	// conformance suite uses it to make a load reliably slow.
	WrapOpen func(registry.OpenFunc) registry.OpenFunc
}

// App is one running server process: registry, management HTTP server and
// prediction channel. It is used by cmd/ramanserve and, in-process, by the
// conformance suite.
type App struct {
	cfg      Config
	log      *slog.Logger
	Registry *registry.Registry
	api      *API

	httpServer *http.Server
	httpLn     net.Listener
	channel    *predictionChannel
	jobs       *jobs.Manager
	done       chan error
}

// Start opens the registry, binds both channels and starts serving. It
// returns once both listeners are bound.
func Start(ctx context.Context, cfg Config) (*App, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	openers := modelOpeners(cfg.Channel)
	if cfg.WrapOpen != nil {
		for ext, open := range openers {
			openers[ext] = cfg.WrapOpen(open)
		}
	}
	reg, err := registry.Open(ctx, cfg.RegistryDir, registry.Options{
		Openers:      openers,
		AllowedRoots: cfg.AllowFileRoots,
		Logger:       log.With("component", "registry"),
	})
	if err != nil {
		return nil, fmt.Errorf("open registry: %w", err)
	}
	a := &App{cfg: cfg, log: log, Registry: reg, done: make(chan error, 2)}
	a.api = &API{Registry: reg, ServerVersion: BuildVersion(), Started: time.Now()}
	if err := a.startTraining(ctx); err != nil {
		return nil, err
	}

	ch, err := startChannel(ctx, cfg.ZMQEndpoint, cfg.Channel, reg, a.api.ServerVersion, a.api.Started, log.With("component", "channel"))
	if err != nil {
		return nil, fmt.Errorf("prediction channel: %w", err)
	}
	a.channel = ch
	a.api.ChannelUp = ch.up

	handler, err := NewHTTPHandler(a.api, cfg.HTTP, log.With("component", "http"))
	if err != nil {
		ch.shutdown(context.Background())
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		ch.shutdown(context.Background())
		return nil, fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	ln = netutil.LimitListener(ln, cfg.HTTP.withDefaults().MaxConnections)
	a.httpLn = ln
	a.httpServer = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := a.httpServer.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.done <- fmt.Errorf("http server: %w", err)
		}
	}()
	log.Info("ramanserve started", "http", ln.Addr().String(), "zmq", ch.endpoint(), "registry", reg.Dir(), "version", a.api.ServerVersion)
	return a, nil
}

// HTTPAddr is the bound management address, e.g. "127.0.0.1:5556".
func (a *App) HTTPAddr() string { return a.httpLn.Addr().String() }

// ZMQEndpoint is a connectable prediction endpoint, e.g. "tcp://127.0.0.1:5555".
func (a *App) ZMQEndpoint() string { return a.channel.endpoint() }

// Done delivers a fatal serving error.
func (a *App) Done() <-chan error { return a.done }

// Shutdown stops accepting on both channels, lets in-flight requests
// finish within ctx, and releases everything.
func (a *App) Shutdown(ctx context.Context) error {
	errHTTP := a.httpServer.Shutdown(ctx)
	errCh := a.channel.shutdown(ctx)
	errTrain := a.stopTraining(ctx)
	errReg := a.Registry.Close() // last: the training worker writes job records until it stops
	return errors.Join(errHTTP, errCh, errTrain, errReg)
}
