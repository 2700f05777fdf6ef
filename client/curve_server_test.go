package client_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/server/zmtp"
	"ramanserve/server/zmtp/curve"
)

// TestCurveAgainstRamanserve: the Go client over CURVE against our own
// ZMTP server and the real channel handler: pong, a prediction, the model
// info and a typed contract error, as over NULL (checkCalls).
func TestCurveAgainstRamanserve(t *testing.T) {
	serverPub, serverSec := keyPair(t)
	ep := serveWith(t, zmtp.Config{Curve: &zmtp.CurveConfig{Secret: serverSec}}, 0)
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 2 * time.Second, Curve: &client.CurveOptions{ServerKey: serverPub}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkCalls(t, c)
}

// TestCurveLazyPirateRetry: a reply lost over CURVE; the retry opens a new
// connection, runs a new handshake and sends the request again.
func TestCurveLazyPirateRetry(t *testing.T) {
	t.Parallel() // its own server; its lost reply waits out a timeout
	serverPub, serverSec := keyPair(t)
	ep := serveWith(t, zmtp.Config{Curve: &zmtp.CurveConfig{Secret: serverSec}}, 1)
	// The lost reply costs one whole timeout; the timeout is generous
	// because each attempt runs a handshake, which under the race
	// detector on a busy machine once took more than a second.
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: 4 * time.Second, Retries: 2, Curve: &client.CurveOptions{ServerKey: serverPub}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if pong, err := c.Ping(context.Background()); err != nil || pong.ModelVersion != "c-1" {
		t.Fatalf("ping after a lost reply: %+v %v", pong, err)
	}
}

// TestCurveRefusals against our server: a wrong server key, a key the
// allowlist does not name, and a NULL server each fail the dial with
// ErrCurveHandshake; the refusals the server states are not retried.
func TestCurveRefusals(t *testing.T) {
	serverPub, serverSec := keyPair(t)
	otherPub, _ := keyPair(t)
	allowedPub, allowedSec := keyPair(t)
	_, strangerSec := keyPair(t)
	ep := serveWith(t, zmtp.Config{Curve: &zmtp.CurveConfig{Secret: serverSec,
		Allow: func(k curve.PublicKey) bool { return k == allowedPub }}}, 0)
	dial := func(endpoint string, o client.CurveOptions) error {
		c, err := client.DialPrediction(context.Background(), endpoint, client.PredictionOptions{Timeout: 2 * time.Second, Curve: &o})
		if err == nil {
			_, err = c.Ping(context.Background())
			c.Close()
		}
		return err
	}
	if err := dial(ep, client.CurveOptions{ServerKey: serverPub, SecretKey: allowedSec}); err != nil {
		t.Fatalf("allowed client: %v", err)
	}
	for name, o := range map[string]client.CurveOptions{
		"wrong server key": {ServerKey: otherPub, SecretKey: allowedSec},
		"not allowed":      {ServerKey: serverPub, SecretKey: strangerSec},
	} {
		if err := dial(ep, o); !errors.Is(err, client.ErrCurveHandshake) {
			t.Errorf("%s: err = %v, want ErrCurveHandshake", name, err)
		}
	}
	null := serve(t, 0)
	if err := dial(null, client.CurveOptions{ServerKey: serverPub}); !errors.Is(err, client.ErrCurveHandshake) {
		t.Errorf("NULL server: err = %v, want ErrCurveHandshake", err)
	}
}

// TestCurveRefusalIsNotRetried: when the Lazy Pirate loop reconnects
// after a lost reply and the server now refuses the client's key, the
// call ends at once with the refusal instead of backing off and retrying.
func TestCurveRefusalIsNotRetried(t *testing.T) {
	serverPub, serverSec := keyPair(t)
	var allowed atomic.Bool
	var refusals atomic.Int32 // handshakes refused: one per attempt to reconnect
	allowed.Store(true)
	ep := serveWith(t, zmtp.Config{Curve: &zmtp.CurveConfig{Secret: serverSec,
		Allow: func(curve.PublicKey) bool {
			if allowed.Load() {
				return true
			}
			refusals.Add(1)
			return false
		}}}, 1)
	c, err := client.DialPrediction(context.Background(), ep, client.PredictionOptions{
		Timeout: time.Second, Retries: 5, Backoff: 100 * time.Millisecond, Curve: &client.CurveOptions{ServerKey: serverPub}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	allowed.Store(false) // the operator removed the key; the open connection stays
	_, err = c.Ping(context.Background())
	if !errors.Is(err, client.ErrCurveHandshake) {
		t.Fatalf("err = %v, want ErrCurveHandshake", err)
	}
	// The server decides each handshake before the client reads its
	// answer, so every reconnect the call made has been counted.
	if n := refusals.Load(); n != 1 {
		t.Fatalf("the client reconnected %d times after the refusal, want 1 (no retry)", n)
	}
}
