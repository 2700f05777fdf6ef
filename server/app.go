package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/evidence"
	"ramanserve/evidence/labstore"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/shadow"
	"ramanserve/registry"
	"ramanserve/server/auth"
	"ramanserve/server/metrics"
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
	Auth           AuthConfig // bearer tokens on the management channel (auth.go)
	Evidence       EvidenceConfig
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

	tokens     *auth.Store // nil: authentication off
	httpServer *http.Server
	httpLn     *connLimitListener
	tls        *managementTLS // nil: plain HTTP (tls.go)
	bodies     *httpHandler
	channel    *predictionChannel
	jobs       *jobs.Manager
	predlog    *predlog.Writer     // the prediction log (evidence_wiring.go)
	shadow     *shadow.Scorer      // the shadow model beside the active one
	collector  *evidence.Collector // the channel's hook into both
	labstore   *labstore.SQLite    // the lab's results (lab_wiring.go)
	metrics    *metrics.Metrics
	done       chan error

	stopping     atomic.Bool // set when Shutdown begins: listener errors are expected then
	shutdownOnce sync.Once
	shutdownErr  error
	shutdownDone chan struct{}
}

// Start binds both ports, then opens the registry, starts training and
// serves both channels. Binding comes first so that a server started by
// mistake on ports in use fails before it writes anything. When a step
// fails, everything already started is undone: listeners closed, training
// stopped. Start returns once both channels are serving.
func Start(ctx context.Context, cfg Config) (_ *App, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &App{cfg: cfg, log: log, done: make(chan error, 2), shutdownDone: make(chan struct{})}
	defer func() {
		if err != nil {
			a.undo()
		}
	}()
	if err := a.loadAuth(); err != nil {
		return nil, err
	}
	if err := a.listen(); err != nil {
		return nil, err
	}
	a.warnWithoutAuth()
	if err := ctx.Err(); err != nil { // a signal during start-up: nothing written yet
		return nil, err
	}
	if err := a.openRegistry(ctx); err != nil {
		return nil, err
	}
	if err := a.openEvidence(ctx); err != nil {
		return nil, err
	}
	if err := a.openLab(ctx); err != nil {
		return nil, err
	}
	if err := a.startTraining(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a.wireRescore()
	if err := a.serve(); err != nil {
		return nil, err
	}
	log.Info("ramanserve started", "http", a.httpLn.Addr().String(), "zmq", a.channel.endpoint(), "registry", a.Registry.Dir(), "version", a.api.ServerVersion)
	return a, nil
}

// listen binds the management port (behind the connection limit) and the
// prediction port, serving neither yet.
func (a *App) listen() error {
	if err := a.loadTLS(); err != nil { // read before binding: a bad file binds nothing
		return err
	}
	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.HTTPAddr, err)
	}
	a.httpLn = newConnLimitListener(ln, a.cfg.HTTP.withDefaults().MaxConnections)
	ch, err := listenChannel(a.cfg.ZMQEndpoint, a.cfg.Channel, a.log.With("component", "channel"))
	if err != nil {
		return fmt.Errorf("prediction channel: %w", err)
	}
	a.channel = ch
	return nil
}

// openRegistry opens the registry (its first write to disk) and the API
// on it.
func (a *App) openRegistry(ctx context.Context) error {
	openers := modelOpeners(a.cfg.Channel)
	if a.cfg.WrapOpen != nil {
		for ext, open := range openers {
			openers[ext] = a.cfg.WrapOpen(open)
		}
	}
	reg, err := registry.Open(ctx, a.cfg.RegistryDir, registry.Options{
		Openers:      openers,
		AllowedRoots: a.cfg.AllowFileRoots,
		Logger:       a.log.With("component", "registry"),
	})
	if err != nil {
		return fmt.Errorf("open registry: %w", err)
	}
	a.Registry = reg
	a.api = &API{Registry: reg, ServerVersion: BuildVersion(), Started: time.Now()}
	return nil
}

// maxHeaderBytes bounds a request's header block (net/http allows 4 KiB
// more; beyond, 431). Our clients send a few hundred bytes; the default
// 1 MiB would let each of the max + 16 connection slots hold about 1 MiB
// of header for ReadHeaderTimeout.
const maxHeaderBytes = 64 << 10

