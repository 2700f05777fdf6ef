package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/gen"
	"ramanserve/platform/sockqueue"
	"ramanserve/server/contract"
)

// Admission at the management connection cap. Accept never blocks on a
// full cap: a connection left waiting in the kernel's accept queue would
// sit behind every connection an attacker opened before it, and each slot
// that freed would usually go to the attacker's next one. Instead every
// newcomer is accepted and, at the cap, the connection that has been
// waiting longest without a request in progress is closed to make room:
//
//   - first one in http.StateNew (it has not sent a whole request header),
//     the oldest first;
//   - then one in http.StateIdle (a kept-alive connection between
//     requests), the one idle longest first;
//   - never one with a request being handled (http.StateActive).
//
// Regular slots (max) are used first. When no regular connection can be
// evicted now (every one has a request in progress, or the others are
// younger than evictGrace), a newcomer goes to the health reserve
// (healthReserveConns more), where it may only ask GET /health and every
// read or write has at most reserveTimeout; at the reserve's cap the same
// eviction order applies among reserve connections. When even the reserve
// is full of requests in progress, the newcomer is closed at once rather
// than left waiting.
//
// A connection is not closed this way in its first evictGrace: a client
// that has just connected has that long to have its request header read
// (a GET /health arrives in one packet right after the handshake; over
// TLS, a connection whose whole ClientHello has arrived is not closed
// while this server computes its answer, and has helloGrace from when
// the answer is written, which covers the handshake's extra round trip),
// and a
// reconnecting flood is accepted no faster than slots / evictGrace a
// second. When every candidate is younger, the accept loop waits for the
// oldest (holding the one newcomer; the rest stay in the kernel's queue),
// so a probe queued behind a flood of N connections waits about
// N * evictGrace / slots. Among connections in StateNew old enough, one
// that net/http is blocked reading without having received a byte
// (silent) goes first, then one net/http has not read yet, then one that
// has sent part of its header. None whose client's bytes wait unread in
// its socket is evicted: it waits on this server's CPU, not on its
// client.
//
// Open connections stay bounded: max + healthReserveConns, plus the one
// being admitted. A victim's slot is counted free when it is chosen, its
// socket closed at once; net/http's Close of it later releases nothing.
const (
	healthReserveConns = 64
	reserveTimeout     = 3 * time.Second
	evictGrace         = 20 * time.Millisecond
	healthPath         = "/health"
	livezPath          = "/livez"
	readyzPath         = "/readyz"
	// helloGrace replaces evictGrace for a TLS connection whose whole
	// ClientHello has arrived: its client needs another round trip, and
	// the server a signature, before the request header can follow.
	helloGrace = 250 * time.Millisecond
)

// headerMemoryPerConn is the most one connection slot holds while its
// request header arrives: up to maxHeaderBytes (+4 KiB net/http allows)
// of header, read through bufio buffers and parsed into a header map. 321
// connections (the default cap, reserve and one more) each holding a
// 68 KiB partial header of 100-byte lines measured 154 KiB each (49 MiB
// over the idle process); one long header line, about 50 KiB each.
const headerMemoryPerConn = 192 << 10

// ConnectionMemoryBound is the most the management channel's connections
// hold in request headers, however the clients behave: every slot,
// regular and reserve, plus the one being admitted, at
// headerMemoryPerConn (60 MiB with the default 256). Request bodies are
// bounded separately (JSON bodies by MaxJSONBodyBytes each, uploads by
// the training budget).
func (c HTTPConfig) ConnectionMemoryBound() int64 {
	return int64(c.withDefaults().MaxConnections+healthReserveConns+1) * headerMemoryPerConn
}

// connLimitListener caps open connections at max regular plus
// healthReserveConns reserve ones, evicting to admit newcomers (see above).
type connLimitListener struct {
	net.Listener
	max int

	mu       sync.Mutex
	regular  int // open regular connections
	reserved int // open reserve connections
	open     map[*limitedConn]struct{}

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

func newConnLimitListener(ln net.Listener, max int) *connLimitListener {
	return &connLimitListener{
		Listener: ln,
		max:      max,
		open:     map[*limitedConn]struct{}{},
		closed:   make(chan struct{}),
	}
}

// Accept accepts the next connection and admits it, evicting another at
// the cap; a newcomer that cannot be admitted is closed and the next one
// accepted. It never waits for a slot longer than evictGrace.
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, err := l.admit(c)
		if err != nil {
			return nil, err
		}
		if lc != nil {
			return lc, nil
		}
	}
}

