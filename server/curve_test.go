package server

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/server/zmtp/curve"
)

// curveKeyPair returns a fresh pair.
func curveKeyPair(t *testing.T) (curve.PublicKey, curve.SecretKey) {
	t.Helper()
	pub, sec, err := curve.GenerateKeyPair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, sec
}

// writeSecretKey writes sec in Z85 to a file of mode perm.
func writeSecretKey(t *testing.T, path string, sec curve.SecretKey, perm os.FileMode) {
	t.Helper()
	z85, err := curve.EncodeZ85(sec[:])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(z85+"\n"), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
}

// writeClients writes an allowlist file naming keys, through a rename as
// an operator's editor would.
func writeClients(t *testing.T, path string, keys ...curve.PublicKey) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# rigs allowed on the prediction channel\n")
	for _, k := range keys {
		b.WriteString(k.String() + "\n")
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// pingCurve dials with CURVE as the client whose secret key is sec and
// pings; the error of either step.
func pingCurve(endpoint string, server curve.PublicKey, sec curve.SecretKey) error {
	ctx := context.Background()
	c, err := client.DialPrediction(ctx, endpoint, client.PredictionOptions{
		Timeout: 3 * time.Second, Retries: -1, Curve: &client.CurveOptions{ServerKey: server, SecretKey: sec}})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Ping(ctx)
	return err
}

// TestCurveAllowlistReload: the allowlist file decides who may connect;
// App.Reload (SIGHUP) swaps it: a newly listed client gets in, a removed
// one is refused, and a file that does not parse keeps the list as it was.
func TestCurveAllowlistReload(t *testing.T) {
	dir := t.TempDir()
	serverPub, serverSec := curveKeyPair(t)
	alicePub, aliceSec := curveKeyPair(t)
	bobPub, bobSec := curveKeyPair(t)
	keyFile, clientsFile := filepath.Join(dir, "curve.key"), filepath.Join(dir, "clients")
	writeSecretKey(t, keyFile, serverSec, 0o600)
	writeClients(t, clientsFile, alicePub)

	app, err := startProcess(context.Background(), processConfig{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: filepath.Join(dir, "registry"), Channel: ChannelConfig{Curve: CurveConfig{SecretKeyFile: keyFile, ClientsFile: clientsFile}}})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	ep := app.ZMQEndpoint()
	admitted := func(who string, sec curve.SecretKey, want bool) {
		t.Helper()
		err := pingCurve(ep, serverPub, sec)
		switch {
		case want && err != nil:
			t.Fatalf("%s refused: %v", who, err)
		case !want && !errors.Is(err, client.ErrCurveHandshake):
			t.Fatalf("%s: err = %v, want ErrCurveHandshake", who, err)
		}
	}
	admitted("alice", aliceSec, true)
	admitted("bob", bobSec, false)

	writeClients(t, clientsFile, bobPub)
	if err := app.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	admitted("bob after the reload", bobSec, true)
	admitted("alice after the reload", aliceSec, false)

	if err := os.WriteFile(clientsFile, []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := app.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "previous list stays") {
		t.Fatalf("a bad allowlist: Reload = %v", err)
	}
	admitted("bob after a bad file", bobSec, true)
	admitted("alice after a bad file", aliceSec, false)
}

// TestCurveStartRefusesBadKeys: a secret key file group or others may
// read, an unparseable one, and an allowlist without a secret key each
// stop the start with a message naming the problem.
func TestCurveStartRefusesBadKeys(t *testing.T) {
	dir := t.TempDir()
	_, sec := curveKeyPair(t)
	open := filepath.Join(dir, "open.key")
	writeSecretKey(t, open, sec, 0o640)
	junk := filepath.Join(dir, "junk.key")
	if err := os.WriteFile(junk, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		curve CurveConfig
		want  string
	}{
		{CurveConfig{SecretKeyFile: open}, "chmod 600"},
		{CurveConfig{SecretKeyFile: junk}, "junk.key"},
		{CurveConfig{SecretKeyFile: filepath.Join(dir, "missing.key")}, "no such file"},
		{CurveConfig{ClientsFile: filepath.Join(dir, "clients")}, "needs the server's secret key"},
	} {
		app, err := startProcess(context.Background(), processConfig{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
			RegistryDir: filepath.Join(dir, "registry"), Channel: ChannelConfig{Curve: tc.curve}})
		if err == nil {
			app.Shutdown(context.Background())
			t.Fatalf("%+v: started", tc.curve)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want it to say %q", tc.curve, err, tc.want)
		}
	}
}
