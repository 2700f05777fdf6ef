package zmtp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// errWrite marks errors from writing to the peer, to tell a write timeout
// from an idle (read) timeout.
var errWrite = errors.New("zmtp: write to peer")

// Server is a ZMTP 3.x REP endpoint bound to one TCP address.
type Server struct {
	cfg      Config
	h        Handler
	ln       net.Listener
	log      *slog.Logger
	counters counters
	shared   *shared       // coarse clock and partial-message pool (limits.go)
	hellos   *helloLimiter // CURVE HELLOs per source address; nil without CURVE or with no limit

	draining atomic.Bool // set once: no new connections or requests
	serving  atomic.Bool // Serve has been called

	mu       sync.Mutex
	sessions map[*session]struct{}
	admitted uint64         // admissions so far, under mu; numbers sessions for eviction
	conns    sync.WaitGroup // one per admitted connection goroutine

	// baseCtx is given to handlers; it is cancelled when Shutdown gives up
	// waiting, so handlers that honour it stop.
	baseCtx    context.Context
	cancelBase context.CancelFunc

	stopOnce sync.Once
	stopped  chan struct{} // closed when the listener is closed
}

// counters are the live statistics; Stats copies them.
type counters struct {
	accepted, rejected                        atomic.Uint64
	handshakesCompleted, handshakesFailed     atomic.Uint64
	requestsServed, requestsTooLarge          atomic.Uint64
	pingsReceived, commandsIgnored            atomic.Uint64
	protocolErrors, idleTimeouts, writeErrors atomic.Uint64
	panics                                    atomic.Uint64
	evictions, frameTimeouts                  atomic.Uint64
	partialBytesRefused                       atomic.Uint64
	curveNotAllowed                           atomic.Uint64
	curveHellosLimited                        atomic.Uint64
}

// Stats is a snapshot of the server counters. All but OpenConnections only grow.
type Stats struct {
	OpenConnections     int    // connections with a live goroutine, handshaking ones included
	AcceptedConnections uint64 // admitted connections
	RejectedConnections uint64 // closed at once: MaxConnections reached and no peer could be evicted
	Evictions           uint64 // peers closed at MaxConnections to admit a newcomer
	HandshakesCompleted uint64
	HandshakesFailed    uint64 // bad signature, version, mechanism, READY, socket type, or deadline
	RequestsServed      uint64 // replies written, RequestsTooLarge included
	RequestsTooLarge    uint64 // requests answered with Err=ErrMessageTooLarge, PartialBytesRefused included
	PartialBytesRefused uint64 // requests answered with Err=ErrPartialBytesExhausted (with CURVE: connections closed, see the package doc)
	PartialBytes        int64  // bytes now reserved from the MaxPartialBytes pool
	FrameTimeouts       uint64 // connections closed because a message stayed incomplete past FrameTimeout
	PingsReceived       uint64 // PINGs answered with PONG
	CommandsIgnored     uint64 // unknown commands, PONG, and PING from ZMTP 3.0 peers
	ProtocolErrors      uint64 // connections closed for a framing/command violation after the handshake
	IdleTimeouts        uint64 // connections closed because the peer's PING TTL or IdleTimeout ran out
	WriteErrors         uint64 // connections closed because a write failed or timed out
	Panics              uint64 // panics recovered in connection goroutines
	CurveNotAllowed     uint64 // CURVE clients refused by Config.Curve.Allow (also in HandshakesFailed)
	CurveHellosLimited  uint64 // CURVE HELLOs beyond their source address's rate (also in HandshakesFailed)
}

// Listen binds endpoint ("tcp://*:5555", "tcp://127.0.0.1:0", "tcp://[::1]:0")
// at once and returns a server ready for Serve.
func Listen(endpoint string, cfg Config, h Handler) (*Server, error) {
	if h == nil {
		return nil, errors.New("zmtp: nil handler")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	addr, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("zmtp: bind %s: %w", endpoint, err)
	}
	var hellos *helloLimiter
	if cfg.Curve != nil {
		hellos = newHelloLimiter(cfg.Curve.HelloRate, cfg.Curve.HelloBurst)
	}
	baseCtx, cancel := context.WithCancel(context.Background())
	return &Server{
		hellos:     hellos,
		cfg:        cfg,
		h:          h,
		ln:         ln,
		log:        cfg.Logger,
		shared:     newShared(cfg),
		sessions:   make(map[*session]struct{}),
		baseCtx:    baseCtx,
		cancelBase: cancel,
		stopped:    make(chan struct{}),
	}, nil
}

