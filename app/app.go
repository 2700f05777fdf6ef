// Package app is the composition root of a ramanserve process: it binds
// the transports, opens the stores, builds the services on them and
// serves, and on shutdown undoes it all in the reverse order. Nothing
// else builds these pieces; cmd/ramanserve and the conformance suite
// start a process through Start.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"ramanserve/evidence"
	"ramanserve/evidence/batches"
	"ramanserve/evidence/labstore"
	"ramanserve/evidence/labstore/pglab"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/pglog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/reconcile"
	"ramanserve/evidence/shadow"
	"ramanserve/registry"
	"ramanserve/registry/filestore"
	"ramanserve/server"
	"ramanserve/server/contract"
	"ramanserve/server/metrics"
	"ramanserve/server/opcua"
	batchsvc "ramanserve/service/batches"
	evidencesvc "ramanserve/service/evidence"
	"ramanserve/service/live"
	"ramanserve/service/models"
	"ramanserve/service/readiness"
	"ramanserve/service/training"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/jobs/pgjobs"
	"ramanserve/trainer/membudget"
)

// App is one running server process.
type App struct {
	cfg        Config
	log        *slog.Logger
	transports *server.Transports
	// Registry is the model registry the process serves.
	Registry      *registry.Registry
	registryStore io.Closer // the registry's store, closed after the registry
	jobs          *jobs.Manager
	jobKeys       jobs.KeyStore          // the idempotency keys of training uploads
	predlog       *predlog.Writer        // nil: the log is off
	shadow        *shadow.Scorer         // the shadow model beside the active one
	collector     *evidence.Collector    // the channel's hook into both
	labstore      reconcile.LabStore     // nil: the log is off
	references    batches.ReferenceStore // nil: the log is off
	labCloser     io.Closer              // nil: nothing to close (the fleet's database is closed last)
	shared        *sharedStore           // nil: the embedded store
	fleet         *membership            // this process in GET /fleet; nil until built
	ready         *readiness.Service     // GET /readyz; nil until built
	liveFeed      *live.Feed             // the channel's hand-off to the OPC UA server; nil when it is off
	opcua         *opcua.Server          // nil when off

	shutdownOnce chan struct{} // closed by the first Shutdown
	shutdownDone chan struct{}
	shutdownErr  error
}

