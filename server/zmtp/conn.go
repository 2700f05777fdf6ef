package zmtp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"ramanserve/platform/sockqueue"
	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// Errors that end a connection after the handshake.
var (
	errPeerError       = errors.New("zmtp: peer sent ERROR")
	errUnexpectedReady = errors.New("zmtp: READY after the handshake")
	errCommandMore     = errors.New("zmtp: command frame with MORE set")
	errBeyondDiscard   = errors.New("zmtp: message exceeds the discard limit")
	errDraining        = errors.New("zmtp: server is shutting down")
	errIncompatible    = errors.New("zmtp: incompatible socket type")
	errNoSocketType    = errors.New("zmtp: READY without Socket-Type")
	errExpectedReady   = errors.New("zmtp: expected READY")
	errEnvelopeLost    = errors.New("zmtp: the envelope itself exceeds the message limits")
)

// session is the state of one connection. It is owned by one goroutine; the
// cross-goroutine accesses are the server calling interruptRead, and the
// housekeeper and the admission path reading state and heartbeatUntil and
// closing the connection (see limits.go).
type session struct {
	srv    *Server // may be nil in fuzz tests
	cfg    Config
	h      Handler
	conn   net.Conn
	br     *bufio.Reader
	shared *shared

	peer wire.Greeting

	// state is the phase word others read (limits.go). Only this goroutine
	// moves it, always by compare-and-swap from word, its last value: other
	// goroutines may only swap an idle or receiving word for a closed one.
	state atomic.Uint64
	word  uint64
	// heartbeatUntil (coarse ms) protects the peer from eviction after a PING.
	heartbeatUntil atomic.Int64
	// reserved and cmdReserved are what msgBuf and cmdBuf hold from the
	// shared pool.
	reserved, cmdReserved int64
	// seq is the admission order, the tie-breaker of the coarse clock
	// when choosing whom to evict.
	seq uint64

	// Reused across messages; see ownBufferSize and retainReplySize.
	msgBuf    []byte   // payload of all kept frames of the current message, back to back
	frameEnds []int    // end offset in msgBuf of each kept frame
	frames    [][]byte // views into msgBuf, rebuilt per message
	replyBuf  []byte   // passed to Handler as dst
	outBuf    []byte   // wire bytes of the reply: envelope + body frames
	cmdBuf    []byte   // body of the current command frame

	// CURVE only (nil/empty with NULL): the established session, the
	// client's long-term key, and the ciphertext of the frame being read
	// (encReserved of it from the shared pool), reused to seal replies.
	sec         *curve.Session
	client      curve.PublicKey
	encBuf      []byte
	encReserved int64

	// remoteTTL is the TTL from the peer's latest PING (0 = none).
	remoteTTL     time.Duration
	deadlineArmed bool
}

func newSession(srv *Server, sh *shared, cfg Config, h Handler, conn net.Conn) *session {
	s := &session{
		srv:    srv,
		cfg:    cfg,
		h:      h,
		conn:   conn,
		shared: sh,
	}
	s.br = bufio.NewReaderSize(patientReader{conn: conn, rearm: s.rearmTimeout}, readBufferSize)
	s.word = stateWord(phaseIdle, false, sh.now())
	s.state.Store(s.word)
	return s
}

// moveTo changes the phase, stamping it with the coarse clock. It fails when
// another goroutine closed the connection first.
func (s *session) moveTo(phase uint64, served bool) error {
	w := stateWord(phase, served, s.shared.now())
	if !s.state.CompareAndSwap(s.word, w) {
		return errClosedByServer
	}
	s.word = w
	return nil
}

func (s *session) served() bool { return s.word&servedBit != 0 }

// frameStarted marks the first byte of a frame: from here until the message
// (or command) is complete, the partial-message deadline runs and the
// connection cannot be evicted.
func (s *session) frameStarted() error {
	if phaseOf(s.word) != phaseIdle {
		return nil
	}
	return s.moveTo(phaseReceiving, s.served())
}

