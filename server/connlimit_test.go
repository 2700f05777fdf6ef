package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/platform/sockqueue"
	"ramanserve/service/training"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
)

// limitedServer serves handler behind the connection limit, as Start does.
func limitedServer(t *testing.T, max int, handler http.Handler) string {
	t.Helper()
	addr, _ := limitedServerListener(t, max, handler)
	return addr
}

func limitedServerListener(t *testing.T, max int, handler http.Handler) (string, *connLimitListener) {
	t.Helper()
	return servedBehindLimit(t, max, reserveGate(handler))
}

// ask sends one request on c and reads the answer.
func ask(t *testing.T, c net.Conn, r *bufio.Reader, method, path string) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := tryAsk(c, r, method, path, 5*time.Second)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, b
}

// tryAsk sends one request on c and reads the answer within limit.
func tryAsk(c net.Conn, r *bufio.Reader, method, path string, limit time.Duration) (*http.Response, []byte, error) {
	c.SetDeadline(time.Now().Add(limit))
	if _, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", method, path); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(r, &http.Request{Method: method}) // a HEAD answer has no body to read
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
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

// holdHandler answers "ok", except /hold (and any path with ?hold), which waits until release is
// closed: a request in progress for as long as a test needs.
func holdHandler(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" || r.URL.Query().Has("hold") {
			select {
			case <-release:
			case <-r.Context().Done(): // the client went away
			}
		}
		io.WriteString(w, "ok")
	})
}

// holdRequests opens n connections, each with a GET /hold in progress,
// and returns their readers.
func holdRequests(t *testing.T, addr string, n int) ([]net.Conn, []*bufio.Reader) {
	t.Helper()
	conns, readers := make([]net.Conn, n), make([]*bufio.Reader, n)
	for i := range n {
		c, r := dial(t, addr)
		fmt.Fprintf(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
		conns[i], readers[i] = c, r
	}
	return conns, readers
}

// regularSlotsHeld starts a server with max regular slots, each holding a
// GET /hold in progress until the test ends, and returns the holders.
func regularSlotsHeld(t *testing.T, max int) (string, *connLimitListener, []net.Conn) {
	t.Helper()
	release := make(chan struct{})
	addr, l := limitedServerListener(t, max, holdHandler(release))
	t.Cleanup(func() { close(release) })
	holders, _ := holdRequests(t, addr, max)
	waitOpen(t, l, max, 0)
	waitActive(t, l, max)
	return addr, l, holders
}

// waitLimit bounds waitOpen and waitActive: the states come within
// milliseconds, but a machine busy with other -race binaries can delay the
// server's goroutines by seconds.
const waitLimit = 30 * time.Second

// waitOpen waits until l has regular and reserve connections open.
func waitOpen(t *testing.T, l *connLimitListener, regular, reserve int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		l.mu.Lock()
		reg, res := l.regular, len(l.open)-l.regular
		l.mu.Unlock()
		if reg == regular && res == reserve {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d regular and %d reserve connections open, want %d and %d", reg, res, regular, reserve)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitActive waits until n connections have a request in progress
// (http.StateActive): only then is a holder safe from eviction, which
// picks a connection whose header has not been read yet first. On a busy
// machine the server may read a held request's header well after the
// connection was counted open.
func waitActive(t *testing.T, l *connLimitListener, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		active := 0
		l.mu.Lock()
		for c := range l.open {
			if http.ConnState(c.state.Load()) == http.StateActive {
				active++
			}
		}
		l.mu.Unlock()
		if active >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections with a request in progress, want %d", active, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHealthReserve: with every regular slot holding a request in
// progress, a new connection lands in the reserve. There GET /health (and
// HEAD) is answered, keep-alive included; anything else is 503 SERVER_BUSY and
// closed; a silent reserve connection is closed within reserveTimeout.
// Once a regular slot frees, a new connection is regular again.
func TestHealthReserve(t *testing.T) {
	t.Parallel() // waits on its own server's timers: runs beside the others
	addr, l, holders := regularSlotsHeld(t, 2)

	c, r := dial(t, addr)
	for i := 0; i < 3; i++ {
		if resp, _ := ask(t, c, r, "GET", "/health"); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("health on a reserve connection: %d close=%v", resp.StatusCode, resp.Close)
		}
		time.Sleep(time.Second) // inside reserveTimeout: kept alive
	}
	if resp, body := ask(t, c, r, "HEAD", "/health"); resp.StatusCode != 200 || resp.Close || len(body) != 0 {
		t.Fatalf("HEAD /health on a reserve connection: %d close=%v body %q", resp.StatusCode, resp.Close, body)
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
	// Closed by the reserve's timeout, not by the regular header
	// timeout (10 s); the margin is for a machine busy with a second
	// make test.
	if took := time.Since(start); took > reserveTimeout+4*time.Second {
		t.Errorf("silent reserve connection closed after %v, want within %v", took, reserveTimeout)
	}

	holders[0].Close()
	waitOpen(t, l, 1, 0)
	c2, r2 := dial(t, addr)
	if resp, _ := ask(t, c2, r2, "POST", "/model/load"); resp.StatusCode != 200 {
		t.Fatalf("after a regular slot freed: %d", resp.StatusCode)
	}
}

// TestReserveAnswerTimedFromRequest: a reserve connection's first request
// arrives late in its reserveTimeout and takes a second to answer; the
// answer still arrives, because its write deadline counts from the
// request, not from the connection's admission.
func TestReserveAnswerTimedFromRequest(t *testing.T) {
	t.Parallel() // waits on its own server's timers: runs beside the others
	release := make(chan struct{})
	hold := holdHandler(release)
	addr, l := limitedServerListener(t, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == healthPath {
			time.Sleep(time.Second)
		}
		hold.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { close(release) })
	holdRequests(t, addr, 1)
	waitActive(t, l, 1)

	c, r := dial(t, addr)
	waitOpen(t, l, 1, 1) // admitted to the reserve: its first deadlines are set
	time.Sleep(reserveTimeout - 500*time.Millisecond)
	resp, _, err := tryAsk(c, r, "GET", healthPath, 10*time.Second)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("late health request on a reserve connection: %v %v", resp, err)
	}
}

// silentFlood keeps n connections to addr open that never send a byte,
// reconnecting each one the server closes, until ctx ends.
func silentFlood(ctx context.Context, addr string, n int) (wait func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				c.Read(make([]byte, 1)) // until the server closes it
				stop()
				c.Close()
			}
		}()
	}
	return wg.Wait
}

