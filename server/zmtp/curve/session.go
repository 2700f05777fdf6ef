package curve

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"ramanserve/server/zmtp/curve/internal/secretbox"
)

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
}

func newSession(key *[32]byte, sendPrefix, recvPrefix string, sent, received uint64) *Session {
	return &Session{key: *key, sendPrefix: sendPrefix, recvPrefix: recvPrefix, sendNonce: sent, peerNonce: received}
}

// Seal appends the MESSAGE command body carrying flags (FlagMore,
// FlagCommand) and payload to dst; it is len(payload)+MessageOverhead long.
// The flags byte and the payload are laid out where their box goes, in
// dst, and sealed there: one copy of the payload, no buffer of the
// session's.
func (s *Session) Seal(dst []byte, flags byte, payload []byte) ([]byte, error) {
	if flags&^(FlagMore|FlagCommand) != 0 {
		return dst, fmt.Errorf("%w: reserved flags set", ErrMalformed)
	}
	nonce, dst, err := s.appendHead(dst)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, secretbox.Overhead+1+len(payload))[:start+secretbox.Overhead]
	dst = append(append(dst, flags), payload...)
	secretbox.SealInPlace(dst[start:], &nonce, &s.key)
	return dst, nil
}

// SealPlain is Seal of the box's plaintext as it is laid out inside the
// box: plain[0] is the flags byte, plain[1:] the payload. It suits a
// caller that holds the payload behind a free byte, apart from dst.
func (s *Session) SealPlain(dst []byte, plain []byte) ([]byte, error) {
	if len(plain) == 0 || plain[0]&^(FlagMore|FlagCommand) != 0 {
		return dst, fmt.Errorf("%w: no flags byte, or reserved flags set", ErrMalformed)
	}
	nonce, dst, err := s.appendHead(dst)
	if err != nil {
		return dst, err
	}
	return secretbox.Seal(dst, plain, &nonce, &s.key), nil
}

// appendHead takes the next short nonce and appends the MESSAGE name and
// the nonce to dst.
func (s *Session) appendHead(dst []byte) (nonce [24]byte, out []byte, err error) {
	if s.sendNonce == math.MaxUint64 {
		return nonce, dst, fmt.Errorf("%w: send nonce exhausted", ErrNonce)
	}
	s.sendNonce++
	nonce = shortNonce(s.sendPrefix, s.sendNonce)
	dst = append(dst, nameMessage...)
	return nonce, binary.BigEndian.AppendUint64(dst, s.sendNonce), nil
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
