package zmtp

import (
	"errors"
	"fmt"
	"io"
	"time"

	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// This file is the CURVE side of a connection (RFC 26): the handshake after
// the greeting, and reading and writing MESSAGE commands once it is done.
// The NULL path never enters it.

// CURVE handshake command names.
const (
	cmdHello    = "HELLO"
	cmdInitiate = "INITIATE"
)

// errSealedMore: with CURVE, multipart structure lives inside the MESSAGE
// boxes; a frame with MORE on the wire is not something libzmq sends.
var errSealedMore = errors.New("zmtp: CURVE frame with MORE set on the wire")

// errHelloLimited: a HELLO beyond its source address's rate (hellolimit.go).
var errHelloLimited = errors.New("zmtp: CURVE HELLO beyond its source address's rate")

// notAllowedReason is the ERROR reason for a client whose key the allowlist
// refuses: the ZAP status code libzmq itself sends when its authenticator
// denies a client, which libzmq's monitor reports as
// ZMQ_EVENT_HANDSHAKE_FAILED_AUTH with status 400.
const notAllowedReason = "400"

// curveHandshake runs HELLO/WELCOME/INITIATE/READY after the greeting. Every
// command is bounded by MaxCommandSize and the whole by the handshake
// deadline set by handshake.
func (s *session) curveHandshake() error {
	hs := curve.NewServer(s.cfg.Curve.Secret, s.cfg.Curve.Allow, nil)
	defer s.dropCommandBuffer()

	hello, err := s.readHandshakeCommand(cmdHello)
	if err != nil {
		return err
	}
	if s.srv != nil && s.srv.hellos != nil && !s.srv.hellos.allow(s.conn.RemoteAddr(), time.Now()) {
		s.stats().curveHellosLimited.Add(1)
		s.sendError(helloTemporaryFailure)
		return errHelloLimited
	}
	welcome, err := hs.Welcome(hello)
	if err != nil {
		s.sendError(curveErrorReason(err))
		return fmt.Errorf("zmtp: CURVE HELLO: %w", err)
	}
	if err := s.write(appendSealedCommand(s.outBuf[:0], welcome)); err != nil {
		return fmt.Errorf("zmtp: write WELCOME: %w", err)
	}

	initiate, err := s.readHandshakeCommand(cmdInitiate)
	if err != nil {
		return err
	}
	ready, client, metadata, sess, err := hs.Ready(initiate, ourMetadata)
	if err != nil {
		s.sendError(curveErrorReason(err))
		if errors.Is(err, curve.ErrNotAllowed) {
			s.stats().curveNotAllowed.Add(1)
		}
		return fmt.Errorf("zmtp: CURVE INITIATE: %w", err)
	}
	if err := s.checkPeerMetadata(metadata); err != nil {
		return err
	}
	if err := s.write(appendSealedCommand(s.outBuf[:0], ready)); err != nil {
		return fmt.Errorf("zmtp: write READY: %w", err)
	}
	s.sec, s.client = sess, client
	return nil
}

// curveErrorReason is the ERROR reason for a failed handshake step. It says
// no more than the failure itself shows the peer.
func curveErrorReason(err error) string {
	switch {
	case errors.Is(err, curve.ErrNotAllowed):
		return notAllowedReason
	case errors.Is(err, curve.ErrAuthentication):
		return "CURVE authentication failed"
	default:
		return "malformed CURVE handshake"
	}
}

// appendSealedCommand frames a whole command body (name included) produced
// by package curve as a command frame.
func appendSealedCommand(dst []byte, body []byte) []byte {
	dst = wire.AppendHeader(dst, wire.FlagCommand, len(body))
	return append(dst, body...)
}

// readHandshakeCommand reads one handshake command frame and returns its
// whole body (name included; it aliases cmdBuf). An ERROR from the peer
// ends the handshake; any other name than want gets an ERROR back.
func (s *session) readHandshakeCommand(want string) ([]byte, error) {
	flags, size, err := s.readFrameHeader()
	if err != nil {
		return nil, fmt.Errorf("zmtp: read %s: %w", want, err)
	}
	if flags&wire.FlagCommand == 0 || flags&wire.FlagMore != 0 {
		s.sendError("expected " + want)
		return nil, fmt.Errorf("zmtp: frame with flags %#x instead of %s: %w", flags, want, errExpectedReady)
	}
	body, err := s.readCommandBody(size)
	if err != nil {
		if errors.Is(err, errCommandTooLarge) {
			s.sendError(want + " too large")
		}
		return nil, err
	}
	name, _, err := wire.ParseCommand(body)
	if err != nil {
		s.sendError("malformed command")
		return nil, err
	}
	switch name {
	case want:
		return body, nil
	case wire.CmdError:
		return nil, fmt.Errorf("zmtp: during the CURVE handshake: %w", errPeerError)
	default:
		s.sendError("expected " + want)
		return nil, fmt.Errorf("zmtp: got %q instead of %s: %w", name, want, errExpectedReady)
	}
}

// readSealedMessage is readMessage for CURVE: every frame is a MESSAGE
// whose box holds the flags (MORE, COMMAND) and the payload. Each frame's
// ciphertext is read whole into encBuf (it cannot be authenticated before
// it is whole), under the same accounting as message buffers, and opened
// into msgBuf, where each frame's payload stays behind its flags byte
// (nothing is moved; writeSealedReply reuses that byte to seal an envelope
// frame in place); commands (PING) are answered and dropped from msgBuf.
//
// Since MORE is inside the box, a frame must be opened to find the end of
// its message: a frame whose payload alone exceeds MaxMessageSize, or one
// the shared pool cannot hold, gets an ERROR and the connection is closed.
// A message whose frames together exceed MaxMessageSize (or
// MaxFramesPerMessage) is still opened frame by frame, its payload
// dropped, and answered with ErrMessageTooLarge, as with NULL.
func (s *session) readSealedMessage() (envLen int, refused error, err error) {
	var tally messageTally
	for {
		wireFlags, size, err := s.nextFrameHeader()
		if err != nil {
			return 0, nil, err
		}
		if wireFlags&wire.FlagMore != 0 {
			return 0, nil, errSealedMore
		}
		if size < curve.MessageOverhead {
			return 0, nil, fmt.Errorf("zmtp: CURVE frame of %d bytes: %w", size, curve.ErrMalformed)
		}
		// Check sizes before touching memory (the frame is read whole to
		// be opened, and only then counted); size may be up to 2^64-1.
		plain := size - curve.MessageOverhead
		if plain > uint64(s.cfg.MaxMessageSize) || plain > uint64(s.cfg.DiscardLimit-tally.total) {
			s.sendError("message too large")
			return 0, nil, fmt.Errorf("zmtp: CURVE frame of %d bytes after %d: %w", size, tally.total, errBeyondDiscard)
		}
		if err := s.readCipherBody(int(size)); err != nil {
			return 0, nil, err
		}
		start := len(s.msgBuf)
		for cap(s.msgBuf) < start+1+int(plain) { // the flags byte, then the payload
			if err := s.growMsgBuf(start + 1 + int(plain)); err != nil {
				s.stats().partialBytesRefused.Add(1)
				s.sendError("server busy")
				return 0, nil, err
			}
		}
		if s.msgBuf, err = s.sec.OpenPlain(s.msgBuf, s.encBuf); err != nil {
			return 0, nil, fmt.Errorf("zmtp: %w", err)
		}
		flags := s.msgBuf[start]

		if flags&curve.FlagCommand != 0 {
			if flags&curve.FlagMore != 0 {
				return 0, nil, errCommandMore
			}
			err := s.processCommand(s.msgBuf[start+1:])
			s.msgBuf = s.msgBuf[:start]
			if err != nil {
				return 0, nil, err
			}
			if tally.frames == 0 {
				// Between messages: give back what the command drew from
				// the pool (a sealed command may be as large as a message),
				// as NULL drops its command buffer; an idle peer must not
				// hold it, FrameTimeout no longer reaching it.
				s.releaseBuffers()
				if err := s.moveTo(phaseIdle, s.served()); err != nil {
					return 0, nil, err
				}
			}
			continue
		}

		if !tally.count(plain, &s.cfg) {
			s.sendError("message too large")
			return 0, nil, tally.beyondDiscard(plain)
		}
		if tally.refused == nil {
			tally.kept(plain)
			s.frameEnds = append(s.frameEnds, len(s.msgBuf))
		} else {
			s.msgBuf = s.msgBuf[:start]
			tally.dropped(plain)
		}
		if flags&curve.FlagMore == 0 {
			break
		}
	}
	envLen, err = s.indexFrames(tally.delimiterDiscarded, 1)
	return envLen, tally.refused, err
}

// readCipherBody reads the next n bytes (one frame's ciphertext) into
// encBuf, growing it as bytes arrive like readFrameBody; capacity beyond
// ownBufferSize is reserved from the shared pool first. When the pool cannot
// spare it, the peer gets an ERROR: the frame cannot be opened, so the end
// of its message cannot be found.
func (s *session) readCipherBody(n int) error {
	s.encBuf = s.encBuf[:0]
	for len(s.encBuf) < n {
		if len(s.encBuf) == cap(s.encBuf) {
			newCap := min(n, max(2*cap(s.encBuf), minGrowStep))
			if need := int64(max(newCap-ownBufferSize, 0)) - s.encReserved; need > 0 {
				if !s.shared.reserve(need) {
					s.stats().partialBytesRefused.Add(1)
					s.sendError("server busy")
					return fmt.Errorf("zmtp: CURVE frame of %d bytes: %w", n, ErrPartialBytesExhausted)
				}
				s.encReserved += need
			}
			grown := make([]byte, len(s.encBuf), newCap)
			copy(grown, s.encBuf)
			s.encBuf = grown
		}
		m, err := s.br.Read(s.encBuf[len(s.encBuf):min(cap(s.encBuf), n)])
		s.encBuf = s.encBuf[:len(s.encBuf)+m]
		if err != nil && len(s.encBuf) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("zmtp: read CURVE frame: %w", err)
		}
	}
	return nil
}

