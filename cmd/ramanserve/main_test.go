package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/inference"
	"ramanserve/server"
)

type configAndOptions struct {
	cfg  app.Config
	opts options
}

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	// axisFile writes n points 100 + 1.5 i, point dup repeating the one
	// before it (-1: none), and returns its path.
	axisFile := func(t *testing.T, n, dup int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			v := 100 + 1.5*float64(i)
			if i == dup {
				v -= 1.5
			}
			fmt.Fprintf(&b, "%v\n", v)
		}
		name := filepath.Join(dir, fmt.Sprintf("axis-%d.txt", dup))
		if n != 2048 {
			name = filepath.Join(dir, fmt.Sprintf("axis-n%d.txt", n))
		}
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name  string
		args  []string
		env   func(string) string
		check func(t *testing.T, c configAndOptions)
		err   string
	}{
		{name: "defaults", env: env(), check: func(t *testing.T, c configAndOptions) {
			if c.cfg.HTTPAddr != ":5556" || c.cfg.ZMQEndpoint != "tcp://*:5555" || c.cfg.RegistryDir != "./var/registry" ||
				len(c.cfg.AllowFileRoots) != 1 || c.cfg.AllowFileRoots[0] != "var/registry/import" ||
				c.opts.grace != 15*time.Second || c.cfg.Channel.Model.SaturationLevel != 0 || c.cfg.Channel.Model.Tolerance.Valid != [3]bool{} {
				t.Errorf("defaults: %+v %+v", c.cfg, c.opts)
			}
		}},
		{name: "environment", env: env("RAMAN_HTTP_ADDR", "127.0.0.1:7000", "RAMAN_ALLOW_FILE_ROOT", "/a:/b", "RAMAN_SATURATION_LEVEL", "65535"),
			check: func(t *testing.T, c configAndOptions) {
				if c.cfg.HTTPAddr != "127.0.0.1:7000" || strings.Join(c.cfg.AllowFileRoots, ",") != "/a,/b" ||
					c.cfg.Channel.Model.SaturationLevel != 65535 {
					t.Errorf("environment: %+v", c.cfg)
				}
			}},
		{name: "flag wins over environment", args: []string{"-http-addr", ":9000"}, env: env("RAMAN_HTTP_ADDR", ":7000"),
			check: func(t *testing.T, c configAndOptions) {
				if c.cfg.HTTPAddr != ":9000" {
					t.Errorf("http addr %q", c.cfg.HTTPAddr)
				}
			}},
		{name: "tolerance", args: []string{"-confidence-tolerance", "EPA=1.5, DPA=0.25"}, env: env(),
			check: func(t *testing.T, c configAndOptions) {
				tol := c.cfg.Channel.Model.Tolerance
				if tol.Valid != [3]bool{true, false, true} || tol.Value[inference.EPA] != 1.5 || tol.Value[inference.DPA] != 0.25 {
					t.Errorf("tolerance %+v", tol)
				}
			}},
		{name: "tolerance of an unknown analyte", args: []string{"-confidence-tolerance", "ALA=1"}, env: env(), err: "ANALYTE"},
		{name: "zero tolerance", args: []string{"-confidence-tolerance", "EPA=0"}, env: env(), err: "positive"},
		{name: "negative saturation level", args: []string{"-saturation-level", "-1"}, env: env(), err: "saturation-level"},
		{name: "training memory", env: env("RAMAN_MAX_TRAINING_MEMORY", "67108864"), check: func(t *testing.T, c configAndOptions) {
			if c.cfg.Training.MaxMemoryBytes != 64<<20 {
				t.Errorf("training memory %d", c.cfg.Training.MaxMemoryBytes)
			}
		}},
		{name: "upload rate floor", env: env(), check: func(t *testing.T, c configAndOptions) {
			if c.cfg.HTTP.UploadMinRate != 65536 || c.cfg.HTTP.UploadRateGrace != 10*time.Second {
				t.Errorf("upload rate floor %d after %v", c.cfg.HTTP.UploadMinRate, c.cfg.HTTP.UploadRateGrace)
			}
		}},
		{name: "upload rate floor off", args: []string{"-upload-min-rate", "0"}, env: env(), check: func(t *testing.T, c configAndOptions) {
			if c.cfg.HTTP.UploadMinRate >= 0 { // negative: off (0 would be the default)
				t.Errorf("-upload-min-rate 0 gives %d", c.cfg.HTTP.UploadMinRate)
			}
		}},
		{name: "negative upload rate", args: []string{"-upload-min-rate", "-5"}, env: env(), err: "upload-min-rate"},
		{name: "zero upload rate grace", args: []string{"-upload-rate-grace", "0s"}, env: env(), err: "upload-rate-grace"},
		{name: "negative training memory", args: []string{"-max-training-memory", "-1"}, env: env(), err: "max-training-memory"},
		{name: "instrument axis", args: []string{"-instrument-axis", axisFile(t, 2048, -1)}, env: env(),
			check: func(t *testing.T, c configAndOptions) {
				a, b := c.cfg.Channel.Model.InstrumentAxis, c.cfg.Training.Options.Wavenumbers
				if len(a) != 2048 || len(b) != 2048 || a[0] != 100 || a[2047] != 100+2047*1.5 || b[5] != a[5] {
					t.Errorf("axis not taken: %d and %d points", len(a), len(b))
				}
			}},
		{name: "instrument axis not increasing", args: []string{"-instrument-axis", axisFile(t, 2048, 700)}, env: env(),
			err: "-instrument-axis: " + filepath.Join(dir, "axis-700.txt") + ": invalid instrument axis file: line 701: 1148.5 is not above line 700's 1148.5"},
		{name: "instrument axis too short", args: []string{"-instrument-axis", axisFile(t, 2000, -1)}, env: env(), err: "2000 lines, need 2048"},
		{name: "instrument axis missing", args: []string{"-instrument-axis", filepath.Join(dir, "none.txt")}, env: env(), err: "no such file"},
		{name: "tls files", args: []string{"-tls-cert", "/etc/ramanserve/tls/cert.pem"},
			env: env("RAMAN_TLS_CERT", "/ignored.pem", "RAMAN_TLS_KEY", "/etc/ramanserve/tls/key.pem", "RAMAN_TLS_CLIENT_CA", "/etc/ramanserve/tls/clients.pem"),
			check: func(t *testing.T, c configAndOptions) {
				if tls := c.cfg.HTTP.TLS; tls.CertFile != "/etc/ramanserve/tls/cert.pem" || tls.KeyFile != "/etc/ramanserve/tls/key.pem" || tls.ClientCAFile != "/etc/ramanserve/tls/clients.pem" {
					t.Errorf("tls %+v", tls)
				}
			}},
		{name: "bad environment value", env: env("RAMAN_MAX_CONNECTIONS", "many"), err: "RAMAN_MAX_CONNECTIONS"},
		{name: "stray argument", args: []string{"serve"}, env: env(), err: "unexpected arguments"},
		{name: "cors off by default", env: env(), check: func(t *testing.T, c configAndOptions) {
			if len(c.cfg.HTTP.CORSOrigins) != 0 {
				t.Errorf("cors origins %q", c.cfg.HTTP.CORSOrigins)
			}
		}},
		{name: "cors origins", args: []string{"-cors-origin", "https://Console.Plant:443", "-cors-origin", "http://127.0.0.1:8080"}, env: env(),
			check: func(t *testing.T, c configAndOptions) {
				if strings.Join(c.cfg.HTTP.CORSOrigins, " ") != "https://console.plant http://127.0.0.1:8080" {
					t.Errorf("cors origins %q", c.cfg.HTTP.CORSOrigins)
				}
			}},
		{name: "cors origins from the environment", env: env("RAMAN_CORS_ORIGIN", "https://a.example, http://[::1]:3000"),
			check: func(t *testing.T, c configAndOptions) {
				if strings.Join(c.cfg.HTTP.CORSOrigins, " ") != "https://a.example http://[::1]:3000" {
					t.Errorf("cors origins %q", c.cfg.HTTP.CORSOrigins)
				}
			}},
		{name: "curve", env: env("RAMAN_ZMQ_CURVE_SECRET_KEY", "/etc/ramanserve/curve.key", "RAMAN_ZMQ_CURVE_CLIENTS", "/etc/ramanserve/clients"),
			check: func(t *testing.T, c configAndOptions) {
				if c.cfg.Channel.Curve != (server.CurveConfig{SecretKeyFile: "/etc/ramanserve/curve.key", ClientsFile: "/etc/ramanserve/clients", HelloRate: 20, HelloBurst: 40}) {
					t.Errorf("curve %+v", c.cfg.Channel.Curve)
				}
			}},
		{name: "curve clients without a secret key", args: []string{"-zmq-curve-clients", "clients"}, env: env(), err: "-zmq-curve-clients needs -zmq-curve-secret-key"},
		{name: "cors wildcard refused", args: []string{"-cors-origin", "*"}, env: env(), err: `"*" is not accepted`},
		{name: "cors origin with a path refused", args: []string{"-cors-origin", "https://a.example/"}, env: env(), err: "has a path"},
		{name: "cors origin without a scheme refused", args: []string{"-cors-origin", "localhost:3000"}, env: env(), err: "no scheme"},
		{name: "bad cors origin in the environment", env: env("RAMAN_CORS_ORIGIN", "https://a.example,null"), err: "RAMAN_CORS_ORIGIN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, opts, err := parseConfig(tc.args, tc.env, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, configAndOptions{cfg, opts})
		})
	}
}

