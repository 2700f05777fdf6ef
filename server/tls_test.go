package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/server/tlstest"
)

// tlsFixture is a CA, a server certificate it signed, and the files
// -tls-cert and -tls-key name.
type tlsFixture struct {
	ca        *tlstest.CA
	leaf      tlstest.Leaf
	cert, key string
}

func newTLSFixture(t *testing.T) tlsFixture {
	t.Helper()
	dir := t.TempDir()
	f := tlsFixture{ca: newCA(t, "test CA"), cert: filepath.Join(dir, "server.pem"), key: filepath.Join(dir, "server.key")}
	f.leaf = f.issue(t)
	return f
}

// issue writes a new server certificate and key over the fixture's files.
func (f tlsFixture) issue(t *testing.T) tlstest.Leaf {
	t.Helper()
	leaf, err := f.ca.Server("ramanserve")
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.Write(f.cert, f.key); err != nil {
		t.Fatal(err)
	}
	return leaf
}

func newCA(t *testing.T, name string) *tlstest.CA {
	t.Helper()
	ca, err := tlstest.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// startTLS starts a server whose management channel is cfg (its TLS
// files set by the caller).
func startTLS(t *testing.T, cfg HTTPConfig, log *slog.Logger) *testProcess {
	t.Helper()
	app, err := startProcess(context.Background(), processConfig{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: t.TempDir(),
		HTTP: cfg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Shutdown(context.Background()) })
	return app
}

// handshake connects to addr with cfg (ServerName 127.0.0.1 unless set)
// and returns the connection state, after one round trip so that a
// TLS 1.3 server's refusal of the client certificate shows.
func handshake(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = "127.0.0.1"
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	resp, _, err := tryAsk(c, r, "GET", "/health", 5*time.Second)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	if resp.StatusCode != 200 {
		return tls.ConnectionState{}, fmt.Errorf("health over TLS: %d", resp.StatusCode)
	}
	return c.ConnectionState(), nil
}

// servedSerial is the serial number of the certificate a new connection
// to addr gets.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) *big.Int {
	t.Helper()
	st, err := handshake(addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	return st.PeerCertificates[0].SerialNumber
}

// levelRecorder keeps the level and message of every record.
type levelRecorder struct {
	mu      sync.Mutex
	records []string
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler            { return h }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Level.String()+" "+r.Message)
	return nil
}

func (h *levelRecorder) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.records...)
}

