package opcua

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// The gate is the OPC UA port. It accepts each connection itself, reads
// the Hello and every OpenSecureChannel's plain header, refuses what the
// configuration forbids, and only then relays the connection to the
// library's listener on loopback. It exists because the library's own
// listener completes each Hello inside its accept loop without a
// deadline (one silent connection would stop every later one), never
// checks a security policy against its endpoints, and trusts every client
// certificate.

// GateLimits bound the gate. Zero fields take the defaults.
type GateLimits struct {
	// MaxConnections bounds open connections. When it is reached, a new
	// connection evicts the oldest one that has not yet opened a secure
	// channel; when every connection has, the new one is refused with
	// Bad_TcpServerTooBusy.
	MaxConnections int
	// HandshakeTimeout bounds the time from accept to a valid
	// OpenSecureChannel (the Hello included).
	HandshakeTimeout time.Duration
	// IdleTimeout cuts a connection that sends nothing for this long.
	// Clients with subscriptions send publish requests at least every
	// keep-alive (at most MaxKeepAlive), so only a dead client is cut.
	IdleTimeout time.Duration
	// MaxQueuedBytes bounds what the server has written that the client
	// has not read; a client that stops reading is cut when it is
	// exceeded or when a write has waited WriteTimeout.
	MaxQueuedBytes int
	WriteTimeout   time.Duration
	// MaxChunks bounds the chunks of one request.
	MaxChunks int
}

func (l *GateLimits) fill() {
	if l.MaxConnections <= 0 {
		l.MaxConnections = 64
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = 5 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 5 * time.Minute
	}
	if l.MaxQueuedBytes <= 0 {
		l.MaxQueuedBytes = 4 << 20
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = 30 * time.Second
	}
	if l.MaxChunks <= 0 {
		l.MaxChunks = 16
	}
}

// checkOpen decides an OpenSecureChannel from its plain header: StatusOK
// to let it through, otherwise the status code the client is told.
// discoveryOnly lets a channel of SecurityPolicy None through for
// discovery alone (GetEndpoints, FindServers), which every client needs
// before it opens a secure channel, when None is not allowed for more.
type checkOpen func(o *openHeader) (code ua.StatusCode, discoveryOnly bool)

// discoveryServices are what a discovery-only channel may call.
var discoveryServices = map[uint32]bool{
	id.GetEndpointsRequest_Encoding_DefaultBinary:         true,
	id.FindServersRequest_Encoding_DefaultBinary:          true,
	id.FindServersOnNetworkRequest_Encoding_DefaultBinary: true,
	id.CloseSecureChannelRequest_Encoding_DefaultBinary:   true,
}

// GateStats are the gate's counters.
type GateStats struct {
	Accepted, Evicted, Busy, Refused, Cut uint64
	Open                                  int
}

type gate struct {
	ln       net.Listener
	upstream string // the library's loopback listener
	limits   GateLimits
	check    checkOpen
	log      *slog.Logger

	mu      sync.Mutex
	conns   map[*gateConn]struct{}
	closed  bool
	wg      sync.WaitGroup
	counter struct{ accepted, evicted, busy, refused, cut atomic.Uint64 }
	// lastDial is when the gate last dialled the library (Unix
	// nanoseconds): see Server.Close.
	lastDial atomic.Int64
}

type gateConn struct {
	client   net.Conn
	accepted time.Time
	opened   atomic.Bool // a secure channel was let through
	// discoveryOnly: the channel is of SecurityPolicy None, which is not
	// allowed for more than discovery.
	discoveryOnly bool
	upMu          sync.Mutex
	up            net.Conn // the library's side; nil until dialled
	closed        bool
}

// close closes both sides; it may run at any time, from the gate's
// eviction too.
func (c *gateConn) close() {
	c.upMu.Lock()
	defer c.upMu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.client.Close()
	if c.up != nil {
		c.up.Close()
	}
}

// setUp records the library's side; false (and up closed) when the
// connection was closed meanwhile.
func (c *gateConn) setUp(up net.Conn) bool {
	c.upMu.Lock()
	defer c.upMu.Unlock()
	if c.closed {
		up.Close()
		return false
	}
	c.up = up
	return true
}