// Start binds both ports, then opens the registry, the evidence stores
// and the job queue, builds the services and serves both channels. When a
// step fails, everything already started is undone: listeners closed,
// training stopped. Start returns once both channels are serving.
func Start(ctx context.Context, cfg Config) (_ *App, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &App{cfg: cfg, log: log, shutdownOnce: make(chan struct{}, 1), shutdownDone: make(chan struct{})}
	a.shutdownOnce <- struct{}{}
	defer func() {
		if err != nil {
			a.undo()
		}
	}()
	if a.transports, err = server.Listen(cfg.transports(), log); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil { // a signal during start-up: nothing written yet
		return nil, err
	}
	if cfg.Store != "" {
		if a.shared, err = openShared(ctx, cfg.Store, log); err != nil {
			return nil, err
		}
	}
	if err := a.openRegistry(ctx); err != nil {
		return nil, err
	}
	if err := a.openEvidence(ctx); err != nil {
		return nil, err
	}
	lab, err := a.openLab(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.startTraining(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a.fleet, err = a.openFleet(); err != nil {
		return nil, err
	}
	if err := a.serve(lab); err != nil {
		return nil, err
	}
	a.fleet.join()
	log.Info("ramanserve started", "http", a.HTTPAddr(), "zmq", a.ZMQEndpoint(), "registry", a.Registry.Dir(), "shared_store", a.shared != nil, "version", server.BuildVersion())
	return a, nil
}

// openRegistry opens the registry (the process's first write to disk).
func (a *App) openRegistry(ctx context.Context) error {
	openers := registry.FileOpeners(a.cfg.Channel.ModelOptions())
	if a.cfg.WrapOpen != nil {
		for ext, open := range openers {
			openers[ext] = a.cfg.WrapOpen(open)
		}
	}
	opts := registry.Options{
		Openers:      openers,
		AllowedRoots: a.cfg.AllowFileRoots,
		Logger:       a.log.With("component", "registry"),
	}
	if a.shared != nil {
		// The fleet's store: the index and the artifacts in the database;
		// the directory keeps a cache of model files and import/.
		idx, arts, lock := a.shared.registryStores(a.cfg.RegistryDir)
		opts.Fleet = lock
		reg, err := registry.New(ctx, idx, arts, a.cfg.RegistryDir, opts)
		if err != nil {
			return fmt.Errorf("open registry: %w", err)
		}
		a.Registry = reg
		a.shared.follow(reg, a.log)
		return nil
	}
	// The embedded store: the registry's directory, under its lock.
	files, err := filestore.Open(a.cfg.RegistryDir)
	if err != nil {
		return fmt.Errorf("open registry: %w", err)
	}
	reg, err := registry.New(ctx, files, files, files.Dir(), opts)
	if err != nil {
		files.Close()
		return fmt.Errorf("open registry: %w", err)
	}
	a.Registry, a.registryStore = reg, files
	return nil
}

// openEvidence opens the prediction log in the registry directory and
// starts the shadow scorer, whose records the evidence collector writes
// into the log. The collector is the prediction channel's log hook. The
// registry's shadow version is followed by the scorer
// (Registry.FollowShadow), so the two never disagree. With the log off
// (-prediction-log=false) the shadow still runs, for its comparison only,
// and the routes that read the log answer 501.
func (a *App) openEvidence(ctx context.Context) error {
	cfg := a.cfg.Evidence
	var rec predlog.Recorder // nil: the log is off
	if !cfg.LogOff {
		log, err := a.openLog(ctx, predlog.Options{
			Retention:    cfg.Retention,
			MaxBytes:     cfg.MaxBytes,
			IdlePriority: cfg.IdlePriority,
			Logger:       a.log.With("component", "prediction-log"),
		})
		if err != nil {
			return fmt.Errorf("prediction log: %w", err)
		}
		a.predlog = log
		rec = log
	}
	a.collector = evidence.New(evidence.Options{Log: rec, LogSpectra: cfg.LogSpectra && !cfg.LogOff, ExplainExceedances: cfg.ExplainExceedances})
	a.shadow = shadow.New(shadow.Options{Sink: a.collector, IdlePriority: cfg.IdlePriority, Logger: a.log.With("component", "shadow")})
	a.collector.SetShadow(a.shadow)
	if err := a.Registry.FollowShadow(a.shadow); err != nil {
		return fmt.Errorf("shadow: %w", err)
	}
	return nil
}

// openLog opens the prediction log on the fleet's database, or on
// predictions.db in the registry directory.
func (a *App) openLog(ctx context.Context, opts predlog.Options) (*predlog.Writer, error) {
	if a.shared == nil {
		return sqlitelog.OpenLog(ctx, a.Registry.Dir(), opts)
	}
	s, err := pglog.New(a.shared.pool, pglog.Options{Replica: a.shared.replica})
	if err != nil {
		return nil, err
	}
	return predlog.New(ctx, s, opts)
}

// labStore opens the lab result store and the reference batches kept
// beside it, on the fleet's database, or in lab-results.db in the
// registry directory; closer is nil when the store needs no closing of
// its own.
func (a *App) labStore(ctx context.Context) (reconcile.LabStore, batches.ReferenceStore, io.Closer, error) {
	if a.shared != nil {
		return pglab.New(a.shared.pool), pglab.NewReferences(a.shared.pool), nil, nil
	}
	s, err := labstore.Open(ctx, a.Registry.Dir())
	if err != nil {
		return nil, nil, nil, err
	}
	return s, s.References(), s, nil
}

// openLab opens the lab result store (lab-results.db in the registry
// directory) and the lab's use cases over it and the prediction log.
// Without a log (-prediction-log=false) there is nothing to match, and
// the lab routes answer 501.
func (a *App) openLab(ctx context.Context) (*evidencesvc.Lab, error) {
	if a.predlog == nil {
		return nil, nil
	}
	store, refs, closer, err := a.labStore(ctx)
	if err != nil {
		return nil, fmt.Errorf("lab results: %w", err)
	}
	rec, err := reconcile.New(a.predlog, store, reconcile.Options{MatchWindow: a.cfg.Evidence.MatchWindow})
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		return nil, fmt.Errorf("lab results: %w", err)
	}
	a.labstore, a.references, a.labCloser = store, refs, closer
	lab := evidencesvc.NewLab(rec, a.predlog, a.Registry, a.log.With("component", "lab"))
	// The agreement gauges start from the results already stored, not
	// from the next post: a restart leaves no gap in a dashboard. It is
	// one read of the week's results (at most reconcile.MaxReportSamples).
	if err := lab.RefreshAgreement(ctx); err != nil {
		a.log.Warn("lab agreement not computed at start; it will be at the next matched post", "err", err)
	}
	return lab, nil
}

// startTraining opens the job queue on the registry's jobs folder, or in
// a fleet on the shared database; the queue stages what it trains in the
// registry.
func (a *App) startTraining(ctx context.Context) error {
	limit := a.cfg.Training.MaxMemoryBytes
	if limit <= 0 {
		var err error
		if limit, err = membudget.DefaultLimit(); err != nil {
			return fmt.Errorf("training memory budget: %w; set -max-training-memory", err)
		}
	}
	opts := jobs.Options{
		QueueSize: a.cfg.Training.QueueSize,
		Train:     a.cfg.Training.Options,
		Budget:    membudget.New(limit),
		Logger:    a.log.With("component", "training"),
		Classify:  func(err error) string { return string(contract.Classify(err).Code) },
		Publish:   models.Stager{Registry: a.Registry}.Stage,
		Workers:   a.cfg.Training.Workers,
	}
	var (
		records jobs.Store
		spool   jobs.UploadSpool
	)
	if a.shared != nil {
		// A fleet: jobs are accepted into the shared database and run by
		// whichever replica has a free worker, under a lease.
		store := pgjobs.New(a.shared.pool)
		records, spool, a.jobKeys = store, store, store
		opts.Fleet = &jobs.FleetOptions{Replica: a.shared.replica, Lease: a.cfg.Training.Lease}
	} else {
		files, err := jobfiles.Open(a.Registry.JobsDir(), a.log.With("component", "training"))
		if err != nil {
			return fmt.Errorf("training jobs: %w", err)
		}
		records, spool, a.jobKeys = files, files, files
	}
	m, err := jobs.New(ctx, records, spool, opts)
	if err != nil {
		return fmt.Errorf("training jobs: %w", err)
	}
	a.jobs = m
	return nil
}

// serve builds the management API on the services and starts both
// channels.
func (a *App) serve(lab *evidencesvc.Lab) error {
	// Re-scoring reads spectra: without -log-spectra the service has no
	// log, and every request is NO_LOGGED_SPECTRA.
	var spectra jobs.RescoreLog
	if a.cfg.Evidence.LogSpectra && a.predlog != nil {
		spectra = a.predlog
	}
	modelsvc := models.New(a.Registry, a.jobs, spectra)
	api := &server.API{
		Registry:      a.Registry,
		Training:      training.New(a.jobs, a.jobKeys),
		Rescore:       modelsvc,
		Deleter:       modelsvc,
		Exporter:      modelsvc,
		Axes:          modelsvc,
		ServerVersion: server.BuildVersion(),
		Started:       time.Now(),
		Shadow:        a.shadow,
	}
	httpConns, channelConns := a.transports.Conns()
	var logStats metrics.PredictionLogStats // a nil *predlog.Writer must stay a nil interface
	if a.predlog != nil {
		api.Predictions = a.predlog
		api.Spectra = evidencesvc.NewPredictions(a.predlog, a.Registry)
		api.PredictionLog = a.predlog
		logStats = a.predlog
	}
	var labAgreement metrics.LabAgreement // a nil *evidencesvc.Lab must stay a nil interface
	if lab != nil {
		api.Lab = lab
		api.LabReports = lab
		labAgreement = lab
	}
	if a.predlog != nil && a.references != nil {
		api.Batches = batchsvc.New(a.predlog, a.references)
	}
	var storeState metrics.StoreState // nil interface for the embedded store
	if a.shared != nil {
		storeState = a.shared.monitor
		api.Store = a.shared.monitor
		// GET /model/shadow shows the fleet's comparison, every
		// replica's spectra counted.
		api.Shadow = a.shared.shadowView(a.shadow, a.log)
	}
	api.Metrics = metrics.New(metrics.Sources{Models: a.Registry, Jobs: a.jobs, HTTPConns: httpConns, ChannelConns: channelConns,
		PredictionLog: logStats, Shadow: a.shadow, Store: storeState, Fleet: a.fleet.heartbeat, Lab: labAgreement})
	api.Fleet = a.fleet.service
	a.ready = readiness.New(readiness.Checks{
		Bound:        a.transports.Bound,
		ModelLoaded:  func() bool { return a.Registry.Active() != nil },
		Readable:     a.Registry.Readable,
		WithoutModel: a.cfg.ReadyWithoutModel,
	})
	api.Readiness = a.ready
	a.newLiveFeed()
	chs := server.ChannelServices{Models: a.Registry, Recorder: api.Metrics.Channel(), Log: a.collector}
	if a.liveFeed != nil { // a nil *live.Feed must stay a nil interface
		chs.Live = a.liveFeed
	}
	if err := a.transports.Serve(api, chs); err != nil {
		return err
	}
	return a.startOPCUA()
}

// undo releases what a failed Start had started.
func (a *App) undo() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		a.log.Warn("undoing a failed start", "err", err)
	}
}