// closedBy reports why another goroutine closed the connection (0: it did not).
func (s *session) closedBy() uint64 {
	if w := s.state.Load(); phaseOf(w) == phaseClosed {
		return uint64(stampOf(w))
	}
	return 0
}

// releaseBuffers returns the pool reservation and drops a message buffer
// beyond the connection's own allowance.
func (s *session) releaseBuffers() {
	if cap(s.msgBuf) > ownBufferSize {
		s.msgBuf = nil
	} else {
		s.msgBuf = s.msgBuf[:0]
	}
	s.shared.release(s.reserved)
	s.reserved = 0
	s.dropCommandBuffer()
	s.releaseCipherBuffer()
}

// stats returns the server counters, or a throwaway set when running without a
// server (fuzz tests).
func (s *session) stats() *counters {
	if s.srv == nil {
		return &counters{}
	}
	return &s.srv.counters
}

func (s *session) draining() bool { return s.srv != nil && s.srv.draining.Load() }

// handshake exchanges greetings and READY commands under the handshake deadline.
func (s *session) handshake() error {
	if err := s.conn.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout)); err != nil {
		return fmt.Errorf("zmtp: set handshake deadline: %w", err)
	}
	mechanism := wire.MechanismNull
	if s.cfg.Curve != nil {
		mechanism = wire.MechanismCurve
	}
	// Send our whole greeting at once: libzmq reveals its version only after
	// seeing our signature, so waiting for its 64 bytes first would deadlock.
	if _, err := s.conn.Write(wire.AppendGreeting(s.outBuf[:0], mechanism, mechanism == wire.MechanismCurve)); err != nil {
		return fmt.Errorf("zmtp: write greeting: %w", err)
	}
	var raw [wire.GreetingSize]byte
	// Read the signature and the major version first so that a non-ZMTP or
	// pre-3.0 peer is refused without waiting for bytes it will never send
	// (a ZMTP 2.0 greeting is only 12 bytes long).
	if _, err := io.ReadFull(s.br, raw[:wire.SignatureSize]); err != nil {
		return fmt.Errorf("zmtp: read greeting signature: %w", err)
	}
	if err := wire.CheckSignature(raw[:wire.SignatureSize]); err != nil {
		return err
	}
	if _, err := io.ReadFull(s.br, raw[wire.SignatureSize:wire.SignatureSize+1]); err != nil {
		return fmt.Errorf("zmtp: read greeting version: %w", err)
	}
	if major := raw[wire.SignatureSize]; major < 3 {
		return fmt.Errorf("zmtp: peer major version %d: %w", major, wire.ErrOldVersion)
	}
	if _, err := io.ReadFull(s.br, raw[wire.SignatureSize+1:]); err != nil {
		return fmt.Errorf("zmtp: read greeting: %w", err)
	}
	g, err := parseGreeting(raw[:], mechanism)
	if err != nil {
		if errors.Is(err, wire.ErrBadMechanism) {
			s.sendError("unsupported security mechanism, only " + mechanism)
		}
		return err
	}
	s.peer = g

	if s.cfg.Curve != nil {
		err = s.curveHandshake()
	} else {
		err = s.nullHandshake()
	}
	if err != nil {
		return err
	}
	if err := s.conn.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("zmtp: clear handshake deadline: %w", err)
	}
	return s.moveTo(phaseIdle, false)
}

// ourMetadata is the READY metadata we send: Socket-Type REP.
var ourMetadata = wire.AppendProperties(nil, []wire.Property{{Name: "Socket-Type", Value: []byte("REP")}})

