package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// CurveOptions turn CurveZMQ (RFC 26) on for a PredictionClient.
type CurveOptions struct {
	// ServerKey is the server's public key: the line `ramanserve keygen`
	// printed (curve.ParsePublicKey reads it). Required.
	ServerKey curve.PublicKey
	// SecretKey is the client's own secret key; its public half is what a
	// server's allowlist (-zmq-curve-clients) names. Zero: a fresh key pair
	// for this PredictionClient (PredictionClient.CurvePublicKey tells
	// it), which only a server without an allowlist accepts.
	SecretKey curve.SecretKey
}

// ErrCurveHandshake is returned (wrapped, with the reason) when a CURVE
// handshake fails: the server refused this client, the peer could not
// prove it holds the server key the client was given, or it does not
// speak CURVE. The client never sends a request over such a connection.
var ErrCurveHandshake = errors.New("prediction channel: CURVE handshake failed")

// refusal marks the handshake failures that sending again cannot cure
// (the server's ERROR, a box that does not open with the server key, a
// server of another mechanism): the Lazy Pirate loop returns them at once.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// refused marks err as a refusal.
func refused(err error) error { return refusal{err} }

// isRefusal reports whether err is, or wraps, a refusal.
func isRefusal(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

// Bounds on what a server can make this client allocate.
const (
	// maxCommandBytes bounds a handshake command (WELCOME is 168 bytes,
	// READY a few dozen plus the server's metadata).
	maxCommandBytes = 64 << 10
	// maxReplyBytes bounds a reply's payload; ramanserve's replies are
	// under 2 KiB. A frame announcing more is refused before anything is
	// allocated for it.
	maxReplyBytes = 1 << 20
)

// curveKeys are a client's CURVE keys; they last for the life of the
// PredictionClient, across reconnects, so an allowlist entry keeps
// matching.
type curveKeys struct {
	server, public curve.PublicKey
	secret         curve.SecretKey
}

func newCurveKeys(o CurveOptions) (*curveKeys, error) {
	if o.ServerKey == (curve.PublicKey{}) {
		return nil, errors.New("client: CurveOptions.ServerKey is required for CURVE")
	}
	k := &curveKeys{server: o.ServerKey, secret: o.SecretKey}
	if o.SecretKey == (curve.SecretKey{}) {
		pub, sec, err := curve.GenerateKeyPair(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("client: CURVE key pair: %w", err)
		}
		k.public, k.secret = pub, sec
	} else {
		k.public = o.SecretKey.Public()
	}
	return k, nil
}

func (k *curveKeys) dial(ctx context.Context, endpoint string) (reqConn, error) {
	return dialCurve(ctx, endpoint, k)
}

// curveConn is a REQ connection of our own speaking CURVE: go-zeromq/zmq4
// has no CURVE, and its Security interface keeps data frames, where RFC
// 26 turns every frame into a MESSAGE command. After the handshake each
// request goes as two MESSAGEs (the REQ envelope's empty delimiter with
// MORE, then the body) and the reply comes back the same way.
type curveConn struct {
	nc    net.Conn
	r     *bufio.Reader
	sess  *curve.Session
	out   []byte // frames being written
	in    []byte // the frame being read
	plain []byte // the payload opened from it
}

// dialCurve connects to a tcp:// endpoint and performs the greeting and
// the CURVE handshake, all within ctx.
func dialCurve(ctx context.Context, endpoint string, k *curveKeys) (*curveConn, error) {
	addr, ok := strings.CutPrefix(endpoint, "tcp://")
	if !ok {
		return nil, fmt.Errorf("CURVE needs a tcp:// endpoint, not %q", endpoint)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &curveConn{nc: nc, r: bufio.NewReaderSize(nc, 4<<10)}
	if err := c.handshake(ctx, k); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (c *curveConn) close() error { return c.nc.Close() }

// watch puts ctx on the socket: its deadline, and an immediate one when
// ctx is cancelled. Call the returned stop when the exchange is over.
func (c *curveConn) watch(ctx context.Context) (stop func() bool) {
	d, _ := ctx.Deadline() // zero: none
	_ = c.nc.SetDeadline(d)
	return context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
}

// ioErr reports an I/O failure as ctx's error when ctx is what cut it.
func ioErr(ctx context.Context, err error) error {
	if cerr := ended(ctx); cerr != nil {
		return cerr
	}
	return err
}

// socketTypeREQ is the INITIATE metadata: we are a REQ socket.
var socketTypeREQ = wire.AppendProperties(nil, []wire.Property{{Name: "Socket-Type", Value: []byte("REQ")}})

// handshake runs the greeting and HELLO, WELCOME, INITIATE, READY.
func (c *curveConn) handshake(ctx context.Context, k *curveKeys) error {
	defer c.watch(ctx)()
	if err := c.greet(ctx); err != nil {
		return err
	}
	hs := curve.NewClient(k.server, k.public, k.secret, nil)
	hello, err := hs.Hello()
	if err != nil {
		return fmt.Errorf("%w: HELLO: %w", ErrCurveHandshake, err)
	}
	if err := c.writeCommand(hello); err != nil {
		return ioErr(ctx, fmt.Errorf("sending HELLO: %w", err))
	}
	welcome, err := c.readCommand("WELCOME")
	if err != nil {
		return stepErr(ctx, "HELLO", k.public, err)
	}
	initiate, err := hs.Initiate(welcome, socketTypeREQ)
	if err != nil {
		return refused(fmt.Errorf("%w: the server's WELCOME does not open with the server public key this client was given; "+
			"the peer is not that server (%w)", ErrCurveHandshake, err))
	}
	if err := c.writeCommand(initiate); err != nil {
		return ioErr(ctx, fmt.Errorf("sending INITIATE: %w", err))
	}
	ready, err := c.readCommand("READY")
	if err != nil {
		return stepErr(ctx, "INITIATE", k.public, err)
	}
	meta, sess, err := hs.Ready(ready)
	if err != nil {
		return refused(fmt.Errorf("%w: the server's READY does not open (%w)", ErrCurveHandshake, err))
	}
	props, err := wire.ParseProperties(meta)
	if err != nil {
		return refused(fmt.Errorf("%w: the server's READY metadata: %w", ErrCurveHandshake, err))
	}
	st, ok := wire.LookupProperty(props, "Socket-Type")
	if !ok || !(strings.EqualFold(string(st), "REP") || strings.EqualFold(string(st), "ROUTER")) {
		return refused(fmt.Errorf("%w: the server is a %q socket; a REQ client needs REP or ROUTER", ErrCurveHandshake, st))
	}
	c.sess = sess
	return nil
}

// greet sends our ZMTP 3.1 greeting (mechanism CURVE, as-server 0) and
// checks the server's.
func (c *curveConn) greet(ctx context.Context) error {
	var g [wire.GreetingSize]byte
	if _, err := c.nc.Write(wire.AppendGreeting(g[:0], wire.MechanismCurve, false)); err != nil {
		return ioErr(ctx, fmt.Errorf("sending the greeting: %w", err))
	}
	if n, err := io.ReadFull(c.r, g[:]); err != nil {
		if ended(ctx) == nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && (n == 0 || g[0] == 0xFF) {
			// libzmq reads our greeting before it finishes (or, quick
			// enough, starts) its own, and closes when our mechanism is
			// not its own.
			return fmt.Errorf("%w: the server closed the connection on our CURVE greeting after %d bytes of its own: "+
				"it does not offer CURVE (is it started without -zmq-curve-secret-key?), or it is at its connection limit",
				ErrCurveHandshake, n)
		}
		return ioErr(ctx, fmt.Errorf("reading the server's greeting: %w", err))
	}
	peer, err := wire.ParseGreeting(g[:])
	switch {
	case errors.Is(err, wire.ErrBadSignature):
		return refused(fmt.Errorf("%w: the peer is not a ZMTP server", ErrCurveHandshake))
	case errors.Is(err, wire.ErrOldVersion):
		return refused(fmt.Errorf("%w: the server speaks ZMTP %d.%d; CURVE needs 3.0 or later", ErrCurveHandshake, peer.Major, peer.Minor))
	case err != nil || peer.Mechanism != wire.MechanismCurve:
		return refused(fmt.Errorf("%w: the server offers the %q mechanism: it does not offer CURVE (is it started without -zmq-curve-secret-key?)",
			ErrCurveHandshake, peer.Mechanism))
	}
	return nil
}

// errServerError is an ERROR command from the server.
var errServerError = errors.New("the server sent ERROR")

// stepErr explains why the answer to our command (HELLO or INITIATE) did
// not come. A CURVE server that cannot open a HELLO (the client used
// another server key) sends ERROR (ramanserve) or closes (libzmq); one
// that does not admit the client's key after INITIATE sends ERROR.
func stepErr(ctx context.Context, sent string, client curve.PublicKey, err error) error {
	if cerr := ended(ctx); cerr != nil {
		return fmt.Errorf("CURVE handshake, waiting for the answer to %s: %w", sent, cerr)
	}
	hint := "is the server public key this client was given the server's?"
	if sent == "INITIATE" {
		hint = fmt.Sprintf("does the server's allowlist (-zmq-curve-clients) name this client's public key %s?", client)
	}
	switch {
	case errors.Is(err, errServerError):
		return refused(fmt.Errorf("%w: the server refused after %s: %w; %s", ErrCurveHandshake, sent, err, hint))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%w: the server closed the connection after %s: %s (%w)", ErrCurveHandshake, sent, hint, err)
	}
	return fmt.Errorf("%w: after %s: %w", ErrCurveHandshake, sent, err)
}

// writeCommand writes one command frame with body (name included).
func (c *curveConn) writeCommand(body []byte) error {
	c.out = wire.AppendHeader(c.out[:0], wire.FlagCommand, len(body))
	c.out = append(c.out, body...)
	_, err := c.nc.Write(c.out)
	return err
}

// readCommand reads one handshake command, which must be want (or the
// server's ERROR), and returns its whole body, valid until the next read.
func (c *curveConn) readCommand(want string) ([]byte, error) {
	flags, body, err := c.readFrame(maxCommandBytes)
	if err != nil {
		return nil, err
	}
	if flags&wire.FlagCommand == 0 {
		return nil, fmt.Errorf("%w: a message frame where the %s command was due", ErrBadReply, want)
	}
	name, data, err := wire.ParseCommand(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadReply, err)
	}
	switch name {
	case want:
		return body, nil
	case wire.CmdError:
		return nil, fmt.Errorf("%w %q", errServerError, wire.ErrorReason(data))
	}
	return nil, fmt.Errorf("%w: the %s command where %s was due", ErrBadReply, name, want)
}

// readFrame reads one frame whose body may be at most limit bytes; the
// body is valid until the next read.
func (c *curveConn) readFrame(limit int) (flags byte, body []byte, err error) {
	flags, err = c.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	size, err := wire.ReadSize(c.r, flags)
	if errors.Is(err, wire.ErrReservedFlags) {
		return 0, nil, fmt.Errorf("%w: %w", ErrBadReply, err)
	}
	if err != nil {
		return 0, nil, err
	}
	if size > uint64(limit) {
		return 0, nil, fmt.Errorf("%w: a frame of %d bytes, more than the %d this client accepts", ErrBadReply, size, limit)
	}
	if uint64(cap(c.in)) < size {
		c.in = make([]byte, size)
	}
	c.in = c.in[:size]
	if _, err := io.ReadFull(c.r, c.in); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return flags, c.in, nil
}

// roundTrip sends frame as one REQ request and returns the reply's body.
func (c *curveConn) roundTrip(ctx context.Context, frame []byte) ([]byte, error) {
	defer c.watch(ctx)()
	out, err := c.appendMessage(c.out[:0], curve.FlagMore, nil) // the REQ envelope's empty delimiter
	if err == nil {
		out, err = c.appendMessage(out, 0, frame)
	}
	if err != nil {
		return nil, err
	}
	c.out = out
	if _, err := c.nc.Write(out); err != nil {
		return nil, ioErr(ctx, err)
	}
	rep, err := c.readReply(ctx)
	if err != nil {
		return nil, ioErr(ctx, err)
	}
	return rep, nil
}

// appendMessage appends one frame carrying a MESSAGE command with payload.
// libzmq sends MESSAGE commands as frames without flags (the MORE and
// COMMAND bits travel inside the box), and so do we.
func (c *curveConn) appendMessage(dst []byte, flags byte, payload []byte) ([]byte, error) {
	n := curve.MessageOverhead + len(payload)
	dst = wire.AppendHeader(dst, 0, n)
	start := len(dst)
	dst, err := c.sess.Seal(dst, flags, payload)
	if err != nil {
		return nil, err
	}
	if len(dst)-start != n {
		return nil, fmt.Errorf("client: a sealed MESSAGE of %d bytes, framed as %d", len(dst)-start, n)
	}
	return dst, nil
}

// readReply reads MESSAGE frames up to the reply's last one: the empty
// delimiter, then exactly one body frame. Encrypted PINGs on the way are
// answered.
func (c *curveConn) readReply(ctx context.Context) ([]byte, error) {
	delimited := false
	for {
		flags, body, err := c.readFrame(maxReplyBytes + curve.MessageOverhead)
		if err != nil {
			return nil, err
		}
		if flags&wire.FlagMore != 0 {
			return nil, fmt.Errorf("%w: a MESSAGE frame flagged MORE", ErrBadReply)
		}
		if flags&wire.FlagCommand != 0 && !isMessage(body) {
			// Only a failing server speaks in the clear now.
			name, data, err := wire.ParseCommand(body)
			if err == nil && name == wire.CmdError {
				return nil, fmt.Errorf("%w %q", errServerError, wire.ErrorReason(data))
			}
			return nil, fmt.Errorf("%w: an unencrypted command after the CURVE handshake", ErrBadReply)
		}
		boxFlags, payload, err := c.sess.Open(c.plain[:0], body)
		if err != nil {
			return nil, fmt.Errorf("%w: a MESSAGE that does not open: %w", ErrBadReply, err)
		}
		c.plain = payload
		switch {
		case boxFlags&curve.FlagCommand != 0:
			if err := c.answerCommand(payload); err != nil {
				return nil, err
			}
		case !delimited:
			if len(payload) != 0 || boxFlags&curve.FlagMore == 0 {
				return nil, fmt.Errorf("%w: a reply without the empty delimiter frame", ErrBadReply)
			}
			delimited = true
		case boxFlags&curve.FlagMore != 0:
			return nil, fmt.Errorf("%w: a reply of more than one frame", ErrBadReply)
		default:
			return payload, nil
		}
	}
}

// isMessage reports whether a command body is a MESSAGE.
func isMessage(body []byte) bool { return len(body) >= 8 && string(body[:8]) == "\x07MESSAGE" }

// answerCommand handles a command that came encrypted: a PING gets its
// PONG (ZMTP 3.1 heartbeats, which libzmq encrypts like any command), the
// server's ERROR ends the exchange, anything else is ignored.
func (c *curveConn) answerCommand(body []byte) error {
	name, data, err := wire.ParseCommand(body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadReply, err)
	}
	switch name {
	case wire.CmdPing:
		_, pingCtx, err := wire.ParsePing(data)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBadReply, err)
		}
		pong := wire.AppendCommandBody(nil, wire.CmdPong, pingCtx)
		out, err := c.appendMessage(nil, curve.FlagCommand, pong)
		if err != nil {
			return err
		}
		_, err = c.nc.Write(out)
		return err
	case wire.CmdError:
		return fmt.Errorf("%w %q", errServerError, wire.ErrorReason(data))
	}
	return nil
}