// Alive reports why the process does not serve, for the service
// manager's watchdog: it connects to both ports as a client would and
// waits, within ctx, for the server to answer the connection: the
// prediction channel sends its greeting, the management channel answers
// (or closes) a request that is not HTTP. Neither reaches a route, the
// registry or a store: a slow disk or database is not a reason to be
// killed, a serving loop that no longer takes connections is.
func (a *App) Alive(ctx context.Context) error {
	if err := a.transports.Bound(); err != nil {
		return err
	}
	zmq := strings.TrimPrefix(a.ZMQEndpoint(), "tcp://")
	if err := answers(ctx, "prediction", zmq, nil); err != nil {
		return err
	}
	// A blank line is no request: net/http answers 400, or over TLS
	// closes, before any handler runs (nothing is logged or counted).
	return answers(ctx, "management", loopback(a.HTTPAddr()), []byte("\r\n\r\n\r\n"))
}

// answers connects to addr, sends hello, and waits for a byte or the
// end of the connection from the server.
func answers(ctx context.Context, name, addr string, hello []byte) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%s port %s: %w", name, addr, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if len(hello) > 0 {
		if _, err := conn.Write(hello); err != nil {
			return fmt.Errorf("%s port %s: %w", name, addr, err)
		}
	}
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("%s port %s did not answer a connection: %w", name, addr, err)
	}
	return nil
}