// admit gives c a slot, evicting a connection without a request in
// progress when the slots are full. It returns nil (c closed) when every
// slot, reserve included, has a request in progress, and net.ErrClosed
// when the listener closes while it waits for a candidate to come of age.
func (l *connLimitListener) admit(c net.Conn) (*limitedConn, error) {
	for {
		l.mu.Lock()
		lc, wait, refuse := l.admitLocked(c, time.Now())
		l.mu.Unlock()
		switch {
		case lc != nil:
			if lc.reserve {
				_ = lc.SetDeadline(time.Time{}) // clamped: reserveTimeout from now
			}
			return lc, nil
		case refuse:
			_ = c.Close()
			return nil, nil
		}
		select {
		case <-time.After(wait):
		case <-l.closed:
			_ = c.Close()
			return nil, net.ErrClosed
		}
	}
}

// admitLocked decides c's admission at now: a slot (evicting a victim if
// need be), a wait for a connection to become a candidate, or refusal.
// A regular slot comes first; the reserve is used when no regular
// connection can be evicted now, so that while a few regular connections
// are young the reserve's turnover still admits newcomers.
func (l *connLimitListener) admitLocked(c net.Conn, now time.Time) (lc *limitedConn, wait time.Duration, refuse bool) {
	reserve := false
	if l.regular >= l.max {
		victim, waitRegular := l.candidate(false, now)
		switch {
		case victim != nil:
			l.evictLocked(victim)
		case l.reserved < healthReserveConns:
			reserve = true
		default:
			victim, waitReserve := l.candidate(true, now)
			if victim == nil {
				if wait = minPositive(waitRegular, waitReserve); wait > 0 {
					return nil, wait, false
				}
				return nil, 0, true
			}
			l.evictLocked(victim)
			reserve = true
		}
	}
	lc = &limitedConn{Conn: c, l: l, reserve: reserve}
	lc.since.Store(now.UnixNano())
	if reserve {
		l.reserved++
	} else {
		l.regular++
	}
	l.open[lc] = struct{}{}
	return lc, 0, false
}

// minPositive is the smaller of a and b that is above 0, or 0.
func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// Eviction ranks, most evictable first, among connections in StateNew at
// least evictGrace old: net/http is blocked reading one that has not sent
// a byte (silent); net/http has not read it yet; it has sent part of its
// header. Then connections idle between requests.
const (
	rankNone = iota
	rankIdle
	rankPartialHeader
	rankUnread
	rankSilent
	rankLingering // answered and closed by net/http; only draining (linger)
)

// rank is c's eviction rank; rankNone while it has a request in progress,
// or while this server owes a TLS client the answer to its ClientHello.
func (c *limitedConn) rank() int {
	if c.lingering.Load() {
		return rankLingering
	}
	switch http.ConnState(c.state.Load()) {
	case http.StateNew:
		switch {
		case c.serverTurn.Load():
			return rankNone
		case c.gotBytes.Load():
			return rankPartialHeader
		case c.reading.Load():
			return rankSilent
		}
		return rankUnread
	case http.StateIdle:
		return rankIdle
	}
	return rankNone // Active, Hijacked, Closed
}

// candidate is the connection of the given class to evict next: the
// highest rank, the oldest in it (the one idle longest for rankIdle).
// With no candidate, wait > 0 is when to look again (a connection in
// StateNew younger than evictGrace, which goes before any idle one), and
// wait == 0 means every connection has a request in progress.
func (l *connLimitListener) candidate(reserve bool, now time.Time) (victim *limitedConn, wait time.Duration) {
	var waiting map[*limitedConn]bool
	for {
		victim, wait = l.rankedCandidate(reserve, now, waiting)
		// Whether net/http has read a connection depends on scheduling;
		// whether its client has sent anything does not. A connection
		// whose input waits in the socket (a probe accepted while the
		// machine is busy, a kept-alive client's next request) waits on
		// this server, not the other way round: it is not evicted, and
		// the next candidate is tried. Such input lasts only until
		// net/http's next read, so a client cannot hold a slot this way.
		// Each pass sets one connection aside, so the loop ends.
		if victim == nil || !sockqueue.Pending(victim.Conn) {
			return victim, wait
		}
		victim.gotBytes.Store(true)
		if waiting == nil {
			waiting = make(map[*limitedConn]bool)
		}
		waiting[victim] = true
	}
}