// nullHandshake exchanges READY commands (NULL mechanism): both sides send
// READY without waiting for the other's.
func (s *session) nullHandshake() error {
	if err := s.write(wire.AppendCommand(s.outBuf[:0], wire.CmdReady, ourMetadata)); err != nil {
		return fmt.Errorf("zmtp: write READY: %w", err)
	}

	flags, size, err := s.readFrameHeader()
	if err != nil {
		return fmt.Errorf("zmtp: read READY: %w", err)
	}
	defer s.dropCommandBuffer() // after the READY properties, which alias it, are used
	if flags&wire.FlagCommand == 0 || flags&wire.FlagMore != 0 {
		s.sendError("expected READY")
		return fmt.Errorf("zmtp: first frame has flags %#x: %w", flags, errExpectedReady)
	}
	body, err := s.readCommandBody(size)
	if err != nil {
		if errors.Is(err, errCommandTooLarge) {
			s.sendError("READY too large")
		}
		return err
	}
	name, data, err := wire.ParseCommand(body)
	if err != nil {
		s.sendError("malformed command")
		return err
	}
	switch name {
	case wire.CmdReady:
	case wire.CmdError:
		return fmt.Errorf("zmtp: during handshake: %w", errPeerError)
	default:
		s.sendError("expected READY")
		return fmt.Errorf("zmtp: got %q: %w", name, errExpectedReady)
	}
	return s.checkPeerMetadata(data)
}

// checkPeerMetadata parses the peer's metadata (from READY, or from
// INITIATE with CURVE) and checks its Socket-Type, sending an ERROR command
// when it is refused.
func (s *session) checkPeerMetadata(data []byte) error {
	props, err := wire.ParseProperties(data)
	if err != nil {
		s.sendError("malformed READY metadata")
		return err
	}
	socketType, ok := wire.LookupProperty(props, "Socket-Type")
	if !ok {
		s.sendError("missing Socket-Type")
		return errNoSocketType
	}
	if !compatibleWithREP(socketType) {
		s.sendError("incompatible socket type; this REP server accepts REQ and DEALER")
		return fmt.Errorf("zmtp: peer socket type %q: %w", socketType, errIncompatible)
	}
	return nil
}

// serve answers requests until the peer leaves, breaks the protocol, or the
// server drains. It returns the reason.
func (s *session) serve(ctx context.Context) error {
	for {
		if s.draining() {
			return errDraining
		}
		envLen, refused, err := s.readMessage()
		if err != nil {
			return err
		}
		if err := s.moveTo(phaseHandling, s.served()); err != nil {
			return err
		}
		req := Request{}
		if refused != nil {
			req.Err = refused
			s.stats().requestsTooLarge.Add(1)
		} else {
			req.Frames = s.frames[envLen:]
		}
		reply := s.h.Handle(ctx, req, s.replyBuf[:0])

		err = s.writeReply(s.frames[:envLen], reply)
		s.replyBuf = retain(reply, retainReplySize)
		s.releaseBuffers()
		if err != nil {
			return fmt.Errorf("zmtp: reply: %w", err)
		}
		s.stats().requestsServed.Add(1)
		if err := s.moveTo(phaseIdle, true); err != nil {
			return err
		}
	}
}

// writeReply sends the envelope and the reply frame. The usual reply fits
// outBuf and goes out in one Write. A larger one (a DEALER's big envelope)
// is written frame by frame straight from the message buffer, so that it
// is never copied into a second buffer of its size.
func (s *session) writeReply(envelope [][]byte, reply []byte) error {
	if s.sec != nil {
		return s.writeSealedReply(envelope, reply)
	}
	size := 0
	for _, f := range envelope {
		size += 9 + len(f)
	}
	if size+9+len(reply) <= retainReplySize {
		out := s.outBuf[:0]
		for _, f := range envelope {
			out = wire.AppendFrame(out, wire.FlagMore, f)
		}
		out = wire.AppendFrame(out, 0, reply)
		s.outBuf = out[:0]
		return s.write(out)
	}
	for _, f := range envelope {
		if err := s.write(wire.AppendHeader(s.outBuf[:0], wire.FlagMore, len(f))); err != nil {
			return err
		}
		if err := s.write(f); err != nil {
			return err
		}
	}
	if err := s.write(wire.AppendHeader(s.outBuf[:0], 0, len(reply))); err != nil {
		return err
	}
	return s.write(reply)
}

