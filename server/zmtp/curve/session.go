package curve

import (
	"encoding/binary"
	"fmt"
	"math"

	"golang.org/x/crypto/nacl/box"
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
func (s *Session) Seal(dst []byte, flags byte, payload []byte) ([]byte, error) {
	if flags&^(FlagMore|FlagCommand) != 0 {
		return dst, fmt.Errorf("%w: flags %#x", ErrMalformed, flags)
	}
	if s.sendNonce == math.MaxUint64 {
		return dst, fmt.Errorf("%w: send nonce exhausted", ErrNonce)
	}
	s.sendNonce++
	nonce := shortNonce(s.sendPrefix, s.sendNonce)
	dst = append(dst, nameMessage...)
	dst = binary.BigEndian.AppendUint64(dst, s.sendNonce)
	s.scratch = append(append(s.scratch[:0], flags), payload...)
	dst = box.SealAfterPrecomputation(dst, s.scratch, &nonce, &s.key)
	if cap(s.scratch) > retainScratch {
		s.scratch = nil
	} else {
		wipe(s.scratch)
	}
	return dst, nil
}

// Open checks and decrypts a whole MESSAGE command body and appends its
// payload to dst: payload is dst extended by len(body)-MessageOverhead bytes
// (Open needs one byte of room beyond that, for the flags byte it strips;
// with that capacity it allocates nothing). A body that fails, whatever
// the reason, leaves the session's nonce where it was.
func (s *Session) Open(dst []byte, body []byte) (flags byte, payload []byte, err error) {
	if len(body) < MessageOverhead || string(body[:len(nameMessage)]) != nameMessage {
		return 0, dst, fmt.Errorf("%w: not a MESSAGE of at least %d bytes", ErrMalformed, MessageOverhead)
	}
	n := binary.BigEndian.Uint64(body[messageNonce:messageBox])
	if n <= s.peerNonce {
		return 0, dst, fmt.Errorf("%w: MESSAGE nonce %d after %d", ErrNonce, n, s.peerNonce)
	}
	nonce := shortNonce(s.recvPrefix, n)
	start := len(dst)
	out, ok := box.OpenAfterPrecomputation(dst, body[messageBox:], &nonce, &s.key)
	if !ok {
		return 0, dst, fmt.Errorf("%w: MESSAGE does not open", ErrAuthentication)
	}
	flags = out[start]
	if flags&^(FlagMore|FlagCommand) != 0 {
		return 0, dst, fmt.Errorf("%w: MESSAGE flags %#x", ErrMalformed, flags)
	}
	s.peerNonce = n
	copy(out[start:], out[start+1:])
	return flags, out[:len(out)-1], nil
}