// rankedCandidate is candidate by the ranks alone.
// Connections in skip are passed over.
func (l *connLimitListener) rankedCandidate(reserve bool, now time.Time, skip map[*limitedConn]bool) (victim *limitedConn, wait time.Duration) {
	bestRank, bestSince := rankNone, int64(0)
	for c := range l.open {
		if c.reserve != reserve || skip[c] {
			continue
		}
		rank, since := c.rank(), c.since.Load()
		if rank == rankNone {
			continue
		}
		if rank != rankIdle {
			if w := time.Unix(0, since).Add(c.grace()).Sub(now); w > 0 {
				if wait == 0 || w < wait {
					wait = w
				}
				continue
			}
		}
		if rank > bestRank || (rank == bestRank && since < bestSince) {
			victim, bestRank, bestSince = c, rank, since
		}
	}
	if victim != nil && (bestRank != rankIdle || wait == 0) {
		return victim, 0
	}
	return nil, min(wait, time.Millisecond)
}

// evictLocked frees victim's slot now and closes its socket. net/http,
// blocked reading the victim's header or next request, then fails and
// closes it again; release finds it already released.
func (l *connLimitListener) evictLocked(victim *limitedConn) {
	l.releaseLocked(victim)
	_ = victim.Conn.Close()
}

// Close closes the listener and ends an admission waiting for a candidate.
// It may be called more than once (App.Shutdown, then http.Server.Shutdown).
func (l *connLimitListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.closeErr = l.Listener.Close()
	})
	return l.closeErr
}

// OpenConnections is the number of connections holding a slot now,
// regular and reserve (the metrics read it at scrape time).
func (l *connLimitListener) OpenConnections() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.regular + l.reserved
}

func (l *connLimitListener) release(c *limitedConn) {
	l.mu.Lock()
	l.releaseLocked(c)
	l.mu.Unlock()
}

// releaseLocked gives c's slot back, once: an evicted connection is
// released when chosen and again, without effect, when net/http closes it.
func (l *connLimitListener) releaseLocked(c *limitedConn) {
	if c.released {
		return
	}
	c.released = true
	if c.reserve {
		l.reserved--
	} else {
		l.regular--
	}
	delete(l.open, c)
}

// endConnsWithoutRequest ends every connection that has no request being
// handled: idle keep-alive ones, and ones still sending their request
// headers, slowly or not at all. Shutdown uses it so that such clients
// cannot hold it: http.Server.Shutdown waits up to 5 s for a new
// connection that has not sent a whole header yet. It moves their read
// deadline to the past rather than closing them, so that net/http ends
// them itself; one whose header was read a moment ago still gets its
// answer (503 SHUTTING_DOWN when it has a body) instead of a reset.
func (l *connLimitListener) endConnsWithoutRequest() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.open {
		if c.awaitingHeader() {
			c.cut.Store(true)
			_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
		}
	}
}

// limitedConn gives its slot back on Close. On a reserve connection every
// deadline is clamped to reserveTimeout from the moment it is set: net/http
// sets the header, body and keep-alive deadlines through these methods.
type limitedConn struct {
	net.Conn
	l       *connLimitListener
	reserve bool
	state   atomic.Int32 // http.ConnState, set by trackState
	// since is when the connection entered its state (UnixNano): accepted
	// for StateNew, answered its last request for StateIdle.
	since    atomic.Int64
	reading  atomic.Bool // net/http has called Read: it is serving the connection
	gotBytes atomic.Bool // the client has sent data: a Read returned some, or some waits in the socket
	tlsHello atomic.Bool // a whole TLS ClientHello has arrived (tls.go)
	// serverTurn: the ClientHello has been read and this server has not
	// yet written its answer, so the handshake waits on this server's
	// CPU, not on its client; the connection is not evicted meanwhile,
	// and its helloGrace starts when the answer is written.
	serverTurn atomic.Bool
	halfClosed atomic.Bool // net/http called CloseWrite: it answered a request whose body it did not read
	lingering  atomic.Bool // closed by net/http, draining what the client still sends (linger)
	// lateRead: a read of this reserve connection has once timed out with
	// the client's bytes waiting unread, and was given another
	// reserveTimeout (Read).
	lateRead atomic.Bool
	// lateWrite: a write of this reserve connection has once timed out
	// with nothing written and its send queue empty, and was given
	// another reserveTimeout (Write).
	lateWrite atomic.Bool
	// cut: endConnsWithoutRequest moved the read deadline to the past.
	// headerCut: then a read failed while net/http was reading a request
	// header (StateNew or StateIdle); see Write.
	cut       atomic.Bool
	headerCut atomic.Bool
	released  bool // slot given back; guarded by l.mu
}

