// Command ramanserve is the inference server: management HTTP on 5556 and
// the ZeroMQ prediction channel on 5555.
//
// Every flag can also be set with an environment variable named after it in
// upper case with a RAMAN_ prefix and dashes as underscores, e.g.
// -http-addr is RAMAN_HTTP_ADDR. A flag on the command line wins over the
// environment. -allow-file-root is repeatable; its variable takes a
// list separated by the OS path-list separator (":" on Linux).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"ramanserve/server"
)

func main() {
	if err := run(os.Args[1:], os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ramanserve:", err)
		os.Exit(1)
	}
}

// rootList is a repeatable flag.
type rootList []string

func (r *rootList) String() string     { return strings.Join(*r, string(os.PathListSeparator)) }
func (r *rootList) Set(v string) error { *r = append(*r, v); return nil }

func run(args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("ramanserve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg       server.Config
		roots     rootList
		logFormat string
		logLevel  string
		grace     time.Duration
	)
	fs.StringVar(&cfg.HTTPAddr, "http-addr", ":5556", "management HTTP listen address")
	fs.StringVar(&cfg.ZMQEndpoint, "zmq-addr", "tcp://*:5555", "prediction channel ZeroMQ endpoint")
	fs.StringVar(&cfg.RegistryDir, "registry", "./var/registry", "model registry directory (created if missing)")
	fs.Var(&roots, "allow-file-root", "directory POST /model/load may import .joblib files from (repeatable; default <registry>/import)")
	fs.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.Int64Var(&cfg.HTTP.MaxUploadBytes, "max-upload-bytes", 512<<20, "largest accepted training upload in bytes")
	fs.Int64Var(&cfg.Channel.MaxMessageBytes, "max-message-bytes", 1<<20, "largest accepted prediction message in bytes")
	fs.IntVar(&cfg.Channel.MaxConnections, "max-connections", 1024, "most simultaneous prediction-channel connections")
	fs.DurationVar(&cfg.Channel.HandshakeTimeout, "handshake-timeout", 5*time.Second, "ZMTP handshake deadline per connection")
	fs.DurationVar(&grace, "shutdown-grace", 15*time.Second, "how long SIGTERM waits for in-flight requests")
	if err := applyEnv(fs, getenv); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.AllowFileRoots = roots

	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch logFormat {
	case "text":
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, hopts))
	case "json":
		cfg.Logger = slog.New(slog.NewJSONHandler(stderr, hopts))
	default:
		return fmt.Errorf("-log-format must be text or json, not %q", logFormat)
	}
	if len(cfg.AllowFileRoots) == 0 {
		cfg.AllowFileRoots = []string{filepath.Join(cfg.RegistryDir, "import")}
		if err := os.MkdirAll(cfg.AllowFileRoots[0], 0o755); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app, err := server.Start(ctx, cfg)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		cfg.Logger.Info("shutting down", "grace", grace)
	case err := <-app.Done():
		cfg.Logger.Error("serving failed", "err", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := app.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutdown: %w", err)
	}
	cfg.Logger.Info("stopped")
	return nil
}

// applyEnv sets each flag from RAMAN_<NAME> when that variable is set.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "RAMAN_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v := getenv(name)
		if v == "" || err != nil {
			return
		}
		values := []string{v}
		if f.Name == "allow-file-root" {
			values = filepath.SplitList(v)
		}
		for _, one := range values {
			if e := fs.Set(f.Name, one); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
				return
			}
		}
	})
	return err
}