// releaseCipherBuffer gives back encBuf's reservation, and encBuf itself
// when it grew beyond the connection's own allowance.
func (s *session) releaseCipherBuffer() {
	if cap(s.encBuf) > ownBufferSize {
		s.encBuf = nil
	} else {
		s.encBuf = s.encBuf[:0]
	}
	s.shared.release(s.encReserved)
	s.encReserved = 0
}

// writeSealedReply seals the envelope frames (MORE) and the reply frame
// into encBuf, whose capacity already covers the largest frame received, and
// writes them; usually in one Write, frame by frame when they do not fit
// together. envelope is the message's first frames (s.frames[:envLen]):
// they are sealed in place from msgBuf, where the byte in front of each is
// free (it held the frame's flags), so a large envelope is never copied;
// the reply, from the handler, is small.
func (s *session) writeSealedReply(envelope [][]byte, reply []byte) error {
	out := s.encBuf[:0]
	var err error
	start := 0
	for i := range envelope {
		plain := s.msgBuf[start:s.frameEnds[i]] // flags byte, then the frame
		plain[0] = curve.FlagMore
		if out, err = s.appendSealedFrame(out, plain); err != nil {
			return err
		}
		start = s.frameEnds[i]
	}
	if out, err = s.flushFor(out, len(reply)+1); err != nil {
		return err
	}
	out = wire.AppendHeader(out, 0, len(reply)+curve.MessageOverhead)
	if out, err = s.sec.Seal(out, 0, reply); err != nil {
		return err
	}
	s.encBuf = out[:0]
	return s.write(out)
}

// appendSealedFrame appends one MESSAGE frame holding plain (flags byte,
// payload) to out.
func (s *session) appendSealedFrame(out []byte, plain []byte) ([]byte, error) {
	out, err := s.flushFor(out, len(plain))
	if err != nil {
		return out, err
	}
	out = wire.AppendHeader(out, 0, len(plain)-1+curve.MessageOverhead)
	return s.sec.SealPlain(out, plain)
}

// flushFor writes out what out holds when a frame with plain bytes of
// plaintext would not fit its capacity.
func (s *session) flushFor(out []byte, plain int) ([]byte, error) {
	if len(out) > 0 && len(out)+9+plain-1+curve.MessageOverhead > cap(out) {
		if err := s.write(out); err != nil {
			return out, err
		}
		out = out[:0]
	}
	return out, nil
}