func newGate(ln net.Listener, upstream string, limits GateLimits, check checkOpen, log *slog.Logger) *gate {
	limits.fill()
	return &gate{ln: ln, upstream: upstream, limits: limits, check: check, log: log, conns: make(map[*gateConn]struct{})}
}

// serve accepts until the listener is closed.
func (g *gate) serve() {
	var delay time.Duration
	for {
		c, err := g.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: back off, as net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		g.admit(c)
	}
}

// admit registers c, evicting the oldest connection still in its
// handshake when the bound is reached.
func (g *gate) admit(c net.Conn) {
	gc := &gateConn{client: c, accepted: time.Now()}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		c.Close()
		return
	}
	if len(g.conns) >= g.limits.MaxConnections {
		var oldest *gateConn
		for o := range g.conns {
			if !o.opened.Load() && (oldest == nil || o.accepted.Before(oldest.accepted)) {
				oldest = o
			}
		}
		if oldest == nil {
			g.mu.Unlock()
			g.counter.busy.Add(1)
			refuse(c, ua.StatusBadTCPServerTooBusy, "too many connections")
			return
		}
		delete(g.conns, oldest)
		oldest.close()
		g.counter.evicted.Add(1)
	}
	g.conns[gc] = struct{}{}
	g.wg.Add(1)
	g.mu.Unlock()
	g.counter.accepted.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.forget(gc)
		g.relay(gc)
	}()
}

func (g *gate) forget(gc *gateConn) {
	gc.close()
	g.mu.Lock()
	delete(g.conns, gc)
	g.mu.Unlock()
}

// refuse tells a client why in an ERR message and closes its connection.
// It closes the sending side first and reads what the client still sends
// for a moment (at most a second and a few chunks): closing a socket
// with unread input resets the connection, and the client would never
// read the reason.
func refuse(c net.Conn, code ua.StatusCode, reason string) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(appendError(nil, uint32(code), reason))
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
		c.SetReadDeadline(time.Now().Add(time.Second))
		io.CopyN(io.Discard, c, 4*maxChunkBytes)
	}
	c.Close()
}

// relay reads the Hello, opens the upstream connection and copies both
// ways, checking each OpenSecureChannel on the way in.
func (g *gate) relay(gc *gateConn) {
	c := gc.client
	c.SetReadDeadline(gc.accepted.Add(g.limits.HandshakeTimeout))
	h, msg, err := readMessage(c, make([]byte, maxHelloBytes), maxHelloBytes)
	if err != nil {
		return
	}
	if h.Type != "HEL" || h.Chunk != 'F' {
		g.counter.refused.Add(1)
		refuse(c, ua.StatusBadTCPMessageTypeInvalid, "expected a Hello")
		return
	}
	if _, err := parseHello(msg[headerLen:]); err != nil {
		g.counter.refused.Add(1)
		refuse(c, ua.StatusBadTCPInternalError, "malformed Hello")
		return
	}
	d := net.Dialer{Timeout: g.limits.HandshakeTimeout}
	g.lastDial.Store(time.Now().UnixNano())
	up, err := d.DialContext(context.Background(), "tcp", g.upstream)
	if err != nil {
		g.log.Warn("opc ua: cannot reach the server behind the gate", "err", err)
		refuse(c, ua.StatusBadTCPInternalError, "server unavailable")
		return
	}
	if !gc.setUp(up) {
		return
	}
	if _, err := up.Write(msg); err != nil {
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.downstream(gc, up)
	}()
	buf := make([]byte, maxChunkBytes)
	chunks := 0
	for {
		h, msg, err := readMessage(c, buf, maxChunkBytes)
		if err != nil {
			return
		}
		switch h.Type {
		case "OPN":
			o, err := parseOpen(msg[headerLen:])
			if err != nil {
				g.counter.refused.Add(1)
				refuse(c, ua.StatusBadDecodingError, "malformed OpenSecureChannel")
				return
			}
			code, discoveryOnly := g.check(&o)
			if code != ua.StatusOK {
				g.counter.refused.Add(1)
				refuse(c, code, code.Error())
				return
			}
			gc.discoveryOnly = discoveryOnly
			if !gc.opened.Load() {
				gc.opened.Store(true)
			}
		case "MSG", "CLO":
			if !gc.opened.Load() {
				g.counter.refused.Add(1)
				refuse(c, ua.StatusBadSecureChannelIDInvalid, "no secure channel is open")
				return
			}
			if gc.discoveryOnly && h.Type == "MSG" {
				if t, ok := plainServiceType(msg[headerLen:]); !ok || h.Chunk != 'F' || !discoveryServices[t] {
					g.counter.refused.Add(1)
					refuse(c, ua.StatusBadSecurityPolicyRejected, "SecurityPolicy None serves discovery only; this server needs a secure channel")
					return
				}
			}
		default:
			g.counter.refused.Add(1)
			refuse(c, ua.StatusBadTCPMessageTypeInvalid, "unexpected message type")
			return
		}
		if h.Chunk == 'C' {
			if chunks++; chunks > g.limits.MaxChunks {
				g.counter.refused.Add(1)
				refuse(c, ua.StatusBadTCPMessageTooLarge, "too many chunks")
				return
			}
		} else {
			chunks = 0
		}
		if _, err := up.Write(msg); err != nil {
			return
		}
		c.SetReadDeadline(time.Now().Add(g.idleOrHandshake(gc)))
	}
}

