package client_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/server/zmtp/curve"
)

const debianPython = "/usr/bin/python3"

// startLibzmqREP runs testdata/curve_rep_server.py, a pyzmq REP socket
// (Debian's libzmq with libsodium) serving CURVE with secret, and returns
// its endpoint. It skips the test when python3-zmq is missing, except in
// CI, where make deps installs it.
func startLibzmqREP(t *testing.T, secret curve.SecretKey, args ...string) string {
	t.Helper()
	if err := exec.Command(debianPython, "-c", "import zmq; assert zmq.has('curve')").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s with a CURVE-enabled python3-zmq is required in CI (make deps): %v", debianPython, err)
		}
		t.Skipf("%s with a CURVE-enabled python3-zmq not available: %v", debianPython, err)
	}
	z85, err := curve.EncodeZ85(secret[:])
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(debianPython, append([]string{"testdata/curve_rep_server.py", "--secret=" + z85}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "PORT "); ok {
				port <- p
			}
		}
		close(port)
	}()
	select {
	case p, ok := <-port:
		if !ok {
			t.Fatal("curve_rep_server.py exited before binding")
		}
		return "tcp://127.0.0.1:" + p
	case <-time.After(30 * time.Second):
		t.Fatal("curve_rep_server.py did not bind within 30 s")
	}
	return ""
}

func keyPair(t *testing.T) (curve.PublicKey, curve.SecretKey) {
	t.Helper()
	pub, sec, err := curve.GenerateKeyPair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, sec
}

// TestCurveClientAgainstLibzmq: the Go client's handshake and MESSAGE
// framing against libzmq's CURVE server, with short and long frames and
// several requests on one connection (nonces counting up on both sides).
func TestCurveClientAgainstLibzmq(t *testing.T) {
	serverPub, serverSec := keyPair(t)
	ep := startLibzmqREP(t, serverSec)
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 5 * time.Second, Curve: &client.CurveOptions{ServerKey: serverPub}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := bytes.Repeat([]byte("spectrum"), 5000) // 40 KB: a long frame, like a 2048-point predict
	for i, req := range [][]byte{[]byte("hello"), big, {}, []byte("again")} {
		rep, err := c.RoundTrip(context.Background(), req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if want := append([]byte("echo:"), req...); !bytes.Equal(rep, want) {
			t.Fatalf("request %d: reply of %d bytes, want the %d-byte echo", i, len(rep), len(want))
		}
	}
}

// TestCurveClientAnswersLibzmqHeartbeats: libzmq sends its ZMTP PINGs
// encrypted and closes a connection whose peer does not answer within
// the heartbeat timeout (PINGs every 100 ms, 3 s timeout here); the
// server takes 3.5 s to reply, longer than an interval and the timeout,
// so the reply arrives only if the client answered the PINGs meanwhile.
// The timeout is not shorter because a machine busy with a second make
// test has kept the client's goroutine off the cores for more than the
// 200 ms it once was.
func TestCurveClientAnswersLibzmqHeartbeats(t *testing.T) {
	serverPub, serverSec := keyPair(t)
	ep := startLibzmqREP(t, serverSec, "--heartbeat", "100", "--heartbeat-timeout", "3000", "--delay", "3.5")
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 15 * time.Second, Retries: -1, Curve: &client.CurveOptions{ServerKey: serverPub}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, err := c.RoundTrip(context.Background(), []byte("slow"))
	if err != nil || string(rep) != "echo:slow" {
		t.Fatalf("reply %q, %v", rep, err)
	}
}

// TestCurveClientRefusesWrongServerKey: a server that does not hold the
// secret half of the key the client was given never gets a request.
func TestCurveClientRefusesWrongServerKey(t *testing.T) {
	_, serverSec := keyPair(t)
	otherPub, _ := keyPair(t)
	ep := startLibzmqREP(t, serverSec)
	_, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 5 * time.Second, Curve: &client.CurveOptions{ServerKey: otherPub}})
	if !errors.Is(err, client.ErrCurveHandshake) || !strings.Contains(err.Error(), "server public key") {
		t.Fatalf("err = %v, want ErrCurveHandshake naming the server public key", err)
	}
}

// TestCurveClientNotInLibzmqAllowlist: libzmq's ZAP handler refuses a key
// it does not know with an ERROR command; the client reports it at once,
// without retrying, and a known key gets through.
func TestCurveClientNotInLibzmqAllowlist(t *testing.T) {
	serverPub, serverSec := keyPair(t)
	allowedPub, allowedSec := keyPair(t)
	_, strangerSec := keyPair(t)
	ep := startLibzmqREP(t, serverSec, "--allow="+allowedPub.String()) // one argument: a Z85 key may begin with "-"

	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 5 * time.Second, Curve: &client.CurveOptions{ServerKey: serverPub, SecretKey: allowedSec}})
	if err != nil {
		t.Fatalf("allowed client: %v", err)
	}
	if got, _ := c.CurvePublicKey(); got != allowedPub {
		t.Fatalf("CurvePublicKey = %v, want %v", got, allowedPub)
	}
	if rep, err := c.RoundTrip(context.Background(), []byte("hi")); err != nil || string(rep) != "echo:hi" {
		t.Fatalf("allowed client: %q, %v", rep, err)
	}
	c.Close()

	_, err = client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 5 * time.Second, Curve: &client.CurveOptions{ServerKey: serverPub, SecretKey: strangerSec}})
	if !errors.Is(err, client.ErrCurveHandshake) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("stranger: err = %v, want ErrCurveHandshake, refused", err)
	}
}

// TestCurveClientAgainstNullServer: a server without CURVE is named as
// such, not mistaken for a network fault.
func TestCurveClientAgainstNullServer(t *testing.T) {
	serverPub, serverSec := keyPair(t)
	ep := startLibzmqREP(t, serverSec, "--null")
	_, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 5 * time.Second, Curve: &client.CurveOptions{ServerKey: serverPub}})
	if !errors.Is(err, client.ErrCurveHandshake) || !strings.Contains(err.Error(), "does not offer CURVE") {
		t.Fatalf("err = %v, want ErrCurveHandshake: the server does not offer CURVE", err)
	}
}