// retain keeps a buffer for reuse unless it grew beyond limit.
func retain(b []byte, limit int) []byte {
	if cap(b) > limit {
		return nil
	}
	return b[:0]
}

// readMessage reads frames up to the end of one message, answering commands
// met on the way. On return s.frames holds the kept frames and envLen is the
// number of them that form the envelope (delimiter included; 0 when no empty
// frame was kept). refused is non-nil (ErrMessageTooLarge, or
// ErrPartialBytesExhausted) when the message could not be kept and its
// payload past that point was discarded.
func (s *session) readMessage() (envLen int, refused error, err error) {
	s.msgBuf = s.msgBuf[:0]
	s.frameEnds = s.frameEnds[:0]
	if s.sec != nil {
		return s.readSealedMessage()
	}
	var tally messageTally
	for {
		flags, size, err := s.nextFrameHeader()
		if err != nil {
			return 0, nil, err
		}
		if flags&wire.FlagCommand != 0 {
			if flags&wire.FlagMore != 0 {
				return 0, nil, errCommandMore
			}
			if err := s.handleCommand(size); err != nil {
				return 0, nil, err
			}
			if tally.frames == 0 {
				// A command between messages is activity, not a message
				// in progress.
				if err := s.moveTo(phaseIdle, s.served()); err != nil {
					return 0, nil, err
				}
			}
			continue
		}
		// Check sizes before touching memory.
		if !tally.count(size, &s.cfg) {
			s.sendError("message too large")
			return 0, nil, tally.beyondDiscard(size)
		}
		n := int64(size)
		if tally.refused == nil {
			start := len(s.msgBuf)
			if err := s.readFrameBody(int(n)); err != nil {
				if !errors.Is(err, ErrPartialBytesExhausted) {
					return 0, nil, err
				}
				// Keep what came before this frame (the envelope), drop
				// this frame's bytes and stream the rest to nowhere.
				tally.refused = err
				n -= int64(len(s.msgBuf) - start)
				s.msgBuf = s.msgBuf[:start]
				s.stats().partialBytesRefused.Add(1)
			} else {
				tally.kept(size)
				s.frameEnds = append(s.frameEnds, len(s.msgBuf))
			}
		}
		if tally.refused != nil {
			if _, err := s.br.Discard(int(n)); err != nil {
				return 0, nil, fmt.Errorf("zmtp: discard frame: %w", err)
			}
			tally.dropped(size)
		}
		if flags&wire.FlagMore == 0 {
			break
		}
	}

	envLen, err = s.indexFrames(tally.delimiterDiscarded, 0)
	return envLen, tally.refused, err
}

// messageTally counts the data frames of one message against the limits
// while it is read, for NULL and CURVE alike. Commands between the frames
// do not count. The buffers and their pool reservations are the reader's.
type messageTally struct {
	total  int64 // payload bytes of all data frames so far
	frames int
	// refused is set (ErrMessageTooLarge, or ErrPartialBytesExhausted by
	// the reader) once the message cannot be kept: its later frames are
	// read and dropped, and the handler gets refused instead.
	refused error
	// keptDelimiter: an empty frame (the delimiter) is among the kept
	// frames. delimiterDiscarded: the delimiter came only after the limits
	// were crossed, so the envelope was not kept and no reply could be
	// routed back through it.
	keptDelimiter, delimiterDiscarded bool
}

// count admits the next data frame, of size payload bytes: false when
// the message goes past what is read at all (the connection then closes;
// beyondDiscard says why), and refused is set when it goes past what is
// kept. size may be up to 2^64-1, so it is compared against the remaining
// budget rather than added first.
func (t *messageTally) count(size uint64, cfg *Config) bool {
	t.frames++
	if size > uint64(cfg.DiscardLimit-t.total) || t.frames > maxDiscardFrames {
		return false
	}
	n := int64(size)
	if t.refused == nil && (n > cfg.MaxMessageSize-t.total || t.frames > MaxFramesPerMessage) {
		t.refused = ErrMessageTooLarge
	}
	t.total += n
	return true
}