// TestTLSManagementChannel: with -tls-cert and -tls-key the management
// channel speaks TLS 1.2 or 1.3 with HTTP/1.1; a TLS 1.1 client, a TLS 1.2
// client offering only CBC suites, and plain HTTP are refused. A failed
// handshake is logged at debug level, not as a warning.
func TestTLSManagementChannel(t *testing.T) {
	f := newTLSFixture(t)
	rec := &levelRecorder{}
	app := startTLS(t, HTTPConfig{TLS: TLSConfig{CertFile: f.cert, KeyFile: f.key}}, slog.New(rec))
	addr, roots := app.HTTPAddr(), f.ca.Pool()

	st, err := handshake(addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "" || st.PeerCertificates[0].SerialNumber.Cmp(f.leaf.Serial) != 0 {
		t.Errorf("default client: version %x, ALPN %q, serial %v", st.Version, st.NegotiatedProtocol, st.PeerCertificates[0].SerialNumber)
	}
	st, err = handshake(addr, &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != tls.VersionTLS12 || st.NegotiatedProtocol != "http/1.1" {
		t.Errorf("TLS 1.2 client offering h2: version %x, ALPN %q, want TLS 1.2 and http/1.1", st.Version, st.NegotiatedProtocol)
	}
	res, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}).Get("https://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.ProtoMajor != 1 {
		t.Errorf("health with an HTTP/2-capable client: %d over %s", res.StatusCode, res.Proto)
	}

	for _, refused := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"TLS 1.1", &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}},
		{"TLS 1.2 with CBC suites only", &tls.Config{RootCAs: roots, MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}}},
		{"a client that does not trust the CA", &tls.Config{}},
	} {
		if _, err := handshake(addr, refused.cfg); err == nil {
			t.Errorf("%s: handshake succeeded", refused.name)
		}
	}

	c, r := dial(t, addr)
	resp, body := ask(t, c, r, "GET", "/health")
	if resp.StatusCode != 400 {
		t.Errorf("plain HTTP on the TLS port: %d %s, want 400", resp.StatusCode, body)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		var handshakeDebug, warnings []string
		for _, l := range rec.lines() {
			switch {
			case strings.HasPrefix(l, "DEBUG http: TLS handshake error"):
				handshakeDebug = append(handshakeDebug, l)
			case strings.HasPrefix(l, "WARN http:"), strings.HasPrefix(l, "ERROR http:"): // net/http's error log
				warnings = append(warnings, l)
			}
		}
		if len(warnings) > 0 {
			t.Fatalf("warnings logged: %q", warnings)
		}
		if len(handshakeDebug) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d failed handshakes logged at debug level, want 3: %q", len(handshakeDebug), rec.lines())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLSStartRefusesBadFiles: a TLS file that cannot be used fails the
// start, naming it.
func TestTLSStartRefusesBadFiles(t *testing.T) {
	f := newTLSFixture(t)
	dir := t.TempDir()
	other := filepath.Join(dir, "other.key")
	otherLeaf, err := f.ca.Server("other")
	if err != nil {
		t.Fatal(err)
	}
	if err := otherLeaf.Write(filepath.Join(dir, "other.pem"), other); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files TLSConfig
		err   string
	}{
		{"key without certificate", TLSConfig{KeyFile: f.key}, "-tls-cert"},
		{"certificate without key", TLSConfig{CertFile: f.cert}, "-tls-key"},
		{"client CAs without certificate", TLSConfig{ClientCAFile: notPEM}, "-tls-cert"},
		{"missing certificate", TLSConfig{CertFile: filepath.Join(dir, "none.pem"), KeyFile: f.key}, "no such file"},
		{"key of another certificate", TLSConfig{CertFile: f.cert, KeyFile: other}, "private key does not match public key"},
		{"certificate not PEM", TLSConfig{CertFile: notPEM, KeyFile: f.key}, "failed to find any PEM data"},
		{"certificate a device", TLSConfig{CertFile: "/dev/zero", KeyFile: f.key}, "not a regular file"},
		{"key a directory", TLSConfig{CertFile: f.cert, KeyFile: dir}, "not a regular file"},
		{"client CA file without a certificate", TLSConfig{CertFile: f.cert, KeyFile: f.key, ClientCAFile: notPEM}, notPEM + " holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			reg := filepath.Join(t.TempDir(), "reg")
			app, err := startProcess(context.Background(), processConfig{HTTPAddr: addr, ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: reg, HTTP: HTTPConfig{TLS: tc.files}})
			if err == nil {
				app.Shutdown(context.Background())
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Start: %v, want an error mentioning %q", err, tc.err)
			}
			if _, err := os.Stat(reg); err == nil {
				t.Error("a start refused for its TLS files created the registry")
			}
		})
	}
}

