package conformance

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/server/zmtp/curve"
)

// keygenPair runs `ramanserve keygen -secret-key DIR/NAME.key` and reads
// the pair back from the two files it wrote.
func keygenPair(t *testing.T, dir, name string) (curve.PublicKey, curve.SecretKey) {
	t.Helper()
	path := filepath.Join(dir, name+".key")
	if out, err := exec.Command(serverBinary(t), "keygen", "-secret-key", path).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	sec, err := curve.ReadSecretKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := curve.ReadPublicKeyFile(path + ".pub")
	if err != nil || pub != sec.Public() {
		t.Fatalf("%s.pub: %v, %v", path, pub, err)
	}
	return pub, sec
}

// TestCurveAllowlistSIGHUP: a real ramanserve with keys from its own
// keygen admits the clients its allowlist names and refuses others and
// NULL; after the file is rewritten and SIGHUP sent, a newly listed
// client gets in and a removed one is refused, without a restart.
func TestCurveAllowlistSIGHUP(t *testing.T) {
	keys := t.TempDir()
	serverPub, _ := keygenPair(t, keys, "server")
	alicePub, aliceSec := keygenPair(t, keys, "alice")
	bobPub, bobSec := keygenPair(t, keys, "bob")
	clients := filepath.Join(keys, "clients")
	writeAllowlist := func(k curve.PublicKey) {
		if err := os.WriteFile(clients+".new", []byte("# rigs\n"+k.String()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(clients+".new", clients); err != nil {
			t.Fatal(err)
		}
	}
	writeAllowlist(alicePub)
	p := startProcess(t, t.TempDir(), "-zmq-curve-secret-key", filepath.Join(keys, "server.key"), "-zmq-curve-clients", clients)

	ping := func(sec *curve.SecretKey) error {
		opts := client.PredictionOptions{Timeout: 3 * time.Second, Retries: -1}
		if sec != nil {
			opts.Curve = &client.CurveOptions{ServerKey: serverPub, SecretKey: *sec}
		}
		c, err := client.DialPrediction(context.Background(), p.zmq, opts)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Ping(context.Background())
		return err
	}
	expect := func(who string, sec *curve.SecretKey, admitted bool) {
		t.Helper()
		err := ping(sec)
		switch {
		case admitted && err != nil:
			t.Fatalf("%s refused: %v", who, err)
		case !admitted && err == nil:
			t.Fatalf("%s admitted", who)
		case !admitted && sec != nil && !errors.Is(err, client.ErrCurveHandshake):
			t.Fatalf("%s: %v, want ErrCurveHandshake", who, err)
		}
	}
	expect("alice", &aliceSec, true)
	expect("bob", &bobSec, false)
	expect("a NULL client", nil, false)

	writeAllowlist(bobPub)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLogMsg(t, "CurveZMQ client allowlist reloaded", 1)
	expect("bob after SIGHUP", &bobSec, true)
	expect("alice after SIGHUP", &aliceSec, false)
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v, want status 0", err)
	}
}