// beyondDiscard is the error for a frame count refused.
func (t *messageTally) beyondDiscard(size uint64) error {
	return fmt.Errorf("zmtp: frame %d of %d bytes after %d: %w", t.frames, size, t.total, errBeyondDiscard)
}

// kept records a frame of size bytes kept with the message.
func (t *messageTally) kept(size uint64) {
	t.keptDelimiter = t.keptDelimiter || size == 0
}

// dropped records a frame of size bytes dropped after the message was
// refused.
func (t *messageTally) dropped(size uint64) {
	if size == 0 && !t.keptDelimiter {
		t.delimiterDiscarded = true
	}
}

// indexFrames rebuilds s.frames from msgBuf and frameEnds once a message is
// complete, and finds its envelope. Each frame's payload follows the
// previous frame's end after gap bytes (CURVE keeps a flags byte there).
func (s *session) indexFrames(delimiterDiscarded bool, gap int) (envLen int, err error) {
	if delimiterDiscarded {
		s.sendError("message envelope too large")
		return 0, errEnvelopeLost
	}

	s.frames = s.frames[:0]
	start := 0
	for _, end := range s.frameEnds {
		s.frames = append(s.frames, s.msgBuf[start+gap:end:end])
		start = end
	}
	for i, f := range s.frames {
		if len(f) == 0 {
			return i + 1, nil
		}
	}
	return 0, nil
}

// readFrameBody appends the next n bytes from the peer to msgBuf. The
// buffer grows only as bytes arrive, doubling from minGrowStep, so a header
// that claims 1 MiB and is followed by silence holds a few KiB; capacity
// beyond ownBufferSize is reserved from the shared pool before it is
// allocated. When the pool cannot spare it, ErrPartialBytesExhausted is
// returned with the bytes read so far appended.
func (s *session) readFrameBody(n int) error {
	end := len(s.msgBuf) + n
	for len(s.msgBuf) < end {
		if len(s.msgBuf) == cap(s.msgBuf) {
			if err := s.growMsgBuf(end); err != nil {
				return err
			}
		}
		m, err := s.br.Read(s.msgBuf[len(s.msgBuf):min(cap(s.msgBuf), end)])
		s.msgBuf = s.msgBuf[:len(s.msgBuf)+m]
		if err != nil && len(s.msgBuf) < end {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("zmtp: read frame body: %w", err)
		}
	}
	return nil
}

// growMsgBuf doubles msgBuf's capacity (at least minGrowStep, at most
// want), reserving what lies beyond ownBufferSize from the shared pool.
func (s *session) growMsgBuf(want int) error {
	newCap := min(want, max(2*cap(s.msgBuf), minGrowStep))
	if need := int64(max(newCap-ownBufferSize, 0)) - s.reserved; need > 0 {
		if !s.shared.reserve(need) {
			return ErrPartialBytesExhausted
		}
		s.reserved += need
	}
	grown := make([]byte, len(s.msgBuf), newCap)
	copy(grown, s.msgBuf)
	s.msgBuf = grown
	return nil
}

// nextFrameHeader reads the header of a message's next frame (or of a
// command between them) under the read deadline: the handshake has its own.
func (s *session) nextFrameHeader() (flags byte, size uint64, err error) {
	if err := s.armReadDeadline(); err != nil {
		return 0, 0, err
	}
	return s.readFrameHeader()
}

// readFrameHeader reads the flags and size of the next frame.
func (s *session) readFrameHeader() (flags byte, size uint64, err error) {
	flags, err = s.br.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	if err := s.frameStarted(); err != nil {
		return 0, 0, err
	}
	size, err = wire.ReadSize(s.br, flags)
	return flags, size, err
}

