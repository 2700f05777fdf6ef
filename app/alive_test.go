package app

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"ramanserve/server/tlstest"
	"testing"
	"time"
)

// TestAliveFollowsTheServingLoops: a serving app is alive; once its
// listeners are closed it is not, and the watchdog goes unfed.
func TestAliveFollowsTheServingLoops(t *testing.T) {
	a, err := Start(context.Background(), Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Alive(ctx); err != nil {
		t.Fatalf("a serving app: %v", err)
	}
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Alive(ctx); err == nil {
		t.Fatal("an app that shut down is alive")
	}
}

// TestAnswersNeedsAnAcceptingLoop: a port whose connections the kernel
// queues but no loop accepts does not answer within the deadline; one
// whose loop accepts and answers, or closes, does.
func TestAnswersNeedsAnAcceptingLoop(t *testing.T) {
	stuck, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close() // never accepts: the kernel's backlog takes the connection
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := answers(ctx, "stuck", stuck.Addr().String(), []byte("\r\n")); err == nil {
		t.Fatal("a port nobody accepts on answered")
	}

	serving, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer serving.Close()
	go func() {
		for i := 0; ; i++ {
			c, err := serving.Accept()
			if err != nil {
				return
			}
			if i%2 == 0 {
				c.Write([]byte("x")) // a greeting
			}
			c.Close() // or a refusal that closes
		}
	}()
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := answers(ctx, "serving", serving.Addr().String(), nil); err != nil {
			t.Fatalf("a serving port: %v", err)
		}
		cancel()
	}
	if got := loopback("[::]:5556"); got != "127.0.0.1:5556" {
		t.Fatalf("loopback([::]:5556) = %s", got)
	}
}

// TestAliveOverMutualTLS: the management port's probe needs no
// certificate: a TLS server answers (or closes) a line that is no TLS.
func TestAliveOverMutualTLS(t *testing.T) {
	ca, err := tlstest.NewCA("alive-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key, caFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem")
	if err := leaf.Write(cert, key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: t.TempDir()}
	cfg.HTTP.TLS.CertFile, cfg.HTTP.TLS.KeyFile, cfg.HTTP.TLS.ClientCAFile = cert, key, caFile
	a, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer a.Shutdown(ctx)
	if err := a.Alive(ctx); err != nil {
		t.Fatalf("a serving app over mutual TLS: %v", err)
	}
}
