package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ramanserve/client"
	"ramanserve/server/auth"
	"ramanserve/server/tlstest"
)

// makeWorldWritable gives others write access to path, past the umask.
func makeWorldWritable(t *testing.T, path string) {
	t.Helper()
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
}

// wantModeRefusal checks that err refuses path for its mode 0666.
func wantModeRefusal(t *testing.T, what string, err error, path string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "mode 0666") || !strings.Contains(err.Error(), "writable by every user") {
		t.Fatalf("%s: %v, want a refusal naming %s and its mode 0666", what, err, path)
	}
}

// TestTokensFileRefusedWhenWorldWritable: a tokens file others may write
// stops the start, naming it and its mode; on SIGHUP it is refused the
// same way and the tokens in force stay.
func TestTokensFileRefusedWhenWorldWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	writeTokenFile := func(token string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(auth.FileLine(auth.Operate, token, "console")), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeTokenFile("old-token")
	makeWorldWritable(t, file)
	cfg := processConfig{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: filepath.Join(dir, "registry"), Auth: AuthConfig{TokensFile: file}}
	if app, err := startProcess(context.Background(), cfg); err == nil {
		app.Shutdown(context.Background())
		t.Fatal("started with a world-writable tokens file")
	} else {
		wantModeRefusal(t, "start", err, file)
	}

	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := startProcess(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	status := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+app.HTTPAddr()+"/model/list", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	writeTokenFile("new-token")
	makeWorldWritable(t, file)
	wantModeRefusal(t, "reload", app.Reload(context.Background()), file)
	if got := status("old-token"); got != http.StatusOK {
		t.Errorf("the token in force after a refused reload: %d, want 200", got)
	}
	if got := status("new-token"); got != http.StatusUnauthorized {
		t.Errorf("the token of the refused file: %d, want 401", got)
	}
}

// TestCurveAllowlistRefusedWhenWorldWritable: an allowlist others may
// write stops the start, naming it and its mode; on SIGHUP it is refused
// the same way and the list in force stays.
func TestCurveAllowlistRefusedWhenWorldWritable(t *testing.T) {
	dir := t.TempDir()
	serverPub, serverSec := curveKeyPair(t)
	alicePub, aliceSec := curveKeyPair(t)
	bobPub, bobSec := curveKeyPair(t)
	keyFile, clientsFile := filepath.Join(dir, "curve.key"), filepath.Join(dir, "clients")
	writeSecretKey(t, keyFile, serverSec, 0o600)
	writeClients(t, clientsFile, alicePub)
	makeWorldWritable(t, clientsFile)
	cfg := processConfig{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: filepath.Join(dir, "registry"),
		Channel: ChannelConfig{Curve: CurveConfig{SecretKeyFile: keyFile, ClientsFile: clientsFile}}}
	if app, err := startProcess(context.Background(), cfg); err == nil {
		app.Shutdown(context.Background())
		t.Fatal("started with a world-writable allowlist")
	} else {
		wantModeRefusal(t, "start", err, clientsFile)
	}

	if err := os.Chmod(clientsFile, 0o644); err != nil {
		t.Fatal(err)
	}
	app, err := startProcess(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	writeClients(t, clientsFile, bobPub)
	makeWorldWritable(t, clientsFile)
	wantModeRefusal(t, "reload", app.Reload(context.Background()), clientsFile)
	if err := pingCurve(app.ZMQEndpoint(), serverPub, aliceSec); err != nil {
		t.Errorf("alice, listed in force, after a refused reload: %v", err)
	}
	if err := pingCurve(app.ZMQEndpoint(), serverPub, bobSec); !errors.Is(err, client.ErrCurveHandshake) {
		t.Errorf("bob, listed by the refused file: %v, want ErrCurveHandshake", err)
	}
}

// TestClientCAFileRefusedWhenWorldWritable: a client CA file others may
// write stops the start, naming it and its mode; on SIGHUP it is refused
// the same way and the CAs in force stay.
func TestClientCAFileRefusedWhenWorldWritable(t *testing.T) {
	f := newTLSFixture(t)
	caA, caB := newCA(t, "client CA A"), newCA(t, "client CA B")
	clientCAs := filepath.Join(t.TempDir(), "clients.pem")
	if err := os.WriteFile(clientCAs, caA.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	makeWorldWritable(t, clientCAs)
	files := TLSConfig{CertFile: f.cert, KeyFile: f.key, ClientCAFile: clientCAs}
	if app, err := startProcess(context.Background(), processConfig{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: t.TempDir(), HTTP: HTTPConfig{TLS: files}}); err == nil {
		app.Shutdown(context.Background())
		t.Fatal("started with a world-writable client CA file")
	} else {
		wantModeRefusal(t, "start", err, clientCAs)
	}

	if err := os.Chmod(clientCAs, 0o644); err != nil {
		t.Fatal(err)
	}
	app := startTLS(t, HTTPConfig{TLS: files}, nil)
	if err := os.WriteFile(clientCAs, caB.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	makeWorldWritable(t, clientCAs)
	wantModeRefusal(t, "reload", app.Reload(context.Background()), clientCAs)
	for _, tc := range []struct {
		name     string
		from     *tlstest.CA
		accepted bool
	}{{"CA A, in force", caA, true}, {"CA B, of the refused file", caB, false}} {
		_, err := handshake(app.HTTPAddr(), clientCertConfig(t, tc.from, f))
		if (err == nil) != tc.accepted {
			t.Errorf("after a refused reload, a certificate from %s: handshake %v, want accepted %v", tc.name, err, tc.accepted)
		}
	}
}

// clientCertConfig is a client configuration that trusts f's CA and
// presents a client certificate signed by ca.
func clientCertConfig(t *testing.T, ca *tlstest.CA, f tlsFixture) *tls.Config {
	t.Helper()
	leaf, err := ca.Client("console")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := leaf.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: f.ca.Pool(), Certificates: []tls.Certificate{pair}}
}