// readCommandBody reads a command body of the given size into cmdBuf, refusing
// bodies over MaxCommandSize before allocating.
func (s *session) readCommandBody(size uint64) ([]byte, error) {
	if size > MaxCommandSize {
		return nil, fmt.Errorf("zmtp: command of %d bytes: %w", size, errCommandTooLarge)
	}
	// Like message bodies, the buffer grows only as bytes arrive, and
	// capacity beyond retainCommandSize comes from the shared pool.
	buf := s.cmdBuf[:0]
	for len(buf) < int(size) {
		if len(buf) == cap(buf) {
			newCap := min(int(size), max(2*cap(buf), 256))
			if need := int64(max(newCap-retainCommandSize, 0)) - s.cmdReserved; need > 0 {
				if !s.shared.reserve(need) {
					s.cmdBuf = buf
					s.sendError("server busy")
					return nil, fmt.Errorf("zmtp: command of %d bytes: %w", size, ErrPartialBytesExhausted)
				}
				s.cmdReserved += need
			}
			grown := make([]byte, len(buf), newCap)
			copy(grown, buf)
			buf = grown
		}
		m, err := s.br.Read(buf[len(buf):min(cap(buf), int(size))])
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < int(size) {
			s.cmdBuf = buf
			return nil, fmt.Errorf("zmtp: read command body: %w", err)
		}
	}
	s.cmdBuf = buf
	return buf, nil
}

// dropCommandBuffer gives back a command buffer beyond retainCommandSize
// and its reservation once the command is processed.
func (s *session) dropCommandBuffer() {
	if cap(s.cmdBuf) > retainCommandSize {
		s.cmdBuf = nil
	}
	s.shared.release(s.cmdReserved)
	s.cmdReserved = 0
}

// handleCommand processes a command frame received after the handshake.
func (s *session) handleCommand(size uint64) error {
	defer s.dropCommandBuffer()
	body, err := s.readCommandBody(size)
	if err != nil {
		return err
	}
	return s.processCommand(body)
}

// processCommand acts on a command body received after the handshake (in a
// command frame with NULL, inside a MESSAGE with CURVE).
func (s *session) processCommand(body []byte) error {
	name, data, err := wire.ParseCommand(body)
	if err != nil {
		return err
	}
	switch name {
	case wire.CmdPing:
		if !s.peer.SupportsHeartbeat() {
			// ZMTP 3.0 has no heartbeats; like any unknown command, ignore it.
			s.stats().commandsIgnored.Add(1)
			return nil
		}
		ttl, pingCtx, err := wire.ParsePing(data)
		if err != nil {
			return err
		}
		s.stats().pingsReceived.Add(1)
		s.remoteTTL = time.Duration(ttl) * 100 * time.Millisecond
		protect := pingProtection
		if s.remoteTTL > 0 {
			protect = min(s.remoteTTL, maxPingProtection)
		}
		s.heartbeatUntil.Store(s.shared.now() + protect.Milliseconds())
		// The PONG goes out at once.
		return s.writeCommand(wire.CmdPong, pingCtx)
	case wire.CmdError:
		return errPeerError
	case wire.CmdReady:
		return errUnexpectedReady
	default:
		// PONG (we never PING), SUBSCRIBE, CANCEL and future commands.
		s.stats().commandsIgnored.Add(1)
		return nil
	}
}

// readTimeout is how long we wait for the peer's next frame: the shorter of
// Config.IdleTimeout and the TTL of its latest PING, 0 meaning no limit.
func (s *session) readTimeout() time.Duration {
	idle, ttl := s.cfg.IdleTimeout, s.remoteTTL
	switch {
	case idle == 0:
		return ttl
	case ttl == 0:
		return idle
	default:
		return min(idle, ttl)
	}
}

// rearmTimeout is how far a frame's read deadline is moved on when it
// passed with the peer's bytes already waiting (patientReader): the
// frame's own timeout again; 0, so that the deadline stands, during the
// handshake, whose deadline is its own, and once the server drains (a
// past deadline is also how interruptRead may wake the reader).
func (s *session) rearmTimeout() time.Duration {
	if !s.deadlineArmed || s.draining() {
		return 0
	}
	return s.readTimeout()
}