// TestTLSReload: a reload serves a rotated certificate to new
// connections, while one kept alive goes on with the old; a reload of a
// file that cannot be used fails and keeps the previous certificate.
func TestTLSReload(t *testing.T) {
	f := newTLSFixture(t)
	app := startTLS(t, HTTPConfig{TLS: TLSConfig{CertFile: f.cert, KeyFile: f.key}}, nil)
	addr, roots := app.HTTPAddr(), f.ca.Pool()
	if got := servedSerial(t, addr, roots); got.Cmp(f.leaf.Serial) != 0 {
		t.Fatalf("serial %v, want %v", got, f.leaf.Serial)
	}
	kept, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	keptReader := bufio.NewReader(kept)
	ask(t, kept, keptReader, "GET", "/health")

	rotated := f.issue(t)
	if err := app.Reload(context.Background()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := servedSerial(t, addr, roots); got.Cmp(rotated.Serial) != 0 {
		t.Fatalf("after the reload: serial %v, want the rotated %v", got, rotated.Serial)
	}
	if resp, _ := ask(t, kept, keptReader, "GET", "/health"); resp.StatusCode != 200 {
		t.Errorf("a connection kept alive through the reload: %d", resp.StatusCode)
	}

	for _, broken := range []struct {
		name   string
		damage func()
		err    string
	}{
		{"certificate not PEM", func() { os.WriteFile(f.cert, []byte("garbage"), 0o644) }, "failed to find any PEM data"},
		{"certificate and key of different pairs", func() {
			other, err := f.ca.Server("other")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(f.cert, other.CertPEM, 0o644)
			os.WriteFile(f.key, rotated.KeyPEM, 0o600)
		}, "private key does not match"},
		{"key removed", func() { os.Remove(f.key) }, "no such file"},
	} {
		broken.damage()
		err := app.Reload(context.Background())
		if err == nil || !strings.Contains(err.Error(), broken.err) || !strings.Contains(err.Error(), "previous certificate") {
			t.Errorf("reload with %s: %v, want an error mentioning %q", broken.name, err, broken.err)
		}
		if got := servedSerial(t, addr, roots); got.Cmp(rotated.Serial) != 0 {
			t.Errorf("after a reload with %s: serial %v, want the previous %v", broken.name, got, rotated.Serial)
		}
	}
}

// TestMutualTLSReload: with -tls-client-ca a client needs a certificate
// signed by one of the CAs; a reload replaces the CAs for new
// connections, and a CA file without a certificate keeps the previous.
func TestMutualTLSReload(t *testing.T) {
	f := newTLSFixture(t)
	caA, caB := newCA(t, "client CA A"), newCA(t, "client CA B")
	clientCAs := filepath.Join(t.TempDir(), "clients.pem")
	if err := os.WriteFile(clientCAs, caA.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	app := startTLS(t, HTTPConfig{TLS: TLSConfig{CertFile: f.cert, KeyFile: f.key, ClientCAFile: clientCAs}}, nil)
	addr, roots := app.HTTPAddr(), f.ca.Pool()
	withCert := func(ca *tlstest.CA) *tls.Config {
		leaf, err := ca.Client("console")
		if err != nil {
			t.Fatal(err)
		}
		pair, err := leaf.TLSCertificate()
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}
	}
	check := func(when string, cfg *tls.Config, accepted bool) {
		t.Helper()
		_, err := handshake(addr, cfg)
		if accepted && err != nil {
			t.Errorf("%s: refused: %v", when, err)
		}
		if !accepted && err == nil {
			t.Errorf("%s: accepted", when)
		}
	}
	fromA, fromB := withCert(caA), withCert(caB)
	noCert := &tls.Config{RootCAs: roots}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		noCertV := noCert.Clone()
		noCertV.MaxVersion = v
		check(fmt.Sprintf("TLS %x without a client certificate", v), noCertV, false)
	}
	check("certificate from CA A", fromA, true)
	check("certificate from CA B", fromB, false)
	self := newCA(t, "console") // a self-signed certificate, presented as the client's
	selfLeaf, err := self.Client("console")
	if err != nil {
		t.Fatal(err)
	}
	selfPair, _ := selfLeaf.TLSCertificate()
	check("certificate from an unknown CA", &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{selfPair}}, false)

	if err := os.WriteFile(clientCAs, caB.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := app.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after the reload, certificate from CA B", fromB, true)
	check("after the reload, certificate from CA A", fromA, false)

	if err := os.WriteFile(clientCAs, []byte("# no certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := app.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Fatalf("reload of a CA file without a certificate: %v", err)
	}
	check("after a failed reload, certificate from CA B", fromB, true)
	check("after a failed reload, no certificate", noCert, false)
}

// TestTLSHandshakeDeadline: a client that connects to the TLS port and
// sends nothing, or half a ClientHello, is closed by the server when
// ReadHeaderTimeout (10 s) runs out, though the connection cap is far.
func TestTLSHandshakeDeadline(t *testing.T) {
	t.Parallel()
	f := newTLSFixture(t)
	app := startTLS(t, HTTPConfig{TLS: TLSConfig{CertFile: f.cert, KeyFile: f.key}}, nil)
	const limit = 10 * time.Second // app.httpServer.ReadHeaderTimeout
	if app.httpServer.ReadHeaderTimeout != limit {
		t.Fatalf("ReadHeaderTimeout %v, this test expects %v", app.httpServer.ReadHeaderTimeout, limit)
	}
	var wg sync.WaitGroup
	for _, sent := range []struct {
		name  string
		bytes []byte
	}{
		{"silent", nil},
		{"half a ClientHello", []byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0xfc, 0x03, 0x03}},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", app.HTTPAddr())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			start := time.Now()
			c.Write(sent.bytes)
			c.SetReadDeadline(time.Now().Add(limit + 5*time.Second))
			n, err := io.Copy(io.Discard, c)
			took := time.Since(start)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("%s client: still open after %v", sent.name, took)
				return
			}
			if took < limit-time.Second || took > limit+3*time.Second {
				t.Errorf("%s client: closed after %v (%d bytes read, %v), want about %v", sent.name, took, n, err, limit)
			}
		}()
	}
	wg.Wait()
}