// serve starts both channels on the bound listeners.
func (a *App) serve() error {
	a.metrics = metrics.New(metrics.Sources{Models: a.Registry, Jobs: a.jobs, HTTPConns: a.httpLn, ChannelConns: a.channel,
		PredictionLog: a.api.PredictionLog, Shadow: a.shadow}) // PredictionLog nil: the log is off
	a.api.Metrics = a.metrics
	handler, err := newHTTPHandler(a.api, a.cfg.HTTP, a.log.With("component", "http"))
	if err != nil {
		return err
	}
	a.bodies = handler
	if a.tokens != nil {
		handler.gate = &tokenGate{tokens: a.tokens, health: a.cfg.Auth.Health}
	}
	a.httpServer = &http.Server{
		Handler:           handler,          // the health reserve's gate is inside
		ReadHeaderTimeout: 10 * time.Second, // also the TLS handshake's: net/http gives it the smallest timeout set
		MaxHeaderBytes:    maxHeaderBytes,
		IdleTimeout:       2 * time.Minute,
		ConnContext:       connContext,
		ConnState:         trackState,
		ErrorLog:          httpErrorLog(a.log),
	}
	a.channel.serve(a.Registry, a.api.ServerVersion, a.api.Started, a.metrics.Channel(), a.collector, a.log.With("component", "channel"))
	a.api.ChannelUp = a.channel.up
	go func() {
		err := a.httpServer.Serve(a.httpListener())
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !a.stopping.Load() {
			a.done <- fmt.Errorf("http server: %w", err)
		}
	}()
	return nil
}

// undo releases what a failed Start had started.
func (a *App) undo() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		a.log.Warn("undoing a failed start", "err", err)
	}
}

// HTTPAddr is the bound management address, e.g. "127.0.0.1:5556".
func (a *App) HTTPAddr() string { return a.httpLn.Addr().String() }

// ZMQEndpoint is a connectable prediction endpoint, e.g. "tcp://127.0.0.1:5555".
func (a *App) ZMQEndpoint() string { return a.channel.endpoint() }

// Done delivers a fatal serving error.
func (a *App) Done() <-chan error { return a.done }

// Shutdown stops accepting on both channels at once, cuts request bodies
// still arriving (their clients get 503 SHUTTING_DOWN), then, all at the
// same time, lets in-flight requests and predicts finish within ctx and
// stops training (a running job is cancelled; queued jobs stay queued).
// What is still open when ctx ends is closed, and ctx's error returned.
// It may be called more than once; later calls wait for the first.
func (a *App) Shutdown(ctx context.Context) error {
	a.shutdownOnce.Do(func() {
		a.shutdownErr = a.shutdown(ctx)
		close(a.shutdownDone)
	})
	select {
	case <-a.shutdownDone:
		return a.shutdownErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *App) shutdown(ctx context.Context) error {
	a.stopping.Store(true)
	// Stop accepting on both channels before draining either.
	if a.httpLn != nil {
		_ = a.httpLn.Close()
	}
	chDrained := make(chan error, 1)
	if a.channel != nil {
		go func() { chDrained <- a.channel.shutdown(ctx) }() // closes its listener first thing
	} else {
		chDrained <- nil
	}
	if a.bodies != nil {
		a.bodies.abortBodies()
	}
	if a.httpLn != nil {
		a.httpLn.endConnsWithoutRequest()
	}
	trainingStopped := make(chan error, 1)
	go func() { trainingStopped <- a.stopTraining(ctx) }()
	var errHTTP error
	if a.httpServer != nil {
		if errHTTP = a.httpServer.Shutdown(ctx); errHTTP != nil {
			// The grace ran out: cut the connections still open.
			_ = a.httpServer.Close()
			errHTTP = fmt.Errorf("http: %w", errHTTP)
		}
	}
	errCh := <-chDrained
	errTrain := <-trainingStopped
	if errTrain != nil {
		errTrain = fmt.Errorf("training: %w", errTrain)
	}
	// No predict and no job writes records any more: the shadow scores
	// what is queued, then the log commits it.
	errEvidence := a.closeEvidence(ctx)
	errLab := a.closeLab()
	// Last: the training worker writes job records until it stops. Closing
	// releases the registry's directory lock.
	var errReg error
	if a.Registry != nil {
		errReg = a.Registry.Close()
	}
	return errors.Join(errHTTP, errCh, errTrain, errEvidence, errLab, errReg)
}