// awaitingHeader: net/http has not read a whole request header on c
// since it was accepted or last answered (StateNew or StateIdle).
func (c *limitedConn) awaitingHeader() bool {
	s := http.ConnState(c.state.Load())
	return s == http.StateNew || s == http.StateIdle
}

// grace is how long c is safe from eviction after it was accepted.
// A lingering one has none: its answer is out.
func (c *limitedConn) grace() time.Duration {
	switch {
	case c.lingering.Load():
		return 0
	case c.tlsHello.Load():
		return helloGrace
	}
	return evictGrace
}

// Read records, for eviction, that net/http serves the connection and
// whether the client has sent anything.
//
// A reserve connection's read that times out while the client's bytes
// wait unread in the socket was late on this server's side: on a machine
// busy for seconds, the goroutine reached Read after the deadline, and Go
// refuses a read past its deadline without looking at the socket. Such a
// read gets one more reserveTimeout, once per connection, so that a
// client that sent in time is answered; a silent or trickling client has
// nothing waiting at its deadline and is cut as before.
func (c *limitedConn) Read(b []byte) (int, error) {
	if !c.reading.Load() {
		c.reading.Store(true)
	}
	n, err := c.Conn.Read(b)
	if n == 0 && c.reserve && errors.Is(err, os.ErrDeadlineExceeded) && !c.cut.Load() && sockqueue.Pending(c.Conn) && c.lateRead.CompareAndSwap(false, true) {
		if c.SetReadDeadline(time.Time{}) == nil { // clamped: reserveTimeout from now
			n, err = c.Conn.Read(b)
		}
	}
	if err != nil && c.cut.Load() && c.awaitingHeader() {
		c.headerCut.Store(true)
	}
	if n > 0 && !c.gotBytes.Load() {
		c.gotBytes.Store(true)
	}
	return n, err
}

// Write restarts the grace of a TLS connection whose ClientHello this
// server has just answered: from then on the handshake waits on the client.
//
// A reserve connection's write that times out with nothing written while
// its send queue is empty was late on this server's side, as a late Read
// is: the client was ready to take the answer, and the goroutine reached
// Write after the deadline. It gets one more reserveTimeout, once per
// connection. A client that does not read has filled its window, so the
// answer waits in the send queue, and its write is cut as before.
//
// Nothing is written once shutdown has cut a request header half-way
// (headerCut): net/http parses the part that arrived, and answers a
// partial request line "400 Bad Request", which would tell a client whose
// request was fine not to send it again. Such a client gets the
// connection closed instead, as one that had sent nothing does, and
// retries against the restarted server.
func (c *limitedConn) Write(b []byte) (int, error) {
	if c.headerCut.Load() {
		return len(b), nil
	}
	if c.serverTurn.Load() {
		c.since.Store(time.Now().UnixNano())
		c.serverTurn.Store(false)
	}
	n, err := c.Conn.Write(b)
	if n == 0 && c.reserve && errors.Is(err, os.ErrDeadlineExceeded) && !sockqueue.Unsent(c.Conn) && c.lateWrite.CompareAndSwap(false, true) {
		if c.SetWriteDeadline(time.Time{}) == nil { // clamped: reserveTimeout from now
			n, err = c.Conn.Write(b)
		}
	}
	return n, err
}

// Close closes the connection and gives its slot back; one that net/http
// half-closed after answering a request it did not read whole lingers
// first (linger).
func (c *limitedConn) Close() error {
	if c.halfClosed.Load() && c.lingering.CompareAndSwap(false, true) {
		go c.linger()
		return nil
	}
	err := c.Conn.Close()
	c.l.release(c)
	return err
}