// loopback turns a wildcard listening address into one a local client
// can dial.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// HTTPAddr is the bound management address, e.g. "127.0.0.1:5556".
func (a *App) HTTPAddr() string { return a.transports.HTTPAddr() }

// ZMQEndpoint is a connectable prediction endpoint, e.g. "tcp://127.0.0.1:5555".
func (a *App) ZMQEndpoint() string { return a.transports.ZMQEndpoint() }

// Done delivers a fatal serving error.
func (a *App) Done() <-chan error { return a.transports.Done() }

// Reload re-reads what an operator may change without a restart (SIGHUP):
// the bearer tokens, the TLS certificates and the CurveZMQ client
// allowlist (server.Transports.Reload).
func (a *App) Reload(ctx context.Context) error { return a.transports.Reload(ctx) }

// Shutdown stops accepting on both channels at once, cuts request bodies
// still arriving (their clients get 503 SHUTTING_DOWN), then, all at the
// same time, lets in-flight requests and predicts finish within ctx and
// stops training (a running job is cancelled; queued jobs stay queued).
// What is still open when ctx ends is closed, and ctx's error returned.
// It may be called more than once; later calls wait for the first.
func (a *App) Shutdown(ctx context.Context) error {
	select {
	case <-a.shutdownOnce:
		a.shutdownErr = a.shutdown(ctx)
		close(a.shutdownDone)
	default:
	}
	select {
	case <-a.shutdownDone:
		return a.shutdownErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (a *App) shutdown(ctx context.Context) error {
	if a.ready != nil {
		a.ready.Stopping()
		if d := a.cfg.DrainDelay; d > 0 && a.transports != nil {
			a.log.Info("not ready; serving on until the load balancers notice", "delay", d)
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done(): // a second signal, or the grace ran out
				t.Stop()
			}
		}
	}
	if a.opcua != nil {
		a.opcua.Close() // it only reads: nothing of it needs draining
	}
	if a.transports != nil {
		a.transports.StopAccepting(ctx)
	}
	a.fleet.leave(ctx, a.log) // first: this replica stops serving now
	trainingStopped := make(chan error, 1)
	go func() { trainingStopped <- a.stopTraining(ctx) }()
	var errTransports error
	if a.transports != nil {
		errTransports = a.transports.Drain(ctx)
	}
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
	if a.registryStore != nil {
		errReg = errors.Join(errReg, a.registryStore.Close())
	}
	if a.shared != nil {
		a.shared.close(ctx)
	}
	return errors.Join(errTransports, errTrain, errEvidence, errLab, errReg)
}

func (a *App) stopTraining(ctx context.Context) error {
	if a.jobs == nil {
		return nil
	}
	return a.jobs.Close(ctx)
}

// closeEvidence closes the shadow scorer first (it writes into the log),
// then the log (it commits what is queued).
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

// closeLab closes the lab result store, after the HTTP server (its only
// user) has stopped.
func (a *App) closeLab() error {
	if a.labCloser == nil {
		return nil
	}
	if err := a.labCloser.Close(); err != nil {
		return fmt.Errorf("lab results: %w", err)
	}
	return nil
}
