package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/trainer"
)

// limitedServer serves handler behind the connection limit, as Start does.
func limitedServer(t *testing.T, max int, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: reserveGate(handler), ConnContext: connContext, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(newConnLimitListener(ln, max))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// ask sends one request on c and reads the answer.
func ask(t *testing.T, c net.Conn, r *bufio.Reader, method, path string) (*http.Response, []byte) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", method, path)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// TestHealthReserve: with every regular slot held by a silent client, a
// new connection lands in the reserve. There GET /health is answered,
// keep-alive included; anything else is 503 SERVER_BUSY and closed; a
// silent reserve connection is closed within reserveTimeout. Once a
// regular slot frees, a new connection is regular again.
func TestHealthReserve(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	addr := limitedServer(t, 2, ok)
	holders := make([]net.Conn, 2)
	for i := range holders {
		c, r := dial(t, addr)
		if resp, _ := ask(t, c, r, "POST", "/model/load"); resp.StatusCode != 200 {
			t.Fatalf("regular slot %d: %d", i, resp.StatusCode)
		}
		holders[i] = c
	}

	c, r := dial(t, addr)
	for i := 0; i < 3; i++ {
		if resp, _ := ask(t, c, r, "GET", "/health"); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("health on a reserve connection: %d close=%v", resp.StatusCode, resp.Close)
		}
		time.Sleep(time.Second) // inside reserveTimeout: kept alive
	}
	resp, body := ask(t, c, r, "POST", "/model/load")
	var e gen.ErrorResponse
	if json.Unmarshal(body, &e); resp.StatusCode != 503 || e.Code != "SERVER_BUSY" || !resp.Close || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("POST on a reserve connection: %d %s close=%v", resp.StatusCode, body, resp.Close)
	}

	silent, _ := dial(t, addr)
	start := time.Now()
	silent.SetReadDeadline(time.Now().Add(reserveTimeout + 5*time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent reserve connection: %v, want closed by the server", err)
	}
	if took := time.Since(start); took > reserveTimeout+time.Second {
		t.Errorf("silent reserve connection closed after %v, want within %v", took, reserveTimeout)
	}

	holders[0].Close()
	time.Sleep(100 * time.Millisecond)
	c2, r2 := dial(t, addr)
	if resp, _ := ask(t, c2, r2, "POST", "/model/load"); resp.StatusCode != 200 {
		t.Fatalf("after a regular slot freed: %d", resp.StatusCode)
	}
}

// TestConnectionCapHolds: beyond the cap and the reserve, connections are
// not accepted (they wait in the kernel's queue), so they hold no file
// descriptor and no goroutine in the server.
func TestConnectionCapHolds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(ln, 1)
	defer l.Close()
	accepted := make(chan net.Conn, 100)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for range 1 + healthReserveConns + 5 {
		dial(t, ln.Addr().String())
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(accepted); n != 1+healthReserveConns {
		t.Fatalf("%d connections accepted, want %d", n, 1+healthReserveConns)
	}
	(<-accepted).Close()
	time.Sleep(100 * time.Millisecond)
	if n := len(accepted); n != healthReserveConns+1 {
		t.Fatalf("after one closed: %d waiting, want %d", n, healthReserveConns+1)
	}
	l.Close()
	for c := range accepted {
		c.Close()
	}
}

// quietTraining is a training service whose uploads always get a slot;
// nothing is ever submitted in these tests.
type quietTraining struct{}

func (quietTraining) Reserve(context.Context) (TrainingUpload, error) { return quietUpload{}, nil }
func (quietTraining) Job(context.Context, string) (gen.TrainingJob, error) {
	return gen.TrainingJob{}, nil
}

type quietUpload struct{}

func (quietUpload) TryAcquire(int64) bool { return true }
func (quietUpload) Submit(context.Context, *trainer.Dataset, gen.TrainingMeta) (gen.TrainingJobAccepted, error) {
	return gen.TrainingJobAccepted{}, nil
}
func (quietUpload) Release() {}

// TestJSONBodyTotalLimit: a JSON body trickled in faster than the idle
// limit but slower than the total one is 408 at the total limit.
func TestJSONBodyTotalLimit(t *testing.T) {
	h, err := newHTTPHandler(&API{}, HTTPConfig{BodyIdleTimeout: 5 * time.Second, JSONBodyTimeout: 500 * time.Millisecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr := limitedServer(t, 10, h)
	c, r := dial(t, addr)
	fmt.Fprintf(c, "POST /model/load HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	start := time.Now()
	go func() {
		for range 30 {
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); resp.StatusCode != 408 || !strings.Contains(string(body), "REQUEST_TIMEOUT") || took > 2*time.Second {
		t.Fatalf("trickled JSON body: %d %s after %v, want 408 at about 500ms", resp.StatusCode, body, took)
	}
}

// TestAbortBodies: shutdown cuts an upload stalled in its body at once
// with 503 SHUTTING_DOWN, and a body arriving after it began is cut too.
func TestAbortBodies(t *testing.T) {
	h, err := newHTTPHandler(&API{Training: quietTraining{}}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr := limitedServer(t, 10, h)
	stalled := func() (net.Conn, *bufio.Reader) {
		c, r := dial(t, addr)
		fmt.Fprintf(c, "POST /training/start HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\nContent-Disposition: form-data; name=\"csv\"\r\n\r\nsample_id,")
		return c, r
	}
	c1, r1 := stalled()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	h.abortBodies()
	c2, r2 := stalled() // after shutdown began
	for i, c := range []net.Conn{c1, c2} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse([]*bufio.Reader{r1, r2}[i], nil)
		if err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 503 || !strings.Contains(string(body), "SHUTTING_DOWN") || !resp.Close {
			t.Fatalf("upload %d cut by shutdown: %d %s close=%v", i, resp.StatusCode, body, resp.Close)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the stalled uploads were answered %v after the abort", took)
	}
}