// parseEndpoint turns "tcp://host:port" into a net.Listen address; host "*"
// means every interface.
func parseEndpoint(endpoint string) (string, error) {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return "", fmt.Errorf("zmtp: endpoint %q: only tcp:// is supported", endpoint)
	}
	host, port, err := net.SplitHostPort(rest)
	if err != nil {
		return "", fmt.Errorf("zmtp: endpoint %q: %w", endpoint, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("zmtp: endpoint %q: bad port %q", endpoint, port)
	}
	if host == "*" {
		host = ""
	}
	return net.JoinHostPort(host, port), nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Endpoint is a "tcp://host:port" address a client can connect to; a
// wildcard bind is reported as 127.0.0.1.
func (s *Server) Endpoint() string {
	tcp, ok := s.ln.Addr().(*net.TCPAddr)
	if !ok {
		return "tcp://" + s.ln.Addr().String()
	}
	host := "127.0.0.1"
	if !tcp.IP.IsUnspecified() && tcp.IP != nil {
		host = tcp.IP.String()
	}
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	open := len(s.sessions)
	s.mu.Unlock()
	c := &s.counters
	return Stats{
		OpenConnections:     open,
		AcceptedConnections: c.accepted.Load(),
		RejectedConnections: c.rejected.Load(),
		HandshakesCompleted: c.handshakesCompleted.Load(),
		HandshakesFailed:    c.handshakesFailed.Load(),
		RequestsServed:      c.requestsServed.Load(),
		RequestsTooLarge:    c.requestsTooLarge.Load(),
		PingsReceived:       c.pingsReceived.Load(),
		CommandsIgnored:     c.commandsIgnored.Load(),
		ProtocolErrors:      c.protocolErrors.Load(),
		IdleTimeouts:        c.idleTimeouts.Load(),
		WriteErrors:         c.writeErrors.Load(),
		Panics:              c.panics.Load(),
		Evictions:           c.evictions.Load(),
		PartialBytesRefused: c.partialBytesRefused.Load(),
		PartialBytes:        s.shared.partialUsed.Load(),
		FrameTimeouts:       c.frameTimeouts.Load(),
		CurveNotAllowed:     c.curveNotAllowed.Load(),
		CurveHellosLimited:  c.curveHellosLimited.Load(),
	}
}

// Serve runs the accept loop. Handshakes run in the connection goroutines, so
// accepting never waits on a peer. It returns nil once Shutdown was called, or,
// when ctx is cancelled, after draining like Shutdown bounded by
// Config.ShutdownTimeout.
func (s *Server) Serve(ctx context.Context) error {
	if !s.serving.CompareAndSwap(false, true) {
		return errors.New("zmtp: Serve called more than once")
	}
	stopWatching := context.AfterFunc(ctx, s.stopAccepting)
	defer stopWatching()
	go s.housekeep()

	s.acceptLoop()

	if ctx.Err() != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		if err := s.Shutdown(shutdownCtx); err != nil {
			s.log.Warn("zmtp: drain after context cancellation incomplete", "err", err)
		}
	}
	return nil
}

func (s *Server) acceptLoop() {
	const maxBackoff = time.Second
	backoff := 5 * time.Millisecond
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.draining.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Typically EMFILE: back off instead of spinning, like net/http.
			s.log.Warn("zmtp: accept failed", "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-s.stopped:
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = 5 * time.Millisecond
		s.admit(conn)
	}
}

