package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/server/auth"
	"ramanserve/service/training"
	"ramanserve/trainer/jobs"
)

// countingTraining counts the mutations that reached the service.
type countingTraining struct {
	quietTraining
	calls *atomic.Int64
}

func (c countingTraining) Reserve(ctx context.Context) (training.Upload, error) {
	c.calls.Add(1)
	return c.quietTraining.Reserve(ctx)
}

func (c countingTraining) Cancel(ctx context.Context, id string) (jobs.Job, error) {
	c.calls.Add(1)
	return c.quietTraining.Cancel(ctx, id)
}

// rawExchange sends req as it is written (no client normalising the
// path, the method or the headers) and returns the status code.
func rawExchange(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0 // closed without an answer
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTokenGateBypassAttempts: no spelling of a mutation's request line
// or headers reaches a mutation without the operate role: path tricks,
// case, absolute form, method overrides, a CORS preflight's shape, two
// Authorization headers, malformed Bearer values, a read token.
func TestTokenGateBypassAttempts(t *testing.T) {
	const operate, read = "op-token-1234", "read-token-5678"
	var calls atomic.Int64
	h, err := newHTTPHandler(&API{Training: countingTraining{calls: &calls}}, HTTPConfig{CORSOrigins: []string{"https://console.example"}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h.gate = &tokenGate{tokens: auth.NewStore(tokenSet(t, tokenLine("operate", operate, "console"), tokenLine("read", read, "dashboard")))}
	addr, _ := servedBehindLimit(t, 16, h)

	// The operate token reaches the service: the probe can see a bypass.
	if st := rawExchange(t, addr, "POST /training/job-1/cancel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+operate+"\r\nConnection: close\r\n\r\n"); st/100 != 2 || calls.Load() != 1 {
		t.Fatalf("operate cancel: %d, %d calls", st, calls.Load())
	}
	calls.Store(0)

	paths := []string{
		"/training/job-1/cancel", "//training/job-1/cancel", "/training/job-1/cancel/", "/training/job-1%2Fcancel",
		"/Training/job-1/cancel", "/training/job-1/cancel.", "/./training/job-1/cancel", "/x/../training/job-1/cancel",
		"/training/job-1/cancel?x=1", "http://x/training/job-1/cancel", "/training/job-1/%63ancel",
	}
	auths := []string{
		"", "Authorization: Bearer " + read + "\r\n",
		"Authorization: Bearer " + read + "\r\nAuthorization: Bearer " + operate + "\r\n",
		"Authorization: Bearer " + operate + "\r\nAuthorization: Bearer " + read + "\r\n",
		"Authorization: Bearer\t" + operate + "x\r\n", "Authorization: bearer " + read + "\r\n",
		"Authorization: Basic " + operate + "\r\n", "Authorization: Bearer " + operate + "x\r\n",
		"Authorization: Bearer  " + operate + " x\r\n",
	}
	extras := []string{
		"", "X-HTTP-Method-Override: POST\r\n", "X-Method-Override: POST\r\n", "X-HTTP-Method: POST\r\n",
		"Origin: https://console.example\r\nAccess-Control-Request-Method: POST\r\n",
		"Origin: https://evil.example\r\nAccess-Control-Request-Method: POST\r\n",
	}
	methods := []string{"POST", "GET", "HEAD", "OPTIONS", "post", "PUT", "PATCH", "DELETE"}
	n := 0
	for _, m := range methods {
		for _, p := range paths {
			for _, a := range auths {
				for _, x := range extras {
					req := m + " " + p + " HTTP/1.1\r\nHost: x\r\n" + a + x + "Content-Length: 0\r\nConnection: close\r\n\r\n"
					st := rawExchange(t, addr, req)
					n++
					if calls.Load() != 0 {
						t.Fatalf("a mutation reached the service (%d) with:\n%s", st, req)
					}
					// A read token may GET; any other method, or no valid token, is refused.
					if st/100 == 2 && m != "OPTIONS" && !(m == "GET" || m == "HEAD") {
						t.Errorf("%d for:\n%s", st, req)
					}
				}
			}
		}
	}
	t.Logf("%d requests, none reached a mutation", n)
}
