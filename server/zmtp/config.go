package zmtp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"ramanserve/server/zmtp/curve"
)

// Defaults applied by Listen to zero Config fields.
const (
	DefaultMaxMessageSize   int64         = 1 << 20  // 1 MiB
	DefaultDiscardLimit     int64         = 64 << 20 // 64 MiB
	DefaultHandshakeTimeout time.Duration = 5 * time.Second
	DefaultMaxConnections   int           = 1024
	DefaultWriteTimeout     time.Duration = 10 * time.Second
	DefaultShutdownTimeout  time.Duration = 5 * time.Second
	DefaultFrameTimeout     time.Duration = 10 * time.Second
	DefaultMaxPartialBytes  int64         = 64 << 20 // 64 MiB
	DefaultEvictableAfter   time.Duration = 10 * time.Minute
)

// Fixed limits that are not worth a knob.
const (
	// MaxFramesPerMessage caps the frames (envelope included) kept for one
	// message: zero-length frames cost no payload bytes, so the byte limit alone
	// would not bound the frame index. A message with more frames is treated
	// like an oversized one (discarded, handler called with ErrMessageTooLarge).
	MaxFramesPerMessage = 256

	// maxDiscardFrames bounds the frames of one message we are willing to
	// skip; beyond it the connection is closed.
	maxDiscardFrames = 1 << 16

	// MaxCommandSize caps a command frame's body (READY, PING, ...). Real
	// READY commands are well under 1 KiB.
	MaxCommandSize = 64 << 10

	// readBufferSize is the per-connection bufio.Reader size. Bodies larger
	// than this are read straight into the message buffer by bufio.
	readBufferSize = 8 << 10

	// ownBufferSize is each connection's own allowance for the message being
	// received: a message buffer up to this size is kept between messages
	// and needs nothing from the shared pool (Config.MaxPartialBytes), so a
	// spectrum (about 37 KiB for 2048 points) always gets through and costs
	// no shared atomic. Capacity beyond it is reserved from the pool before
	// it is allocated, and dropped with its reservation after the reply.
	ownBufferSize = 64 << 10

	// retainReplySize: reply buffers that grew beyond this are dropped after
	// use, so one large reply does not pin memory for the life of an idle
	// connection.
	retainReplySize = 16 << 10

	// retainCommandSize: the command buffer (READY, PING) is kept up to this.
	retainCommandSize = 1 << 10

	// minGrowStep is the first capacity a message buffer grows to; it then
	// doubles as bytes arrive, so a header claiming 1 MiB followed by
	// silence holds a few KiB, not 1 MiB.
	minGrowStep = 4 << 10

	// pingProtection is how long a PING without a TTL protects its peer from
	// eviction; a PING with a TTL protects it for that TTL, but never longer
	// than maxPingProtection. A TTL may claim up to 6553.5 s; a peer that
	// really heartbeats PINGs every interval and stays protected, while one
	// PING and silence would otherwise hold a slot for 109 minutes.
	pingProtection    = 30 * time.Second
	maxPingProtection = 60 * time.Second
)

// ErrMessageTooLarge is reported in Request.Err when a message exceeded
// Config.MaxMessageSize (or MaxFramesPerMessage) but not Config.DiscardLimit:
// it was read and discarded without being stored.
var ErrMessageTooLarge = errors.New("zmtp: message too large")

// ErrPartialBytesExhausted is reported in Request.Err when a message needed
// more than the connection's own buffer and the shared pool
// (Config.MaxPartialBytes) could not spare it: the message was discarded as
// it streamed in. It wraps ErrMessageTooLarge, so handlers that know only
// that one still answer; the same message may succeed later.
var ErrPartialBytesExhausted = fmt.Errorf("%w: the server's buffer for large messages is in use, retry later", ErrMessageTooLarge)

// Request is one REP request after the envelope (everything up to and
// including the empty delimiter) is stripped.
type Request struct {
	Frames [][]byte // body frames; valid only during Handle
	Err    error    // non-nil when the message could not be received whole, e.g. ErrMessageTooLarge; Frames is nil then
}

// Handler produces the reply to a request.
type Handler interface {
	// Handle appends exactly one reply body frame to dst and returns it. Called concurrently from many connections.
	Handle(ctx context.Context, req Request, dst []byte) []byte
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req Request, dst []byte) []byte

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, req Request, dst []byte) []byte {
	return f(ctx, req, dst)
}

// Config holds the server limits. Zero fields take the defaults above.
type Config struct {
	MaxMessageSize   int64         // default 1 MiB; total payload bytes of one message (all frames, envelope included), checked before allocating
	DiscardLimit     int64         // default 64 MiB; oversized messages up to this size are streamed to nowhere and answered with Err=ErrMessageTooLarge; beyond it the peer gets an ERROR command and is closed
	HandshakeTimeout time.Duration // default 5s; per connection, from accept until both READY commands are exchanged
	MaxConnections   int           // default 1024; at the cap a newcomer evicts the longest-silent evictable peer (see EvictableAfter), or is closed at once when none is
	Logger           *slog.Logger  // default slog.Default()

	// IdleTimeout closes a connection that sends nothing (no frame, no PING)
	// for this long while we wait for its next request. 0 (default) disables
	// it; a peer's PING TTL applies regardless (see package doc).
	IdleTimeout time.Duration
	// WriteTimeout bounds writing one reply or command to a peer that does
	// not read. Default 10s.
	WriteTimeout time.Duration
	// ShutdownTimeout is how long Serve waits for in-flight requests when its
	// context is cancelled. Default 5s. Shutdown uses its own context instead.
	ShutdownTimeout time.Duration

	// FrameTimeout bounds how long a message may stay incomplete once the
	// first byte of its first frame arrived (commands count as frames): the
	// connection is closed when it runs out. A peer idle between messages is
	// not affected. Default 10s.
	FrameTimeout time.Duration
	// MaxPartialBytes caps the bytes all connections together hold in message
	// buffers beyond each connection's own 64 KiB. A message that would need
	// more is streamed to nowhere and answered with Err wrapping
	// ErrMessageTooLarge (ErrPartialBytesExhausted). Default 64 MiB.
	MaxPartialBytes int64
	// EvictableAfter: a peer that has had a reply may be evicted at the
	// connection cap only once it has been silent this long (peers that
	// never had one may be evicted at any time). Default 10 min.
	EvictableAfter time.Duration

	// Curve, when set, turns the CURVE security mechanism (RFC 26) on and
	// NULL off: see the package doc, section CurveZMQ.
	Curve *CurveConfig
}