// admit starts a goroutine for conn, or closes it when the server is draining,
// or full with no peer it may evict (see evictLocked).
func (s *Server) admit(conn net.Conn) {
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		_ = conn.Close()
		return
	}
	if s.hellos != nil && s.hellos.exhausted(conn.RemoteAddr(), time.Now()) {
		s.mu.Unlock()
		s.counters.curveHellosLimited.Add(1)
		_ = conn.Close()
		return
	}
	if len(s.sessions) >= s.cfg.MaxConnections && !s.evictLocked() {
		s.mu.Unlock()
		s.counters.rejected.Add(1)
		s.log.Debug("zmtp: connection refused at the connection cap, no peer evictable", "remote", conn.RemoteAddr().String())
		_ = conn.Close()
		return
	}
	sess := newSession(s, s.shared, s.cfg, s.h, conn)
	s.admitted++
	sess.seq = s.admitted
	s.sessions[sess] = struct{}{}
	s.conns.Add(1)
	s.mu.Unlock()
	s.counters.accepted.Add(1)
	go s.runConn(sess)
}

// runConn owns one connection from handshake to close. No panic escapes it.
func (s *Server) runConn(sess *session) {
	remote := sess.conn.RemoteAddr().String()
	defer s.conns.Done()
	defer func() {
		_ = sess.conn.Close()
		sess.releaseBuffers()
		s.mu.Lock()
		delete(s.sessions, sess)
		s.mu.Unlock()
	}()
	defer func() {
		if r := recover(); r != nil {
			s.counters.panics.Add(1)
			s.log.Error("zmtp: panic in connection goroutine, connection closed",
				"remote", remote, "panic", r, "stack", string(debug.Stack()))
		}
	}()

	if err := sess.handshake(); err != nil {
		if sess.closedBy() != 0 {
			return // counted and logged by whoever closed it
		}
		s.counters.handshakesFailed.Add(1)
		s.log.Debug("zmtp: handshake failed", "remote", remote, "err", err)
		return
	}
	s.counters.handshakesCompleted.Add(1)
	if sess.sec != nil {
		s.log.Debug("zmtp: peer connected", "remote", remote, "version", fmt.Sprintf("%d.%d", sess.peer.Major, sess.peer.Minor), "curve_client", sess.client.String())
	} else {
		s.log.Debug("zmtp: peer connected", "remote", remote, "version", fmt.Sprintf("%d.%d", sess.peer.Major, sess.peer.Minor))
	}

	err := sess.serve(s.baseCtx)
	switch {
	case sess.closedBy() != 0:
		// Evicted or cut by the frame timeout: counted and logged there.
	case isPeerGone(err), errors.Is(err, errDraining), errors.Is(err, net.ErrClosed):
		s.log.Debug("zmtp: connection closed", "remote", remote, "err", err)
	case errors.Is(err, errWrite):
		s.counters.writeErrors.Add(1)
		s.log.Debug("zmtp: write to peer failed", "remote", remote, "err", err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.counters.idleTimeouts.Add(1)
		s.log.Debug("zmtp: peer silent past its heartbeat TTL or the idle timeout", "remote", remote)
	default:
		s.counters.protocolErrors.Add(1)
		s.log.Debug("zmtp: protocol error, connection closed", "remote", remote, "err", err)
	}
}

// isPeerGone reports errors that only mean the peer closed or reset the connection.
func isPeerGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, errPeerError)
}

// stopAccepting marks the server draining and closes the listener, once.
func (s *Server) stopAccepting() {
	s.stopOnce.Do(func() {
		// draining is set under mu so that admit either sees it or has
		// registered its session before Shutdown walks the sessions.
		s.mu.Lock()
		s.draining.Store(true)
		s.mu.Unlock()
		_ = s.ln.Close()
		close(s.stopped)
	})
}

// Shutdown stops accepting, lets requests being handled finish and their
// replies be written, then closes every connection. Idle connections are
// closed at once. If ctx ends first, handler contexts are cancelled, all
// connections are closed, and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAccepting()

	s.mu.Lock()
	for sess := range s.sessions {
		sess.interruptRead()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.cancelBase()
		return nil
	case <-ctx.Done():
		s.cancelBase()
		s.mu.Lock()
		for sess := range s.sessions {
			_ = sess.conn.Close()
		}
		s.mu.Unlock()
		return fmt.Errorf("zmtp: shutdown: %w", ctx.Err())
	}
}