// patientReader reads conn. A read that fails on its deadline while the
// peer's bytes already wait unread in the socket is this goroutine's
// lateness (a busy machine kept it from its core), not the peer's
// silence: the deadline moves on by rearm's timeout and the read is tried
// again. A peer that honours a short heartbeat TTL is then never dropped
// because the server was slow to look; one that really sent nothing is
// still cut when its time is up.
type patientReader struct {
	conn  net.Conn
	rearm func() time.Duration
}

func (r patientReader) Read(p []byte) (int, error) {
	for {
		n, err := r.conn.Read(p)
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		timeout := r.rearm()
		if timeout <= 0 || !sockqueue.Pending(r.conn) {
			return n, err
		}
		if err := r.conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			return 0, err
		}
	}
}

// armReadDeadline sets the read deadline before each frame, or clears a
// deadline set earlier. Without timeouts it costs nothing.
func (s *session) armReadDeadline() error {
	timeout := s.readTimeout()
	if timeout == 0 {
		if !s.deadlineArmed {
			return nil
		}
		s.deadlineArmed = false
		return s.conn.SetReadDeadline(time.Time{})
	}
	s.deadlineArmed = true
	return s.conn.SetReadDeadline(time.Now().Add(timeout))
}

// write sends b with one Write call under the write deadline.
func (s *session) write(b []byte) error {
	if s.cfg.WriteTimeout > 0 {
		if err := s.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)); err != nil {
			return fmt.Errorf("%w: set deadline: %w", errWrite, err)
		}
	}
	if _, err := s.conn.Write(b); err != nil {
		return fmt.Errorf("%w: %w", errWrite, err)
	}
	return nil
}

// writeCommand sends a small command (PONG) at once: a command frame with
// NULL, a sealed MESSAGE with the COMMAND flag with CURVE. It does not use
// outBuf, which may hold a reply being built.
func (s *session) writeCommand(name string, data []byte) error {
	var buf [2 + 1 + len(wire.CmdPong) + wire.MaxPingContext + 9 + curve.MessageOverhead]byte
	if s.sec == nil {
		return s.write(wire.AppendCommand(buf[:0], name, data))
	}
	var plain [1 + len(wire.CmdPong) + wire.MaxPingContext]byte
	body := append(append(append(plain[:0], byte(len(name))), name...), data...)
	out := wire.AppendHeader(buf[:0], 0, len(body)+curve.MessageOverhead)
	out, err := s.sec.Seal(out, curve.FlagCommand, body)
	if err != nil {
		return err
	}
	return s.write(out)
}

// sendError sends an ERROR command on a best-effort basis before we close.
func (s *session) sendError(reason string) {
	if s.sec == nil {
		_ = s.write(wire.AppendErrorCommand(nil, reason))
		return
	}
	// After a CURVE handshake, commands travel sealed like messages.
	body := wire.AppendCommandBody(nil, wire.CmdError, wire.ErrorData(reason))
	out, err := s.sec.Seal(wire.AppendHeader(nil, 0, len(body)+curve.MessageOverhead), curve.FlagCommand, body)
	if err == nil {
		_ = s.write(out)
	}
}

// interruptRead wakes a goroutine blocked reading this connection so that it
// can notice the server is draining. Closing only the read side lets an
// in-flight reply still be written. It is safe to call from any goroutine.
func (s *session) interruptRead() {
	if cr, ok := s.conn.(interface{ CloseRead() error }); ok {
		if cr.CloseRead() == nil {
			return
		}
	}
	// Not a TCP connection (Listen only produces TCP ones) or CloseRead
	// failed: a past deadline also wakes the reader. A session with a read
	// timeout may re-arm its deadline before the next frame of a message in
	// progress, but it never starts a new message once draining is set.
	_ = s.conn.SetReadDeadline(time.Unix(1, 0))
}