// CurveConfig is the server side of CurveZMQ.
type CurveConfig struct {
	// Secret is the server's long-term secret key; clients connect with its
	// public key (ZMQ_CURVE_SERVERKEY).
	Secret curve.SecretKey
	// Allow decides whether a client, once it has proved that it holds the
	// secret half of this long-term public key, may connect; nil: any
	// client that knows the server key. It is called concurrently from
	// connection goroutines and is read on every handshake, so a reload
	// swaps what it consults (curve.Allowlist does that atomically) rather
	// than the Config.
	Allow func(curve.PublicKey) bool
	// HelloRate is how many HELLOs a second one source address (an IPv6
	// /64) gets answered, HelloBurst how many at once; beyond them a
	// HELLO gets ERROR "300" and is closed unread further (hellolimit.go).
	// 0 takes DefaultHelloRate and DefaultHelloBurst; a negative rate
	// turns the limit off.
	HelloRate  float64
	HelloBurst int
}

// withDefaults validates cfg and fills zero fields.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.MaxMessageSize == 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.DiscardLimit == 0 {
		cfg.DiscardLimit = DefaultDiscardLimit
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.FrameTimeout == 0 {
		cfg.FrameTimeout = DefaultFrameTimeout
	}
	if cfg.MaxPartialBytes == 0 {
		cfg.MaxPartialBytes = DefaultMaxPartialBytes
	}
	if cfg.EvictableAfter == 0 {
		cfg.EvictableAfter = DefaultEvictableAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	switch {
	case cfg.MaxMessageSize < 0:
		return cfg, fmt.Errorf("zmtp: MaxMessageSize %d is negative", cfg.MaxMessageSize)
	case cfg.DiscardLimit < cfg.MaxMessageSize:
		return cfg, fmt.Errorf("zmtp: DiscardLimit %d is below MaxMessageSize %d", cfg.DiscardLimit, cfg.MaxMessageSize)
	case cfg.HandshakeTimeout < 0, cfg.IdleTimeout < 0, cfg.WriteTimeout < 0, cfg.ShutdownTimeout < 0,
		cfg.FrameTimeout < 0, cfg.EvictableAfter < 0:
		return cfg, errors.New("zmtp: timeouts must not be negative")
	case cfg.MaxConnections < 0:
		return cfg, fmt.Errorf("zmtp: MaxConnections %d is negative", cfg.MaxConnections)
	case cfg.MaxPartialBytes < 0:
		return cfg, fmt.Errorf("zmtp: MaxPartialBytes %d is negative", cfg.MaxPartialBytes)
	}
	if cfg.Curve != nil {
		c := *cfg.Curve
		if c.HelloRate == 0 {
			c.HelloRate = DefaultHelloRate
		}
		if c.HelloBurst == 0 {
			c.HelloBurst = DefaultHelloBurst
		}
		if math.IsNaN(c.HelloRate) || math.IsInf(c.HelloRate, 0) || c.HelloBurst < 0 {
			return cfg, fmt.Errorf("zmtp: CURVE HELLO rate %v and burst %d: want a finite rate and a burst >= 0", c.HelloRate, c.HelloBurst)
		}
		cfg.Curve = &c
	}
	return cfg, nil
}

// PerConnectionBytes bounds what one NULL connection holds besides its share
// of the shared pool: its own 64 KiB message allowance, the read buffer, reply
// buffers kept up to 16 KiB each, the command buffer, its goroutine and its
// socket (api/messages.md section 5).
const PerConnectionBytes int64 = 128 << 10

// CurvePerConnectionBytes is what a CURVE connection holds beyond
// PerConnectionBytes: its own 64 KiB allowance for the ciphertext of the
// frame being read (beyond it, from the shared pool like message buffers),
// the session's sealing scratch kept up to 16 KiB, and the handshake state.
const CurvePerConnectionBytes int64 = 96 << 10

// MemoryBound is the most the connections of a server with this
// configuration hold, however the peers behave: the shared pool plus
// PerConnectionBytes for every connection. Zero fields count as their
// defaults.
func (cfg Config) MemoryBound() int64 {
	// A configuration withDefaults refuses never serves; its bound is
	// still computed from the filled fields.
	cfg, _ = cfg.withDefaults()
	perConn := PerConnectionBytes
	if cfg.Curve != nil {
		perConn += CurvePerConnectionBytes
	}
	return cfg.MaxPartialBytes + int64(cfg.MaxConnections)*perConn
}
