package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/registry"
)

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

// goroutinesBackTo waits until no more than n goroutines run.
func goroutinesBackTo(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left running, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartUndoesOnFailure: a Start that fails at a later step leaves no
// goroutine running and both ports free again. A failure on a port writes
// nothing: the registry directory is not even created.
func TestStartUndoesOnFailure(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the config to start with; held is a listener
		// standing in for another process on a port.
		setup          func(t *testing.T, held string) Config
		registryExists bool
	}{
		{"prediction port in use", func(t *testing.T, held string) Config {
			return Config{HTTPAddr: freeAddr(t), ZMQEndpoint: "tcp://" + held, RegistryDir: filepath.Join(t.TempDir(), "reg")}
		}, false},
		{"management port in use", func(t *testing.T, held string) Config {
			return Config{HTTPAddr: held, ZMQEndpoint: "tcp://" + freeAddr(t), RegistryDir: filepath.Join(t.TempDir(), "reg")}
		}, false},
		{"registry cannot open", func(t *testing.T, _ string) Config {
			file := filepath.Join(t.TempDir(), "not-a-dir")
			os.WriteFile(file, nil, 0o644)
			return Config{HTTPAddr: freeAddr(t), ZMQEndpoint: "tcp://" + freeAddr(t), RegistryDir: file}
		}, true},
		{"signal once training started", func(t *testing.T, _ string) Config {
			dir := t.TempDir()
			// A job record that cannot be read is skipped with a log line
			// (it no longer fails the start); the signal arrives then, with
			// the training worker running.
			os.MkdirAll(filepath.Join(dir, "jobs", "unreadable.json"), 0o755)
			return Config{HTTPAddr: freeAddr(t), ZMQEndpoint: "tcp://" + freeAddr(t), RegistryDir: dir,
				Logger: slog.New(signalOnLog{msg: "skipping unreadable job record"})}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			cfg := tc.setup(t, held.Addr().String())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if h, ok := handlerOf(cfg.Logger).(signalOnLog); ok {
				h.signal = cancel
				cfg.Logger = slog.New(h)
			} else {
				cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			}
			base := runtime.NumGoroutine()
			app, err := Start(ctx, cfg)
			if err == nil {
				app.Shutdown(context.Background())
				t.Fatal("Start succeeded")
			}
			t.Logf("Start: %v", err)
			goroutinesBackTo(t, base)
			for _, addr := range []string{cfg.HTTPAddr, cfg.ZMQEndpoint[len("tcp://"):]} {
				if addr == held.Addr().String() {
					continue
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Errorf("port %s still bound after the failed Start: %v", addr, err)
					continue
				}
				ln.Close()
			}
			if _, err := os.Stat(cfg.RegistryDir); !tc.registryExists && err == nil {
				t.Errorf("a start that failed on a port created the registry %s", cfg.RegistryDir)
			}
		})
	}
}

// signalOnLog is a log handler that cancels start-up (as SIGTERM does)
// when a record with message msg is logged.
type signalOnLog struct {
	msg    string
	signal context.CancelFunc
}

func (h signalOnLog) Enabled(context.Context, slog.Level) bool { return true }
func (h signalOnLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signalOnLog) WithGroup(string) slog.Handler            { return h }
func (h signalOnLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg && h.signal != nil {
		h.signal()
	}
	return nil
}

func handlerOf(l *slog.Logger) slog.Handler {
	if l == nil {
		return nil
	}
	return l.Handler()
}

// TestStartStoppedBySignal: a context cancelled during start-up (SIGTERM)
// ends Start with its error, having released everything.
func TestStartStoppedBySignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	base := runtime.NumGoroutine()
	dir := filepath.Join(t.TempDir(), "reg")
	_, err := Start(ctx, Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: dir})
	if err == nil {
		t.Fatal("Start succeeded on a cancelled context")
	}
	goroutinesBackTo(t, base)
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a start stopped before opening the registry created it")
	}
}

// TestStartUndoesTraining: a signal that arrives once training has started
// (here: while the registry restores its active model) ends Start with the
// training worker stopped and both ports free.
func TestStartUndoesTraining(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "models"), 0o755)
	os.WriteFile(filepath.Join(dir, "models", "v1.npz"), []byte("not an artifact"), 0o644)
	os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"format_version":1,"active":"v1","models":{"v1":
		{"version":"v1","status":"active","file":"models/v1.npz","size_bytes":15,"trained_at":"2026-01-01T00:00:00Z","added_at":"2026-01-01T00:00:00Z"}}}`), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := false
	base := runtime.NumGoroutine()
	cfg := Config{HTTPAddr: freeAddr(t), ZMQEndpoint: "tcp://" + freeAddr(t), RegistryDir: dir,
		WrapOpen: func(open registry.OpenFunc) registry.OpenFunc {
			return func(c context.Context, content *io.SectionReader, e registry.Entry) (inference.Model, error) {
				opened = true
				cancel()
				return open(c, content, e)
			}
		}}
	_, err := Start(ctx, cfg)
	if !opened {
		t.Skip("the registry did not restore the active model at start; this test needs it to")
	}
	if err == nil {
		t.Fatal("Start succeeded on a context cancelled during start-up")
	}
	goroutinesBackTo(t, base)
	for _, addr := range []string{cfg.HTTPAddr, cfg.ZMQEndpoint[len("tcp://"):]} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("port %s still bound: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

// TestShutdownTwice: a second Shutdown (a second SIGTERM) waits for the
// first and returns its result.
func TestShutdownTwice(t *testing.T) {
	base := runtime.NumGoroutine()
	app, err := Start(context.Background(), Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- app.Shutdown(context.Background()) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	for _, addr := range []string{app.HTTPAddr(), app.ZMQEndpoint()[len("tcp://"):]} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts after Shutdown", addr)
		}
	}
	goroutinesBackTo(t, base)
}

// TestHeaderLimit: a request whose header is over maxHeaderBytes (100 KiB
// of one header field) is answered 431 without its header being kept, and
// the server goes on serving.
func TestHeaderLimit(t *testing.T) {
	app, err := Start(context.Background(), Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	c, err := net.Dial("tcp", app.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	big := strings.Repeat("a", 100<<10)
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n\r\n", big)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB header: %d, want 431", resp.StatusCode)
	}
	// An ordinary request with an X-Request-Id sized header still fits.
	req, _ := http.NewRequest("GET", "http://"+app.HTTPAddr()+"/health", nil)
	req.Header.Set("X-Request-Id", strings.Repeat("r", 128))
	req.Header.Set("User-Agent", strings.Repeat("u", 512))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("health after a refused header: %d", res.StatusCode)
	}
}
