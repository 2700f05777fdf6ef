package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/server/auth"
	"ramanserve/server/metrics"
)

func tokenSet(t *testing.T, lines ...string) *auth.Set {
	t.Helper()
	set, err := auth.Parse(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func tokenLine(role, token, name string) string {
	return strings.TrimSuffix(auth.FileLine(auth.Role(role), token, name), "\n")
}

// TestTokenGateAccessLog: the access-log line of an authenticated request
// names its token; refused requests are logged with their 401 or 403 and
// no name; no token, known or not, is ever written to the log.
func TestTokenGateAccessLog(t *testing.T) {
	const operate, read, unknown = "op-token-1234", "read-token-5678", "unknown-token-9999"
	logs := &logBuffer{}
	h, err := newHTTPHandler(&API{Training: quietTraining{}}, HTTPConfig{}, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.gate = &tokenGate{tokens: auth.NewStore(tokenSet(t, tokenLine("operate", operate, "console"), tokenLine("read", read, "dashboard")))}
	addr, _ := servedBehindLimit(t, 16, h)
	base := "http://" + addr

	for _, c := range []struct {
		id, method, path, token string
		status                  int
		name                    any
	}{
		{"op", "GET", "/training/job-42", operate, 200, "console"},
		{"read", "GET", "/training/job-42", read, 200, "dashboard"},
		{"read-post", "POST", "/training/job-42/cancel", read, 403, nil},
		{"none", "GET", "/training/job-42", "", 401, nil},
		{"unknown", "GET", "/training/job-42", unknown, 401, nil},
		{"no-route", "GET", "/nope", "", 401, nil},
	} {
		hdr := http.Header{"X-Request-Id": {c.id}}
		if c.token != "" {
			hdr.Set("Authorization", "Bearer "+c.token)
		}
		resp, b := send(t, c.method, base+c.path, hdr, nil)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %s, want %d", c.id, resp.StatusCode, b, c.status)
		}
		line := logs.accessLine(t, c.id)
		if line["status"] != float64(c.status) || line["authenticated_as"] != c.name {
			t.Errorf("%s: access line %v, want status %d, authenticated_as %v", c.id, line, c.status, c.name)
		}
	}
	for _, tok := range []string{operate, read, unknown} {
		if strings.Contains(logs.buf.String(), tok) {
			t.Fatalf("a token in the log:\n%s", logs.buf.String())
		}
	}
}

// TestWarningWithoutAuth: the server warns when it serves the management
// channel without authentication on an address that is not loopback, and
// only then.
func TestWarningWithoutAuth(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(tokenLine("read", "t", "n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr, tokens string
		warn         bool
	}{
		{"127.0.0.1:0", "", false},
		{":0", "", true},
		{":0", tokens, false},
	} {
		logs := &logBuffer{}
		app, err := startProcess(context.Background(), processConfig{HTTPAddr: c.addr, ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: t.TempDir(),
			Auth: AuthConfig{TokensFile: c.tokens}, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		app.Shutdown(ctx)
		cancel()
		warned := strings.Contains(logs.buf.String(), "authentication is off on a management address that is not loopback")
		if warned != c.warn {
			t.Errorf("%s, tokens %q: warned %v, want %v", c.addr, c.tokens, warned, c.warn)
		}
	}
}

// TestTokenGateOnTheHealthReserve: authentication comes before the
// reserve's gate, and a refusal on a reserve connection closes it, as the
// reserve's own 503 does: a client without a token cannot keep a reserve
// slot by asking again. The probes (GET /health, /livez, /readyz, and
// HEAD) stay open there.
func TestTokenGateOnTheHealthReserve(t *testing.T) {
	t.Parallel() // waits on its own server's timers: runs beside the others
	const token = "op-token-1234"
	release := make(chan struct{})
	web, err := newWebLayer(reserveGate(holdHandler(release)), nil, metrics.New(metrics.Sources{}).HTTP(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	web.gate = &tokenGate{tokens: auth.NewStore(tokenSet(t, tokenLine("operate", token, "console")))}
	addr, l := servedBehindLimit(t, 1, web)
	t.Cleanup(func() { close(release) })
	holder, _ := dial(t, addr)
	fmt.Fprintf(holder, "GET /hold HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", token)
	waitOpen(t, l, 1, 0)
	waitActive(t, l, 1)

	for _, q := range []struct {
		method, path, authorization string
		status                      int
		closed                      bool
	}{
		{"GET", "/health", "", 200, false},
		{"GET", "/livez", "", 200, false},
		{"HEAD", "/readyz", "", 200, false},
		{"GET", "/readyz/x", "", 401, true},
		{"POST", "/model/load", "Bearer " + token, 503, true},
		{"POST", "/model/load", "", 401, true},
	} {
		c, r := dial(t, addr)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		hdr := ""
		if q.authorization != "" {
			hdr = "Authorization: " + q.authorization + "\r\n"
		}
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\n%sContent-Length: 0\r\n\r\n", q.method, q.path, hdr)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != q.status || resp.Close != q.closed {
			t.Errorf("%s %s (%q) on the reserve: %d, closed %v; want %d, closed %v", q.method, q.path, q.authorization, resp.StatusCode, resp.Close, q.status, q.closed)
		}
		c.Close()
	}
}
