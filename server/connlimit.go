package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/gen"
	"ramanserve/server/contract"
)

// The health reserve: connections accepted while every regular slot
// (-max-http-connections) is taken. They may only ask GET /health, and
// every read or write on them has at most reserveTimeout, so a slow or
// silent client holds a reserve slot for seconds, not for the 30 s body
// idle limit. A liveness probe thus gets through a cap full of slow
// clients, from a fresh connection or a kept-alive one.
const (
	healthReserveConns = 16
	reserveTimeout     = 3 * time.Second
	healthPath         = "/health"
)

// connLimitListener caps open connections at max regular plus
// healthReserveConns reserve ones. Beyond both it stops accepting (the
// kernel's backlog holds newcomers, as with netutil.LimitListener), so a
// flood of connections cannot use up the process's file descriptors.
type connLimitListener struct {
	net.Listener
	max   int
	slots chan struct{} // one token per open connection, regular or reserve

	mu      sync.Mutex
	regular int
	open    map[*limitedConn]struct{}

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

func newConnLimitListener(ln net.Listener, max int) *connLimitListener {
	return &connLimitListener{
		Listener: ln,
		max:      max,
		slots:    make(chan struct{}, max+healthReserveConns),
		open:     map[*limitedConn]struct{}{},
		closed:   make(chan struct{}),
	}
}

// Accept waits for a free slot, then accepts. A connection is regular when
// fewer than max regular ones are open, reserve otherwise.
func (l *connLimitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	l.mu.Lock()
	reserve := l.regular >= l.max
	if !reserve {
		l.regular++
	}
	lc := &limitedConn{Conn: c, l: l, reserve: reserve}
	l.open[lc] = struct{}{}
	l.mu.Unlock()
	if reserve {
		_ = lc.SetDeadline(time.Time{}) // clamped: reserveTimeout from now
	}
	return lc, nil
}

// Close closes the listener and ends an Accept waiting for a slot. It may
// be called more than once (App.Shutdown, then http.Server.Shutdown).
func (l *connLimitListener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.closeErr = l.Listener.Close()
	})
	return l.closeErr
}

func (l *connLimitListener) release(c *limitedConn) {
	l.mu.Lock()
	if !c.reserve {
		l.regular--
	}
	delete(l.open, c)
	l.mu.Unlock()
	<-l.slots
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
		if s := http.ConnState(c.state.Load()); s == http.StateNew || s == http.StateIdle {
			_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
		}
	}
}

// limitedConn gives its slot back on Close. On a reserve connection every
// deadline is clamped to reserveTimeout from the moment it is set: net/http
// sets the header, body and keep-alive deadlines through these methods.
type limitedConn struct {
	net.Conn
	l         *connLimitListener
	reserve   bool
	state     atomic.Int32 // http.ConnState, set by trackState
	closeOnce sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.l.release(c) })
	return err
}

// CloseWrite passes net/http's half-close through: before closing a
// connection whose client is still sending (a refused upload), it sends
// FIN after the answer and waits a moment, so the client reads the answer
// instead of a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
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
// state for endConnsWithoutRequest. net/http moves a connection to
// StateActive once a whole request header has been read, and back to
// StateIdle once the response is written.
func trackState(c net.Conn, s http.ConnState) {
	if lc, ok := c.(*limitedConn); ok {
		lc.state.Store(int32(s))
	}
}

// connKey holds, in a request's context, its *limitedConn.
type connKey struct{}

// connContext is http.Server.ConnContext: it gives requests their
// connection, for reserveGate.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// reserveGate lets a reserve connection ask GET /health only; anything
// else gets 503 SERVER_BUSY and the connection is closed.
func reserveGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, _ := r.Context().Value(connKey{}).(*limitedConn)
		if lc == nil || !lc.reserve || (r.Method == http.MethodGet && r.URL.Path == healthPath) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(gen.ErrorResponse{
			Code:      string(contract.ServerBusy),
			Message:   "every management connection is in use; only GET /health is answered on this one",
			Retryable: ptr(true),
		})
	})
}
