package curve

import (
	"encoding/binary"
	"fmt"
	"math"

	"ramanserve/server/zmtp/curve/internal/secretbox"
)

// retainScratch: Seal's plaintext scratch is dropped after a message larger
// than this, so one large reply does not pin memory for a connection's life.
const retainScratch = 16 << 10

// Session encrypts and decrypts the MESSAGE commands of one established
// connection with the precomputed shared key of the short-term keys. Short
// nonces never repeat: the send counter only increases (and the session
// refuses to send once it is exhausted), and Open refuses a nonce that is not
// greater than the last one it accepted. Not safe for concurrent use.
type Session struct {
	key        [32]byte
	sendPrefix string
	recvPrefix string
	sendNonce  uint64 // last short nonce sent
	peerNonce  uint64 // last short nonce accepted
	scratch    []byte // flags + payload before sealing
}

func newSession(key *[32]byte, sendPrefix, recvPrefix string, sent, received uint64) *Session {
	return &Session{key: *key, sendPrefix: sendPrefix, recvPrefix: recvPrefix, sendNonce: sent, peerNonce: received}
}

// Seal appends the MESSAGE command body carrying flags (FlagMore,
// FlagCommand) and payload to dst; it is len(payload)+MessageOverhead long.
// It copies flags and payload into a scratch buffer kept by the session (up
// to 16 KiB); SealPlain avoids the copy when the caller has a byte free in
// front of the payload.
func (s *Session) Seal(dst []byte, flags byte, payload []byte) ([]byte, error) {
	s.scratch = append(append(s.scratch[:0], flags), payload...)
	dst, err := s.SealPlain(dst, s.scratch)
	if cap(s.scratch) > retainScratch {
		s.scratch = nil
	} else {
		wipe(s.scratch)
	}
	return dst, err
}

// SealPlain is Seal of the box's plaintext as it is laid out inside the
// box: plain[0] is the flags byte, plain[1:] the payload. It copies nothing.
func (s *Session) SealPlain(dst []byte, plain []byte) ([]byte, error) {
	if len(plain) == 0 || plain[0]&^(FlagMore|FlagCommand) != 0 {
		return dst, fmt.Errorf("%w: no flags byte, or reserved flags set", ErrMalformed)
	}
	if s.sendNonce == math.MaxUint64 {
		return dst, fmt.Errorf("%w: send nonce exhausted", ErrNonce)
	}
	s.sendNonce++
	nonce := shortNonce(s.sendPrefix, s.sendNonce)
	dst = append(dst, nameMessage...)
	dst = binary.BigEndian.AppendUint64(dst, s.sendNonce)
	return secretbox.Seal(dst, plain, &nonce, &s.key), nil
}

// Open checks and decrypts a whole MESSAGE command body and appends its
// payload to dst: payload is dst extended by len(body)-MessageOverhead bytes
// (Open needs one byte of room beyond that, for the flags byte it strips;
// with that capacity it allocates nothing). A body that fails, whatever
// the reason, leaves the session's nonce where it was.
func (s *Session) Open(dst []byte, body []byte) (flags byte, payload []byte, err error) {
	start := len(dst)
	out, err := s.OpenPlain(dst, body)
	if err != nil {
		return 0, dst, err
	}
	flags = out[start]
	copy(out[start:], out[start+1:])
	return flags, out[:len(out)-1], nil
}

// OpenPlain is Open without stripping the flags byte: it appends the box's
// plaintext, the flags byte then the payload (len(body)-MessageOverhead+1
// bytes), to dst, and moves nothing.
func (s *Session) OpenPlain(dst []byte, body []byte) ([]byte, error) {
	if len(body) < MessageOverhead || string(body[:len(nameMessage)]) != nameMessage {
		return dst, fmt.Errorf("%w: not a MESSAGE of at least %d bytes", ErrMalformed, MessageOverhead)
	}
	n := binary.BigEndian.Uint64(body[messageNonce:messageBox])
	if n <= s.peerNonce {
		return dst, fmt.Errorf("%w: MESSAGE nonce %d after %d", ErrNonce, n, s.peerNonce)
	}
	nonce := shortNonce(s.recvPrefix, n)
	start := len(dst)
	out, ok := secretbox.Open(dst, body[messageBox:], &nonce, &s.key)
	if !ok {
		return dst, fmt.Errorf("%w: MESSAGE does not open", ErrAuthentication)
	}
	if flags := out[start]; flags&^(FlagMore|FlagCommand) != 0 {
		return dst, fmt.Errorf("%w: MESSAGE flags %#x", ErrMalformed, flags)
	}
	s.peerNonce = n
	return out, nil
}