func (g *gate) idleOrHandshake(gc *gateConn) time.Duration {
	if gc.opened.Load() {
		return g.limits.IdleTimeout
	}
	return time.Until(gc.accepted.Add(g.limits.HandshakeTimeout))
}

// downstream copies the server's bytes to the client through a bounded
// queue, so that the library, which answers every client from one
// goroutine, never waits for a client that does not read.
func (g *gate) downstream(gc *gateConn, up net.Conn) {
	// The byte bound is what cuts a client; the count of reads waiting
	// only bounds the queue's own size (each read is one or more of the
	// library's messages).
	queue := make(chan []byte, 512)
	var queued atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range queue {
			gc.client.SetWriteDeadline(time.Now().Add(g.limits.WriteTimeout))
			_, err := gc.client.Write(b)
			queued.Add(-int64(len(b)))
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					g.counter.cut.Add(1)
					g.log.Warn("opc ua: cut a client that does not read what the server sends", "client", gc.client.RemoteAddr().String(), "waited", g.limits.WriteTimeout)
				}
				gc.close()
				for range queue { // let the reader finish
				}
				return
			}
		}
	}()
	defer func() { close(queue); <-done; gc.close() }()
	// One read buffer; what is queued is a copy of its size. A publish
	// is a few hundred bytes: a 32 KiB buffer per read was garbage that
	// brought the collector round more often, on the cores the prediction
	// channel shares.
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			b := append([]byte(nil), buf[:n]...)
			full := queued.Add(int64(n)) > int64(g.limits.MaxQueuedBytes)
			if !full {
				select {
				case queue <- b:
				default:
					full = true
				}
			}
			if full {
				g.counter.cut.Add(1)
				g.log.Warn("opc ua: cut a client that does not read what the server sends", "client", gc.client.RemoteAddr().String(), "queued_bytes", queued.Load())
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// readMessage reads one message into buf, refusing one larger than limit.
func readMessage(c net.Conn, buf []byte, limit int) (header, []byte, error) {
	if _, err := io.ReadFull(c, buf[:headerLen]); err != nil {
		return header{}, nil, err
	}
	h, err := parseHeader(buf[:headerLen])
	if err != nil || int(h.Size) > limit {
		refuse(c, ua.StatusBadTCPMessageTooLarge, "message too large or malformed")
		return h, nil, errWire
	}
	if _, err := io.ReadFull(c, buf[headerLen:h.Size]); err != nil {
		return h, nil, err
	}
	return h, buf[:h.Size], nil
}

// stats returns the counters.
func (g *gate) stats() GateStats {
	g.mu.Lock()
	open := len(g.conns)
	g.mu.Unlock()
	return GateStats{
		Accepted: g.counter.accepted.Load(), Evicted: g.counter.evicted.Load(), Busy: g.counter.busy.Load(),
		Refused: g.counter.refused.Load(), Cut: g.counter.cut.Load(), Open: open,
	}
}

// close stops accepting, closes every connection and waits for them.
func (g *gate) close() {
	g.ln.Close()
	g.mu.Lock()
	g.closed = true
	for c := range g.conns {
		c.close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}