// healthWait is how long a health request may take behind a flood before
// the test calls it starved: generous, since a test must pass on a busy
// machine, and a starved request would wait for the whole flood.
const healthWait = 10 * time.Second

// TestHealthThroughSilentFlood: five times more silent connections than
// slots, each reconnecting as soon as the server closes it. GET /health
// from a fresh connection answers (within healthWait), every time, for 4 s; so
// does a kept-alive connection asking every 2.9 s (it may be evicted
// while idle, and then reconnects); a request in progress is never cut.
func TestHealthThroughSilentFlood(t *testing.T) {
	release := make(chan struct{})
	addr, l := limitedServerListener(t, 8, holdHandler(release))
	held, heldReaders := holdRequests(t, addr, 2)
	waitOpen(t, l, 2, 0)
	waitActive(t, l, 2)

	ctx, cancel := context.WithCancel(context.Background())
	wait := silentFlood(ctx, addr, 5*(8+healthReserveConns))
	defer func() { cancel(); wait() }()
	waitUntil(t, "the flood to fill every regular slot", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.regular == 8
	})

	kept, keptReader := dial(t, addr)
	lastKept := time.Time{}
	evicted, fails, n := 0, 0, 0
	var worst time.Duration
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); n++ {
		start := time.Now()
		c, r := dial(t, addr)
		resp, _, err := tryAsk(c, r, "GET", "/health", healthWait)
		c.Close()
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) {
			// A newcomer evicted this connection before the server read
			// its request (a busy machine can delay the client's write
			// past the flood's next connection): connect again, as any
			// client does; a second eviction is a failure.
			c, r = dial(t, addr)
			resp, _, err = tryAsk(c, r, "GET", "/health", healthWait)
			c.Close()
		}
		took := time.Since(start)
		worst = max(worst, took)
		if err != nil || resp.StatusCode != 200 || took > healthWait {
			fails++
			t.Errorf("fresh health %d: %v after %v", n, err, took)
		}
		if time.Since(lastKept) > 2900*time.Millisecond {
			lastKept = time.Now()
			if _, _, err := tryAsk(kept, keptReader, "GET", "/health", healthWait); err != nil {
				evicted++ // closed while idle: connect again, as any client does
				kept.Close()
				kept, keptReader = dial(t, addr)
				if resp, _, err := tryAsk(kept, keptReader, "GET", "/health", healthWait); err != nil || resp.StatusCode != 200 {
					t.Errorf("kept-alive health after reconnecting: %v", err)
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("%d fresh health requests, %d failed, slowest %v; the kept-alive connection was evicted %d times", n, fails, worst, evicted)

	close(release)
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(heldReaders[i], nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request in progress %d through the flood: %v", i, err)
		}
	}
	l.mu.Lock()
	open := len(l.open)
	l.mu.Unlock()
	if open > 8+healthReserveConns {
		t.Errorf("%d connections open, want at most %d", open, 8+healthReserveConns)
	}
}

// TestIdleEvictedNotActive: at the cap, a newcomer evicts the kept-alive
// connection idle longest, never one with a request in progress; the
// victim's slot is counted free at once and not again when net/http
// closes it.
func TestIdleEvictedNotActive(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	addr, l := limitedServerListener(t, 3, holdHandler(release))
	held, _ := holdRequests(t, addr, 1)
	waitActive(t, l, 1)
	idle := make([]net.Conn, 2)
	for i := range idle {
		c, r := dial(t, addr)
		if resp, _ := ask(t, c, r, "GET", "/health"); resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		idle[i] = c
		time.Sleep(20 * time.Millisecond) // older than evictGrace
	}
	waitOpen(t, l, 3, 0)

	c, r := dial(t, addr)
	if resp, _ := ask(t, c, r, "GET", "/health"); resp.StatusCode != 200 {
		t.Fatalf("newcomer at the cap: %d", resp.StatusCode)
	}
	idle[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection idle longest: %v, want closed", err)
	}
	waitOpen(t, l, 3, 0) // not released twice
	held[0].SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := held[0].Read(make([]byte, 1)); err == io.EOF {
		t.Fatal("the connection with a request in progress was closed")
	}
	if resp, _, err := tryAsk(idle[1], bufio.NewReader(idle[1]), "GET", "/health", time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the younger idle connection: %v", err)
	}
}

// TestReserveKeptAliveEvicted: kept-alive clients asking GET /health
// every few seconds fill the reserve while every regular slot has a
// request in progress; a newcomer still gets its health answer, by
// evicting the one idle longest.
func TestReserveKeptAliveEvicted(t *testing.T) {
	addr, l, _ := regularSlotsHeld(t, 1)
	for range healthReserveConns {
		c, r := dial(t, addr)
		if resp, _ := ask(t, c, r, "GET", "/health"); resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
	}
	waitOpen(t, l, 1, healthReserveConns)
	time.Sleep(20 * time.Millisecond) // older than evictGrace
	c, r := dial(t, addr)
	if resp, _, err := tryAsk(c, r, "GET", "/health", time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health with the reserve full of kept-alive connections: %v", err)
	}
}

// TestAllActiveRefusesNewcomer: with every slot, reserve included,
// holding a request in progress, a newcomer is closed at once instead of
// waiting in the kernel's queue; open connections stay at the bound.
func TestAllActiveRefusesNewcomer(t *testing.T) {
	addr, l, _ := regularSlotsHeld(t, 1)
	for range healthReserveConns {
		c, _ := dial(t, addr)
		fmt.Fprintf(c, "GET /health?hold HTTP/1.1\r\nHost: x\r\n\r\n") // reserve: health only, held
	}
	waitOpen(t, l, 1, healthReserveConns)
	waitActive(t, l, 1+healthReserveConns) // every request read
	c, _ := dial(t, addr)
	// Every slot's request stays active until the test ends, so a
	// newcomer that was kept rather than closed would reach the deadline.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("newcomer with every slot active: %v, want closed at once", err)
	}
	waitOpen(t, l, 1, healthReserveConns)
}