// CloseWrite passes net/http's half-close through: before closing a
// connection whose client is still sending (a refused upload), it sends
// FIN after the answer and waits 500 ms, so the client reads the answer
// instead of a reset. The connection then lingers on Close.
func (c *limitedConn) CloseWrite() error {
	c.halfClosed.Store(true)
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// A refused upload's client may still be sending when net/http closes
// the connection, 500 ms after its answer. Closing a socket with unread
// input sends a reset, and a reset that reaches the client before it has
// read the answer discards it: on a busy machine the client saw
// "connection reset" instead of the error that says what to fix. So such
// a connection lingers, as web servers' lingering close does: it reads
// and discards what still comes, until the client stops sending (EOF, or
// lingerIdle without a byte), for at most lingerTime and lingerBytes,
// and then closes. Its slot stays taken meanwhile, but it is the first a
// newcomer evicts (rankLingering, and no grace).
const (
	lingerTime  = 10 * time.Second
	lingerIdle  = 2 * time.Second
	lingerBytes = 64 << 20
)

// linger drains c and closes it (see lingerTime).
func (c *limitedConn) linger() {
	defer func() {
		_ = c.Conn.Close()
		c.l.release(c)
	}()
	end := time.Now().Add(lingerTime)
	buf := make([]byte, 16<<10)
	for drained := 0; drained < lingerBytes; {
		deadline := time.Now().Add(lingerIdle)
		if deadline.After(end) {
			deadline = end
		}
		if err := c.Conn.SetReadDeadline(deadline); err != nil {
			return
		}
		n, err := c.Conn.Read(buf)
		drained += n
		if err != nil {
			return
		}
	}
}

func (c *limitedConn) clamp(t time.Time) time.Time {
	if !c.reserve {
		return t
	}
	if limit := time.Now().Add(reserveTimeout); t.IsZero() || t.After(limit) {
		return limit
	}
	return t
}

func (c *limitedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}
func (c *limitedConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

// trackState is http.Server.ConnState: it records each connection's
// state for endConnsWithoutRequest and for eviction. net/http moves a connection to
// StateActive once a whole request header has been read, and back to
// StateIdle once the response is written.
//
// On a reserve connection a request's answer gets its reserveTimeout from
// the moment its header has been read: net/http sets no write deadline
// before a connection's first answer (only after each answer), so the
// first one would otherwise have to be written within reserveTimeout of
// admission, which a machine busy for a few seconds misses.
func trackState(c net.Conn, s http.ConnState) {
	if lc, ok := limited(c); ok {
		switch s {
		case http.StateIdle:
			lc.since.Store(time.Now().UnixNano())
		case http.StateActive:
			if lc.reserve {
				_ = lc.SetWriteDeadline(time.Time{}) // clamped: reserveTimeout from now
			}
		}
		lc.state.Store(int32(s))
	}
}

// limited is the *limitedConn under c: c itself, or the TCP connection
// of a TLS one (net/http hands the hooks the *tls.Conn).
func limited(c net.Conn) (*limitedConn, bool) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	return lc, ok
}

// connKey holds, in a request's context, its *limitedConn.
type connKey struct{}

// connContext is http.Server.ConnContext: it gives requests their
// connection, for reserveGate.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := limited(c); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// isProbe reports whether r is a GET or HEAD of /health, /livez or
// /readyz: what supervisors and load balancers ask, without a token and
// on the health reserve.
func isProbe(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch r.URL.Path {
	case healthPath, livezPath, readyzPath:
		return true
	}
	return false
}

// reserveGate lets a reserve connection ask the probes (isProbe: GET or
// HEAD, its body left out) only; anything else gets 503 SERVER_BUSY and the
// connection is closed.
func reserveGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, _ := r.Context().Value(connKey{}).(*limitedConn)
		if lc != nil {
			// A request reached its handler, so its header was whole:
			// its answer is written even if a read failed after the
			// shutdown's cut (a TLS read can return a whole request
			// together with the error from peeking at the next record).
			lc.headerCut.Store(false)
		}
		if lc == nil || !lc.reserve || isProbe(r) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", retryAfterSeconds(contract.HealthReserveRetryAfter))
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(gen.ErrorResponse{
			Code:      string(contract.ServerBusy),
			Message:   "every management connection is in use; only GET /health is answered on this one",
			Retryable: ptr(true),
		})
	})
}