// TestTLSConnectionCap: over TLS the connection cap still tells a request
// in progress from a connection without one, and the health reserve still
// answers GET /health only, while silent TLS clients are evicted.
func TestTLSConnectionCap(t *testing.T) {
	f := newTLSFixture(t)
	// The held request's body waits while ten probes go through the
	// flood; beside a second make test one probe took 3.6 s, and the
	// default JSON body limit (10 s) then answered the held request 408.
	// The body limits are not what this test is about.
	app := startTLS(t, HTTPConfig{TLS: TLSConfig{CertFile: f.cert, KeyFile: f.key}, MaxConnections: 1,
		BodyIdleTimeout: 5 * time.Minute, JSONBodyTimeout: 5 * time.Minute}, nil)
	addr, roots := app.HTTPAddr(), f.ca.Pool()
	// A handshake that waits on its client longer than helloGrace (this
	// test's own client, under the race detector on a busy machine) may
	// be evicted by the flood, as an attacker's would: the client then
	// dials again, as a real one does. Every retry is logged.
	dialTLS := func() (*tls.Conn, *bufio.Reader) {
		for attempt := 1; ; attempt++ {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
			if err != nil && attempt < 3 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
				t.Logf("TLS dial %d evicted during its handshake (%v): dialling again", attempt, err)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c, bufio.NewReader(c)
		}
	}

	// The one regular slot: a load whose JSON body is still arriving.
	held, heldReader := dialTLS()
	body := `{"version":"none","source":"staged"}`
	fmt.Fprintf(held, "POST /model/load HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:5])
	waitActive(t, app.httpLn, 1)
	app.httpLn.mu.Lock()
	for c := range app.httpLn.open {
		if !c.tlsHello.Load() {
			t.Error("a connection past its TLS handshake is not marked as having sent its ClientHello")
		}
	}
	app.httpLn.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	const flood = healthReserveConns + 32 // more than the reserve holds
	wait := silentFlood(ctx, addr, flood)
	defer func() { cancel(); wait() }()
	waitReserveFull(t, app.httpLn)

	var slowest time.Duration
	for i := range 10 {
		start := time.Now()
		c, r := dialTLS()
		resp, _, err := tryAsk(c, r, "GET", "/health", 5*time.Second)
		took := time.Since(start)
		// A correctness bound, not a latency goal: the slowest probe is
		// logged. Under the race detector, on a machine loaded by other
		// test runs, probes took up to 2.6 s.
		if err != nil || resp.StatusCode != 200 || took > 5*time.Second {
			t.Fatalf("health %d through the silent flood: %v after %v", i, err, took)
		}
		slowest = max(slowest, took)
		c.Close()
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("10 GET /health over new TLS connections through %d silent reconnecting clients: slowest %v (handshake included)", flood, slowest)
	c, r := dialTLS()
	resp, b, err := tryAsk(c, r, "GET", "/model/info", time.Second)
	var e gen.ErrorResponse
	if err != nil || resp.StatusCode != 503 || json.Unmarshal(b, &e) != nil || e.Code != "SERVER_BUSY" {
		t.Fatalf("GET /model/info on a reserve connection: %v %s, want 503 SERVER_BUSY", err, b)
	}
	app.httpLn.mu.Lock()
	open := len(app.httpLn.open)
	app.httpLn.mu.Unlock()
	if open > 1+healthReserveConns {
		t.Errorf("%d connections open, want at most %d", open, 1+healthReserveConns)
	}

	io.WriteString(held, body[5:])
	held.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err = http.ReadResponse(heldReader, nil)
	if err != nil {
		t.Fatalf("the request in progress through the flood: %v", err)
	}
	b, _ = io.ReadAll(resp.Body)
	if json.Unmarshal(b, &e) != nil || e.Code != "MODEL_NOT_FOUND" {
		t.Fatalf("the request in progress through the flood: %d %s, want MODEL_NOT_FOUND", resp.StatusCode, b)
	}
}

// TestHelloGrace: at the cap, a connection whose whole TLS ClientHello
// has arrived is not evicted in its first helloGrace, while a plain one
// that has sent part of its header is after evictGrace; past helloGrace
// it is a candidate like any other.
func TestHelloGrace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(ln, 2)
	defer l.Close()
	now := time.Now()
	conn := func(hello bool) *limitedConn {
		c := &limitedConn{l: l}
		c.state.Store(int32(http.StateNew))
		c.gotBytes.Store(true)
		c.tlsHello.Store(hello)
		c.since.Store(now.Add(-5 * evictGrace).UnixNano())
		l.open[c] = struct{}{}
		l.regular++
		return c
	}
	handshaking, partial := conn(true), conn(false)
	if victim, _ := l.rankedCandidate(false, now, nil); victim != partial {
		t.Fatalf("victim %p, want the plain partial header %p (not the TLS handshake %p)", victim, partial, handshaking)
	}
	l.releaseLocked(partial)
	victim, wait := l.rankedCandidate(false, now, nil)
	if victim != nil || wait <= 0 {
		t.Fatalf("a TLS handshake %v old: victim %v, wait %v; want none, a wait", 5*evictGrace, victim, wait)
	}
	if victim, _ := l.rankedCandidate(false, now.Add(helloGrace), nil); victim != handshaking {
		t.Fatalf("a TLS handshake past helloGrace: victim %v, want it", victim)
	}

	// While this server has not yet answered the ClientHello (a busy
	// machine, the handshake's signature still to compute), the
	// connection waits on the server: it is no victim however old. Its
	// grace starts again when the answer is written.
	handshaking.serverTurn.Store(true)
	if victim, _ := l.rankedCandidate(false, now.Add(time.Minute), nil); victim != nil {
		t.Fatalf("a TLS handshake the server has not answered, a minute old: victim %p, want none", victim)
	}
	server, client := net.Pipe()
	defer client.Close()
	handshaking.Conn = server
	go io.Copy(io.Discard, client)
	written := time.Now()
	if _, err := handshaking.Write([]byte("server hello")); err != nil {
		t.Fatal(err)
	}
	if victim, _ := l.rankedCandidate(false, written.Add(helloGrace/2), nil); victim != nil {
		t.Fatalf("a TLS handshake answered %v ago: victim %p, want none (its grace starts at the answer)", helloGrace/2, victim)
	}
	if victim, _ := l.rankedCandidate(false, written.Add(2*helloGrace), nil); victim != handshaking {
		t.Fatalf("a TLS handshake answered %v ago: victim %v, want it", 2*helloGrace, victim)
	}
}

// waitReserveFull waits until a flood has filled l's health reserve.
func waitReserveFull(t *testing.T, l *connLimitListener) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		reserve := len(l.open) - l.regular
		l.mu.Unlock()
		if reserve >= healthReserveConns {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d reserve connections open after 5 s of flood, want %d", reserve, healthReserveConns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