// quietTraining is a training service whose uploads always get a slot;
// nothing is ever submitted in these tests.
type quietTraining struct{}

func (quietTraining) Reserve(context.Context) (training.Upload, error) { return quietUpload{}, nil }
func (quietTraining) Get(context.Context, string) (jobs.Job, error) {
	return jobs.Job{}, nil
}

func (quietUpload) TryAcquire(int64) bool { return true }
func (quietTraining) List(jobs.Status, int, string) (jobs.Page, error) {
	return jobs.Page{}, nil
}
func (quietTraining) Cancel(context.Context, string) (jobs.Job, error) {
	return jobs.Job{}, nil
}

type quietUpload struct{}

func (quietUpload) Submit(context.Context, *trainer.Dataset, jobs.Meta, training.Once) (jobs.Job, error) {
	return jobs.Job{}, nil
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
	// Without the total limit the body would time out only 5 s (the idle
	// limit) after the trickle's last byte at 3 s; anything well before
	// 8 s is the total limit's, however late a busy machine makes it.
	c.SetReadDeadline(time.Now().Add(7 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); resp.StatusCode != 408 || !strings.Contains(string(body), "REQUEST_TIMEOUT") || took > 6*time.Second {
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
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse([]*bufio.Reader{r1, r2}[i], nil)
		if err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 503 || !strings.Contains(string(body), "SHUTTING_DOWN") || !resp.Close {
			t.Fatalf("upload %d cut by shutdown: %d %s close=%v", i, resp.StatusCode, body, resp.Close)
		}
	}
	// Their bodies stall for good: an answer at all is the abort's.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the stalled uploads were answered %v after the abort", took)
	}
}