// TestSignals: the first SIGTERM starts the graceful shutdown, the second
// cuts it short.
func TestSignals(t *testing.T) {
	s := newSignals()
	defer s.stop()
	waitDone := func(ctx context.Context) bool {
		select {
		case <-ctx.Done():
			return true
		case <-time.After(30 * time.Second): // delivery is immediate: generous for a busy machine
			return false
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !waitDone(s.first) {
		t.Fatal("first SIGTERM did not end the first context")
	}
	if s.second.Err() != nil {
		t.Fatal("one SIGTERM ended the second context")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !waitDone(s.second) {
		t.Fatal("second SIGTERM did not end the second context")
	}
}

// TestLimitMemoryDefault: with no -max-training-memory the budget is a
// quarter of physical memory, and an explicit one is kept.
func TestLimitMemoryDefault(t *testing.T) {
	keep := func(string) string { return "1GiB" } // GOMEMLIMIT set: leave the runtime alone
	var cfg app.Config
	if err := limitMemory(&cfg, keep); err != nil || cfg.Training.MaxMemoryBytes <= 0 {
		t.Fatalf("default budget %d: %v", cfg.Training.MaxMemoryBytes, err)
	}
	cfg.Training.MaxMemoryBytes = 123
	if err := limitMemory(&cfg, keep); err != nil || cfg.Training.MaxMemoryBytes != 123 {
		t.Fatalf("explicit budget became %d: %v", cfg.Training.MaxMemoryBytes, err)
	}
}
