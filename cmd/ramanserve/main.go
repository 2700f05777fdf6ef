// Command ramanserve is the inference server: management HTTP on 5556 and
// the ZeroMQ prediction channel on 5555.
//
// Every flag can also be set with an environment variable named after it in
// upper case with a RAMAN_ prefix and dashes as underscores, e.g.
// -http-addr is RAMAN_HTTP_ADDR, or in the YAML file -config names (see
// config.go). A flag on the command line wins over the environment, which
// wins over the file. -allow-file-root is repeatable; its variable takes a
// list separated by the OS path-list separator (":" on Linux).
// -cors-origin is repeatable too; its variable takes a comma-separated
// list.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"ramanserve/app"
	"ramanserve/platform/idlecpu"
	"ramanserve/platform/pgdb"
	"ramanserve/platform/sdnotify"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
	"ramanserve/inference/axisfile"
	"ramanserve/server"
	"ramanserve/server/zmtp"
	"ramanserve/trainer"
	"ramanserve/trainer/membudget"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "registry" {
		os.Exit(runRegistry(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "migrate" {
		os.Exit(runMigrate(context.Background(), os.Args[2:], os.Getenv, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "store" {
		os.Exit(runStore(context.Background(), os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "config" {
		os.Exit(runConfig(os.Args[2:], os.Getenv, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "keygen" {
		os.Exit(runKeygen(os.Args[2:], os.Stdout, os.Stderr))
	}
	if err := run(os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ramanserve:", err)
		os.Exit(1)
	}
}

// rootList is a repeatable flag.
type rootList []string

func (r *rootList) String() string     { return strings.Join(*r, string(os.PathListSeparator)) }
func (r *rootList) Set(v string) error { *r = append(*r, v); return nil }

// originList is -cors-origin, repeatable: each value is checked (and
// normalised) as it is set, so a bad one stops the start with its reason.
type originList []string

func (o *originList) String() string { return strings.Join(*o, ",") }
func (o *originList) Set(v string) error {
	origin, err := server.ParseCORSOrigin(v)
	if err != nil {
		return err
	}
	*o = append(*o, origin)
	return nil
}

// toleranceFlag is -confidence-tolerance: "EPA=1,DHA=1,DPA=0.5", g/L.
type toleranceFlag struct{ b *inference.Breakdown }

func (t toleranceFlag) String() string {
	if t.b == nil {
		return ""
	}
	var parts []string
	for a := range inference.NumAnalytes {
		if t.b.Valid[a] {
			parts = append(parts, fmt.Sprintf("%v=%g", inference.Analyte(a), t.b.Value[a]))
		}
	}
	return strings.Join(parts, ",")
}

func (t toleranceFlag) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		a, known := inference.ParseAnalyte(strings.TrimSpace(name))
		if !ok || !known {
			return fmt.Errorf("%q: want ANALYTE=g/L with ANALYTE one of EPA, DHA, DPA", item)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("%q: the tolerance must be a positive number of g/L", item)
		}
		t.b.Set(a, f)
	}
	return nil
}

// options are the settings of the process itself, beside app.Config.
type options struct {
	logFormat, logLevel string
	grace               time.Duration
	// settings are every flag's effective value and its source.
	settings []setting
}

// parseConfig reads the flags, then the RAMAN_* environment, then the
// -config file (config.go), into the server configuration.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (app.Config, options, error) {
	fs := flag.NewFlagSet("ramanserve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg      app.Config
		opts     options
		roots    rootList
		origins  originList
		axisPath string
		logOn    bool
	)
	fs.String(configFlag, "", "YAML file of settings: flag names without the dash as keys, e.g. \"http-addr: :5556\"; a flag on the command line, then its RAMAN_* variable, win over the file; an unknown key is an error (ramanserve config print shows the result)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", ":5556", "management HTTP listen address")
	fs.StringVar(&cfg.ZMQEndpoint, "zmq-addr", "tcp://*:5555", "prediction channel ZeroMQ endpoint")
	fs.StringVar(&cfg.RegistryDir, "registry", "./var/registry", "model registry directory (created if missing); with -store, it holds only a cache of model files and the import/ folder")
	fs.StringVar(&cfg.Store, "store", "", "postgres://user@host:port/db?sslmode=verify-full&sslrootcert=FILE: keep all state (registry, models, jobs, prediction log, lab results) in that PostgreSQL database, shared by every replica started with it; the password comes from PGPASSFILE, PGPASSWORD or a passfile= parameter, never from the URL (default: the embedded store in -registry)")
	fs.Var(&roots, "allow-file-root", "directory POST /model/load may import .joblib files from (repeatable; default <registry>/import)")
	fs.StringVar(&cfg.Auth.TokensFile, "auth-tokens", "", "file of management bearer tokens, one line each: role sha256(token) name (roles read, operate; SIGHUP re-reads it: write a new file and rename it over the old one; refused if others may write it); off by default")
	fs.BoolVar(&cfg.Auth.Health, "auth-health", false, "with -auth-tokens, GET /health needs a token too (any role)")
	fs.Var(&origins, "cors-origin", "browser origin, scheme://host[:port], whose pages may call the management API (repeatable; off by default; \"*\" is refused)")
	fs.StringVar(&opts.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&opts.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&cfg.HTTP.StorageProbeTimeout, "storage-probe-timeout", server.DefaultStorageProbeTimeout, "how long GET /health and a training upload wait for the registry's 4 KiB write probe (write, fsync, remove) before they report the storage as not answering (health degraded, upload 507 INSUFFICIENT_STORAGE)")
	fs.Int64Var(&cfg.HTTP.MaxUploadBytes, "max-upload-bytes", 512<<20, "largest accepted training upload in bytes")
	fs.DurationVar(&cfg.HTTP.BodyIdleTimeout, "http-body-timeout", 30*time.Second, "a request body that stops arriving for this long gets 408 REQUEST_TIMEOUT")
	fs.DurationVar(&cfg.HTTP.JSONBodyTimeout, "http-json-body-timeout", 10*time.Second, "a JSON request body (every route but the upload) that takes longer than this in all gets 408 REQUEST_TIMEOUT")
	fs.Int64Var(&cfg.HTTP.UploadMinRate, "upload-min-rate", server.DefaultUploadMinRate, "lowest average rate, bytes per second, of a training upload once -upload-rate-grace has passed; an upload holds a training slot while it arrives, and one that falls behind gets 408 REQUEST_TIMEOUT (0: no floor, the idle limit only)")
	fs.DurationVar(&cfg.HTTP.UploadRateGrace, "upload-rate-grace", server.DefaultUploadRateGrace, "how long a training upload may take before -upload-min-rate starts to count")
	fs.IntVar(&cfg.HTTP.MaxConnections, "max-http-connections", 256, "most simultaneous management HTTP connections (at the cap the connection waiting longest without a request is closed; plus a reserve of 64 that answers GET /health only)")
	fs.StringVar(&cfg.HTTP.TLS.CertFile, "tls-cert", "", "PEM certificate file (leaf first, then intermediates): serve the management channel over TLS 1.2+ instead of plain HTTP (needs -tls-key; SIGHUP re-reads it)")
	fs.StringVar(&cfg.HTTP.TLS.KeyFile, "tls-key", "", "PEM private key file of -tls-cert (SIGHUP re-reads it)")
	fs.StringVar(&cfg.HTTP.TLS.ClientCAFile, "tls-client-ca", "", "PEM file of CA certificates: require a client certificate signed by one of them (mutual TLS; needs -tls-cert; SIGHUP re-reads it)")
	fs.Int64Var(&cfg.Training.MaxMemoryBytes, "max-training-memory", 0, "training memory budget in bytes, shared by uploads being parsed and the data sets of queued and running jobs; an upload that would cross it gets 413 (0: a quarter of physical memory)")
	fs.DurationVar(&cfg.Training.Lease, "training-lease", 20*time.Second, "with -store: how long a training job stays with a replica that stopped renewing its lease (killed, or cut off from the database) before another replica takes it over and runs it again (at least 3s)")
	fs.IntVar(&cfg.Training.Workers, "training-workers", 1, "with -store: training jobs this replica runs at once, taken from the fleet's shared queue (0: this replica never trains, it only accepts jobs and answers about them)")
	fs.IntVar(&cfg.Training.QueueSize, "training-queue", 4, "training jobs that may wait behind the running one (429 TRAINING_QUEUE_FULL beyond)")
	fs.Int64Var(&cfg.Channel.MaxMessageBytes, "max-message-bytes", 1<<20, "largest accepted prediction message in bytes")
	fs.IntVar(&cfg.Channel.MaxConnections, "max-connections", 1024, "most simultaneous prediction-channel connections")
	fs.DurationVar(&cfg.Channel.HandshakeTimeout, "handshake-timeout", 5*time.Second, "ZMTP handshake deadline per connection")
	fs.DurationVar(&cfg.Channel.FrameTimeout, "frame-timeout", 10*time.Second, "a prediction message must be complete this long after its first byte arrived, or the connection is closed")
	fs.Int64Var(&cfg.Channel.MaxPartialBytes, "max-partial-bytes", 64<<20, "bytes all prediction connections together may hold in messages beyond 64 KiB each (SERVER_BUSY, retryable, beyond)")
	fs.DurationVar(&cfg.Channel.EvictableAfter, "evictable-after", 10*time.Minute, "at -max-connections, a peer that had a reply may be evicted only after this long silent")
	fs.StringVar(&cfg.Channel.Curve.SecretKeyFile, "zmq-curve-secret-key", "", "file of the server's CurveZMQ secret key, Z85 (ramanserve keygen -secret-key FILE; mode 0600): turns CURVE on for the prediction channel and refuses NULL peers")
	fs.StringVar(&cfg.Channel.Curve.ClientsFile, "zmq-curve-clients", "", "file of the client public keys, Z85, one per line (# comments), that may connect with CURVE; re-read on SIGHUP (default: any client that knows the server key)")
	fs.Float64Var(&cfg.Channel.Curve.HelloRate, "zmq-curve-hello-rate", zmtp.DefaultHelloRate, "with CURVE: HELLOs a second answered from one source address (an IPv6 /64); beyond it and -zmq-curve-hello-burst a HELLO gets ERROR \"300\" (libzmq reconnects) before any cryptography (negative: no limit)")
	fs.IntVar(&cfg.Channel.Curve.HelloBurst, "zmq-curve-hello-burst", zmtp.DefaultHelloBurst, "with CURVE: HELLOs answered at once from one source address before -zmq-curve-hello-rate applies")
	fs.StringVar(&cfg.OPCUA.Addr, "opcua-addr", "", "opc.tcp://HOST:PORT: also publish every prediction as OPC UA variables (docs/opcua.md; 4840 is the usual port); off by default")
	fs.BoolVar(&cfg.OPCUA.AllowInsecure, "opcua-allow-insecure", false, "with -opcua-addr: also offer SecurityPolicy None (no signing, no encryption)")
	fs.StringVar(&cfg.OPCUA.CertFile, "opcua-cert", "", "with -opcua-addr: the server's application instance certificate, PEM or DER, with its application URI (ramanserve keygen -opcua makes one); needed by Basic256Sha256 and Aes128_Sha256_RsaOaep")
	fs.StringVar(&cfg.OPCUA.KeyFile, "opcua-key", "", "with -opcua-addr: the RSA private key of -opcua-cert, PEM (mode 0600)")
	fs.StringVar(&cfg.OPCUA.TrustedDir, "opcua-trusted", "", "with -opcua-addr: folder of trusted OPC UA client certificates (.der or .pem), read at every secure channel; refused ones are written to the folder \"rejected\" beside it for review (default: every client certificate is refused)")
	fs.Float64Var(&cfg.OPCUA.UncertainBelow, "opcua-uncertain-below", 0.5, "with -opcua-addr: a prediction whose confidence is below this is published Uncertain_SensorNotAccurate, as one outside the model's domain (T2 or Q over its limit) is")
	fs.DurationVar(&opts.grace, "shutdown-grace", 15*time.Second, "how long SIGTERM waits for in-flight requests")
	fs.DurationVar(&cfg.DrainDelay, "shutdown-delay", 0, "after SIGTERM, how long both channels keep serving while GET /readyz answers 503, so that load balancers stop sending before the ports close (counted within -shutdown-grace; 0: close at once)")
	fs.BoolVar(&cfg.ReadyWithoutModel, "ready-without-model", false, "GET /readyz answers 200 with no model loaded (a server whose first model is loaded through it)")
	fs.Float64Var(&cfg.Channel.Model.SaturationLevel, "saturation-level", 0, "detector full-scale value; 3 consecutive intensities at or above it are SPECTRUM_OUT_OF_RANGE (0: no check)")
	fs.Var(toleranceFlag{&cfg.Channel.Model.Tolerance}, "confidence-tolerance", "acceptable error per analyte for the confidence, g/L, e.g. EPA=1,DHA=1,DPA=0.5 (default 1 each; a model's own tolerance wins)")
	fs.StringVar(&axisPath, "instrument-axis", "", "file of the instrument's wavenumber axis, cm-1: one number per line, 2048 lines, strictly increasing; the axis of models trained here (a training's meta wavenumbers override it) and of imported models (default: 2048 points evenly spaced over 200-3200)")
	fs.BoolVar(&cfg.Evidence.LogSpectra, "log-spectra", false, "store each prediction's spectrum (float32, compressed, about 5 kB) in the prediction log, so that a model can be re-scored on it later (POST /model/{version}/rescore)")
	fs.BoolVar(&logOn, "prediction-log", true, "keep the prediction log (predictions.db in the registry directory); false records nothing: the shadow still runs for GET /model/shadow, and GET /predictions, POST /lab-results and GET /model/{version}/performance answer 501, re-scoring 409 NO_LOGGED_SPECTRA")
	fs.BoolVar(&cfg.Evidence.ExplainExceedances, "log-exceedance-contributions", true, "when a prediction's T2 or Q is above its 95 % limit and its reply carried no contributions, the prediction log's writer computes the 10 largest and the region sums, off the reply path, and stores them with the record (GET /predictions/{id}); false stores contributions only when the reply carried them")
	fs.BoolVar(&cfg.Evidence.IdlePriority, "evidence-idle-priority", true, "run the prediction log's writer and the shadow scorer at idle CPU priority, on CPU the replies leave idle: at saturation the reply's latency is unchanged and their queues drop (counted in GET /health and the metrics); false runs them at normal priority, which keeps the log complete under load at a cost in latency")
	fs.DurationVar(&cfg.Evidence.Retention, "prediction-log-retention", 720*time.Hour, "delete logged predictions older than this (0: keep them whatever their age, within -prediction-log-max-bytes)")
	fs.Int64Var(&cfg.Evidence.MaxBytes, "prediction-log-max-bytes", 2<<30, fmt.Sprintf("bound on the prediction log's files, bytes: the oldest records are deleted to stay under it (at least %d)", predlog.MinMaxBytes))
	fs.DurationVar(&cfg.Evidence.MatchWindow, "lab-match-window", 60*time.Second, fmt.Sprintf("a lab result with sampled_at is matched to the nearest logged prediction of its batch at most this far away (at most %v)", reconcile.MaxMatchWindow))
	settings, err := applySources(fs, args, getenv)
	if err != nil {
		return cfg, opts, err
	}
	opts.settings = settings
	if fs.NArg() > 0 {
		return cfg, opts, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.Store != "" {
		if _, err := pgdb.ParseConfig(cfg.Store); err != nil {
			return cfg, opts, fmt.Errorf("-store: %w", err)
		}
	}
	if cfg.Channel.Curve.ClientsFile != "" && cfg.Channel.Curve.SecretKeyFile == "" {
		return cfg, opts, fmt.Errorf("-zmq-curve-clients needs -zmq-curve-secret-key: without CURVE every client is accepted")
	}
	if cfg.Training.Lease < 3*time.Second {
		return cfg, opts, fmt.Errorf("-training-lease must be at least 3s (it is renewed every third of it), not %v", cfg.Training.Lease)
	}
	if cfg.Training.Workers < 0 {
		return cfg, opts, fmt.Errorf("-training-workers must be >= 0, not %d", cfg.Training.Workers)
	}
	if cfg.Training.MaxMemoryBytes < 0 {
		return cfg, opts, fmt.Errorf("-max-training-memory must be >= 0 bytes, not %d", cfg.Training.MaxMemoryBytes)
	}
	if cfg.HTTP.UploadMinRate < 0 {
		return cfg, opts, fmt.Errorf("-upload-min-rate must be >= 0 bytes per second, not %d", cfg.HTTP.UploadMinRate)
	}
	if cfg.HTTP.UploadMinRate == 0 {
		cfg.HTTP.UploadMinRate = -1 // off; server.HTTPConfig reads 0 as the default
	}
	if cfg.HTTP.UploadRateGrace <= 0 {
		return cfg, opts, fmt.Errorf("-upload-rate-grace must be positive, not %v", cfg.HTTP.UploadRateGrace)
	}
	cfg.Evidence.LogOff = !logOn
	if err := checkEvidence(cfg.Evidence); err != nil {
		return cfg, opts, err
	}
	if s := cfg.Channel.Model.SaturationLevel; !(s >= 0) || math.IsInf(s, 0) {
		return cfg, opts, fmt.Errorf("-saturation-level must be a finite number >= 0, not %v", s)
	}
	if axisPath != "" {
		axis, err := axisfile.ReadFile(axisPath, trainer.NumWavenumbers)
		if err != nil {
			return cfg, opts, fmt.Errorf("-instrument-axis: %w", err)
		}
		cfg.Channel.Model.InstrumentAxis = axis
		cfg.Training.Options.Wavenumbers = axis
	}
	cfg.HTTP.CORSOrigins = origins
	cfg.AllowFileRoots = roots
	if len(cfg.AllowFileRoots) == 0 {
		// The registry's import/ folder, which it creates.
		cfg.AllowFileRoots = []string{filepath.Join(cfg.RegistryDir, "import")}
	}
	return cfg, opts, nil
}

// checkEvidence checks the prediction log's and lab matching's flags.
func checkEvidence(e app.EvidenceConfig) error {
	if e.Retention < 0 {
		return fmt.Errorf("-prediction-log-retention must be >= 0, not %v", e.Retention)
	}
	if e.MaxBytes < predlog.MinMaxBytes {
		return fmt.Errorf("-prediction-log-max-bytes must be at least %d bytes, not %d", predlog.MinMaxBytes, e.MaxBytes)
	}
	if e.MatchWindow <= 0 || e.MatchWindow > reconcile.MaxMatchWindow {
		return fmt.Errorf("-lab-match-window must be positive and at most %v, not %v", reconcile.MaxMatchWindow, e.MatchWindow)
	}
	return nil
}

func run(args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, opts, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(opts.logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch opts.logFormat {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, hopts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(stderr, hopts))
	default:
		return fmt.Errorf("-log-format must be text or json, not %q", opts.logFormat)
	}
	if cfg.Evidence.IdlePriority {
		// Each idle thread holds a scheduler slot while the kernel keeps it
		// waiting; the channel keeps one per core (package idlecpu).
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + idlecpu.Threads)
	}
	if err := limitMemory(&cfg, getenv); err != nil {
		return err
	}
	// The default import root, <registry>/import, is created by the
	// registry when it opens: after both ports are bound, so a start that
	// fails on a port in use writes nothing.
	signals := newSignals()
	defer signals.stop()
	// SIGHUP is caught before the start, so one that arrives while the
	// server starts is answered by a reload once it runs instead of
	// killing the process (the default action).
	hangups := make(chan os.Signal, 1)
	signal.Notify(hangups, syscall.SIGHUP)
	defer signal.Stop(hangups)
	notify, err := sdnotify.New(getenv, os.Getpid())
	if err != nil {
		return err
	}
	proc, err := app.Start(signals.first, cfg)
	if err != nil {
		if signals.first.Err() != nil {
			cfg.Logger.Info("stopped by a signal during start-up")
			return nil
		}
		return fmt.Errorf("start: %w", err)
	}
	// Start returns once the registry is restored and both channels
	// serve: that is READY=1 for a Type=notify unit.
	if err := notify.Ready("serving on " + proc.HTTPAddr() + " and " + proc.ZMQEndpoint()); err != nil {
		cfg.Logger.Warn("could not tell the service manager", "err", err)
	}
	watchCtx, stopWatchdog := context.WithCancel(signals.first)
	defer stopWatchdog()
	go feedWatchdog(watchCtx, notify, proc, cfg.Logger)
	// Reloads stop with the first SIGTERM. One in progress then is not
	// waited for: a file system that hangs a read must not hang the exit.
	reloadCtx, stopReloads := context.WithCancel(signals.first)
	defer stopReloads()
	go reloadOnHangup(reloadCtx, hangups, proc, cfg)
	var serveErr error
	select {
	case <-signals.first.Done():
		cfg.Logger.Info("shutting down", "grace", opts.grace)
	case serveErr = <-proc.Done():
		cfg.Logger.Error("serving failed; shutting down", "err", serveErr, "grace", opts.grace)
	}
	stopWatchdog()
	if err := notify.Stopping(); err != nil {
		cfg.Logger.Warn("could not tell the service manager", "err", err)
	}
	sctx, cancel := context.WithTimeout(signals.second, opts.grace)
	defer cancel()
	err = proc.Shutdown(sctx)
	switch {
	case serveErr != nil:
		return serveErr
	case err != nil && signals.second.Err() != nil:
		return fmt.Errorf("shutdown cut short by a second signal: %w", err)
	case err != nil:
		return fmt.Errorf("shutdown did not finish within -shutdown-grace %v; what was still open was closed: %w", opts.grace, err)
	}
	cfg.Logger.Info("stopped")
	return nil
}

// feedWatchdog sends WATCHDOG=1 at half the manager's interval, each
// time only after both ports answered a connection (App.Alive): a
// process whose serving loops stopped is not fed, and the manager
// restarts it. Without a watchdog it returns at once.
func feedWatchdog(ctx context.Context, notify *sdnotify.Notifier, proc *app.App, log *slog.Logger) {
	interval := notify.WatchdogInterval()
	if interval <= 0 {
		return
	}
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, interval/2)
		err := proc.Alive(actx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error("not serving; the watchdog is not fed", "err", err)
		default:
			if err := notify.Watchdog(); err != nil {
				log.Warn("could not feed the watchdog", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// signals turns SIGTERM and SIGINT into two contexts: the first signal
// ends first (start the graceful shutdown), the second ends second (cut
// the shutdown short and exit at once, non-zero).
type signals struct {
	first, second context.Context
	stop          func()
}

func newSignals() *signals {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	first, cancelFirst := context.WithCancel(context.Background())
	second, cancelSecond := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		for n := 0; n < 2; n++ {
			select {
			case <-ch:
				if n == 0 {
					cancelFirst()
				} else {
					cancelSecond()
				}
			case <-done:
				return
			}
		}
	}()
	return &signals{first: first, second: second, stop: func() {
		signal.Stop(ch)
		close(done)
		cancelFirst()
		cancelSecond()
	}}
}

// reloader is what a SIGHUP reloads: *app.App.
type reloader interface {
	Reload(ctx context.Context) error
}

// reloadOnHangup calls Reload once per SIGHUP until ctx ends, and logs
// the files it re-read or why it could not. A failed reload keeps the
// previous value of each part that failed and never stops the server.
// Two SIGHUPs that arrive during one reload are answered by one more.
func reloadOnHangup(ctx context.Context, hangups <-chan os.Signal, proc reloader, cfg app.Config) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hangups:
		}
		if err := proc.Reload(ctx); err != nil {
			cfg.Logger.Error("SIGHUP: reload failed; what failed keeps its previous value, the rest took effect", "err", err)
			continue
		}
		cfg.Logger.Info("SIGHUP: reloaded", reloadedFiles(cfg)...)
	}
}

// reloadedFiles names, as log attributes, the configured files a reload
// re-reads.
func reloadedFiles(cfg app.Config) []any {
	var attrs []any
	for _, f := range []struct{ name, path string }{
		{"auth_tokens", cfg.Auth.TokensFile},
		{"tls_cert", cfg.HTTP.TLS.CertFile},
		{"tls_key", cfg.HTTP.TLS.KeyFile},
		{"tls_client_ca", cfg.HTTP.TLS.ClientCAFile},
		{"zmq_curve_clients", cfg.Channel.Curve.ClientsFile},
	} {
		if f.path != "" {
			attrs = append(attrs, f.name, f.path)
		}
	}
	if attrs == nil {
		attrs = []any{"files", "none configured"}
	}
	return attrs
}

// limitMemory resolves the training memory budget's default (a quarter of
// physical memory) and sets the Go soft memory limit to what the server
// promises to stay under: the training budget plus its fixed overhead,
// plus what the prediction channel's connections may hold, plus the
// management channel's request headers, plus the records and spectra
// queued for the prediction log and the shadow. The collector
// then reclaims garbage (the copies training makes) before the heap grows
// past the promise. An operator's own GOMEMLIMIT wins.
func limitMemory(cfg *app.Config, getenv func(string) string) error {
	if cfg.Training.MaxMemoryBytes == 0 {
		limit, err := membudget.DefaultLimit()
		if err != nil {
			return fmt.Errorf("-max-training-memory: %w; set it explicitly", err)
		}
		cfg.Training.MaxMemoryBytes = limit
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cfg.Training.MaxMemoryBytes + app.TrainingMemoryOverhead + cfg.Channel.ConnectionMemoryBound() + cfg.HTTP.ConnectionMemoryBound() +
			cfg.Evidence.MemoryBound())
	}
	return nil
}

// applyEnv sets each flag not in skip from RAMAN_<NAME> when that
// variable is set, and returns the names of the flags it set.
func applyEnv(fs *flag.FlagSet, getenv func(string) string, skip map[string]string) ([]string, error) {
	var (
		err error
		set []string
	)
	fs.VisitAll(func(f *flag.Flag) {
		name := "RAMAN_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v := getenv(name)
		if v == "" || err != nil || skip[f.Name] != "" {
			return
		}
		set = append(set, f.Name)
		values := []string{v}
		switch f.Name {
		case "allow-file-root":
			values = filepath.SplitList(v)
		case "cors-origin": // origins hold ":", never ","
			values = strings.Split(v, ",")
			for i := range values {
				values[i] = strings.TrimSpace(values[i])
			}
		}
		for _, one := range values {
			if e := fs.Set(f.Name, one); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
				return
			}
		}
	})
	return set, err
}