// TestInputWaitingOnUsIsNotEvicted: at the cap, of two connections old
// enough to evict, the one whose request waits unread in its socket (a
// client sent it while this server had no core to read it) is passed
// over, whatever its rank, and an idle one with no input goes; with only
// connections whose input waits, none is evicted.
func TestInputWaitingOnUsIsNotEvicted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(ln, 2)
	defer l.Close()
	accepted := func(sent string) net.Conn { return acceptedAfter(t, ln, sent) }
	now := time.Now()
	add := func(c net.Conn, state http.ConnState) *limitedConn {
		lc := &limitedConn{Conn: c, l: l}
		lc.state.Store(int32(state))
		lc.since.Store(now.Add(-time.Second).UnixNano())
		l.open[lc] = struct{}{}
		l.regular++
		return lc
	}
	unread := add(accepted("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), http.StateNew)
	idle := add(accepted(""), http.StateIdle)
	l.mu.Lock()
	victim, _ := l.candidate(false, now)
	l.mu.Unlock()
	if victim != idle {
		t.Fatalf("victim %p, want the idle connection %p, not the one whose request waits (%p)", victim, idle, unread)
	}
	l.releaseLocked(idle)
	l.mu.Lock()
	victim, wait := l.candidate(false, now)
	l.mu.Unlock()
	if victim != nil {
		t.Fatalf("victim %p (wait %v): the connection whose request waits was chosen", victim, wait)
	}
}

// TestRefusedUploadIsAnsweredToASlowClient: a request refused before its
// body is read, whose client sends the rest of its 2 MiB body only after
// net/http has closed the connection (500 ms after its answer) and reads
// the answer after that, as a busy client does. The connection lingers,
// draining the rest, so the client reads the answer rather than a reset;
// meanwhile it is the first a newcomer would evict; and it closes, its
// slot given back, once the client has closed its side.
func TestRefusedUploadIsAnsweredToASlowClient(t *testing.T) {
	refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"code":"INVALID_METADATA"}`)
	})
	addr, l := limitedServerListener(t, 4, refuse)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const half = 1 << 20
	chunk := []byte(strings.Repeat("1,", half/2))
	sent := make(chan error, 1)
	go func() {
		if _, err := fmt.Fprintf(c, "POST /training/start HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: %d\r\n\r\n", 2*half); err != nil {
			sent <- err
			return
		}
		if _, err := c.Write(chunk); err != nil {
			sent <- err
			return
		}
		time.Sleep(1500 * time.Millisecond) // past net/http's 500 ms: it has closed
		_, err := c.Write(chunk)
		sent <- err
	}()
	if err := <-sent; err != nil {
		t.Fatalf("sending the body: %v", err)
	}

	var lingering *limitedConn
	waitUntil(t, "the connection to linger", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for lc := range l.open {
			if lc.lingering.Load() {
				lingering = lc
			}
		}
		return lingering != nil
	})
	if r := lingering.rank(); r != rankLingering {
		t.Errorf("a lingering connection ranks %d for eviction, want %d (first)", r, rankLingering)
	}
	l.mu.Lock()
	victim, wait := l.rankedCandidate(false, time.Now(), nil)
	l.mu.Unlock()
	if victim != lingering {
		t.Errorf("a newcomer at the cap would evict %p (wait %v), want the lingering connection %p at once", victim, wait, lingering)
	}

	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the answer to a refused upload, read after the body was sent: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "INVALID_METADATA") {
		t.Fatalf("answer %d %s, want 400 INVALID_METADATA", resp.StatusCode, b)
	}
	c.Close()
	waitUntil(t, "the lingering connection to give its slot back", func() bool { return l.OpenConnections() == 0 })
}

// TestReserveReadLateOnTheServersSide: a reserve connection whose read
// deadline passed before this server's goroutine got to Read (a machine
// busy for seconds), while the client's request waits in the socket,
// reads the request rather than timing out, once; a client that sent
// nothing still times out at its deadline.
func TestReserveReadLateOnTheServersSide(t *testing.T) {
	ln, l := unservedLimitListener(t)
	reserveConn := func(sent string) *limitedConn {
		lc := &limitedConn{Conn: acceptedAfter(t, ln, sent), l: l, reserve: true}
		// The deadline net/http set has passed by the time it reads.
		if err := lc.SetReadDeadline(time.Now().Add(-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		return lc
	}
	const request = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	late := reserveConn(request)
	buf := make([]byte, 256)
	n, err := late.Read(buf)
	if err != nil || string(buf[:n]) != request {
		t.Fatalf("late read of a waiting request: %q, %v", buf[:n], err)
	}
	if err := late.SetReadDeadline(time.Now().Add(-time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := late.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a second late read with nothing waiting: %v, want a timeout", err)
	}
	if _, err := reserveConn("").Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("late read of a silent client: %v, want a timeout", err)
	}
}

// TestReserveWriteLateOnTheServersSide: a reserve connection whose write
// deadline passed before this server's goroutine got to Write, while its
// client is ready to take the answer (the send queue is empty), writes
// the answer rather than timing out, once; a client that takes nothing
// (its window full, the answer queued) still times out at the deadline.
func TestReserveWriteLateOnTheServersSide(t *testing.T) {
	ln, l := unservedLimitListener(t)
	passDeadline := func(lc *limitedConn) {
		t.Helper()
		if err := lc.SetWriteDeadline(time.Now().Add(-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

	late := &limitedConn{Conn: acceptedAfter(t, ln, ""), l: l, reserve: true}
	passDeadline(late)
	if n, err := late.Write(answer); err != nil || n != len(answer) {
		t.Fatalf("late write to a ready client: %d bytes, %v", n, err)
	}
	passDeadline(late)
	if _, err := late.Write(answer); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a second late write: %v, want a timeout", err)
	}

	// A client that reads nothing: fill its window and this socket's
	// send buffer until a write blocks to its deadline.
	stalled := &limitedConn{Conn: acceptedAfter(t, ln, ""), l: l, reserve: true}
	chunk := make([]byte, 64<<10)
	for {
		if err := stalled.Conn.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err := stalled.Conn.Write(chunk)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal(err)
		}
		// A write can time out before it starts on a busy machine; full
		// is when the answer would have to wait in the send queue.
		if err != nil && sockqueue.Unsent(stalled.Conn) {
			break
		}
	}
	passDeadline(stalled)
	if _, err := stalled.Write(answer); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("late write to a client that reads nothing: %v, want a timeout", err)
	}
	if stalled.lateWrite.Load() {
		t.Fatal("a client that reads nothing was given more time")
	}
}

// unservedLimitListener is a connection cap of 1 over a listener of its
// own that nothing serves: the test accepts (acceptedAfter) and wraps its
// connections itself.
func unservedLimitListener(t *testing.T) (net.Listener, *connLimitListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, newConnLimitListener(ln, 1)
}

// acceptedAfter accepts a connection from ln and returns its server side
// once its client has sent sent and the bytes wait in the server's socket.
func acceptedAfter(t *testing.T, ln net.Listener, sent string) net.Conn {
	t.Helper()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	if sent != "" {
		if _, err := client.Write([]byte(sent)); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); !sockqueue.Pending(server); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the request never reached the server's socket")
			}
		}
	}
	return server
}

// TestShutdownCutsHalfSentHeadersWithoutAnswer: connections whose request
// header has only partly arrived when shutdown begins (a new one with half
// a request line, a new one with half its headers, a kept-alive one with
// half its next request) are closed without an answer. net/http would
// answer a partial request line "400 Bad Request", telling a client whose
// request was fine not to send it again (half the headers it would not
// answer: that case guards against an answer of our own).
func TestShutdownCutsHalfSentHeadersWithoutAnswer(t *testing.T) {
	addr, l := limitedServerListener(t, 10, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	halfLine, _ := dial(t, addr)
	halfHeaders, _ := dial(t, addr)
	keptAlive, keptReader := dial(t, addr)
	ask(t, keptAlive, keptReader, "GET", "/health")
	waitIdle(t, l, keptAlive)
	for c, part := range map[net.Conn]string{
		halfLine:    "GET /hea",
		halfHeaders: "GET /health HTTP/1.1\r\nHost: x\r\n",
		keptAlive:   "GET /he",
	} {
		if _, err := c.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	waitAllRead(t, l, halfLine, halfHeaders, keptAlive)
	l.endConnsWithoutRequest()
	for _, c := range []net.Conn{halfLine, halfHeaders, keptAlive} {
		c.SetReadDeadline(time.Now().Add(waitLimit))
	}
	for name, r := range map[string]io.Reader{"half a request line": halfLine, "half the headers": halfHeaders, "kept alive, half its next request": keptReader} {
		got, err := io.ReadAll(r)
		if len(got) > 0 || err != nil {
			t.Errorf("%s: got %q, %v after shutdown began, want the connection closed without an answer", name, got, err)
		}
	}
}

// waitIdle waits until the server's side of c is idle between requests.
func waitIdle(t *testing.T, l *connLimitListener, c net.Conn) {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		idle := false
		for lc := range l.open {
			if lc.RemoteAddr().String() == c.LocalAddr().String() && http.ConnState(lc.state.Load()) == http.StateIdle {
				idle = true
			}
		}
		l.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the kept-alive connection never went idle")
		}
	}
}

// waitAllRead waits until the server has read everything clients sent:
// each client's bytes have reached the server's socket (none waits in
// the client's send queue), and none waits unread there.
func waitAllRead(t *testing.T, l *connLimitListener, clients ...net.Conn) {
	t.Helper()
	for deadline := time.Now().Add(waitLimit); ; time.Sleep(time.Millisecond) {
		waiting := 0
		for _, c := range clients {
			if sockqueue.Unsent(c) {
				waiting++
			}
		}
		l.mu.Lock()
		for lc := range l.open {
			if sockqueue.Pending(lc.Conn) {
				waiting++
			}
		}
		l.mu.Unlock()
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets still hold bytes the server has not read", waiting)
		}
	}
}
