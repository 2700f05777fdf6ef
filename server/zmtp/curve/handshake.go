package curve

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"
	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/salsa20/salsa"
)

// Sentinel errors; the errors returned wrap one of them with context.
var (
	// ErrNotAllowed: the client proved its long-term key, but the server's
	// allow function refused it.
	ErrNotAllowed = errors.New("curve: client key not allowed")
	// ErrMalformed: a command of the wrong name, size, version or state.
	ErrMalformed = errors.New("curve: malformed command")
	// ErrAuthentication: a box did not open, or what it held did not match
	// (cookie, vouch): a wrong key on either side, or a forgery.
	ErrAuthentication = errors.New("curve: authentication failed")
	// ErrNonce: a short nonce that does not increase, or a sender's nonce
	// counter that is exhausted.
	ErrNonce = errors.New("curve: nonce out of sequence")
)

// Sizes of the commands (whole bodies, name included).
const (
	HelloSize       = 200
	WelcomeSize     = 168
	InitiateMinSize = 257
	ReadyMinSize    = 30
	// MessageOverhead is what a MESSAGE body adds to its payload: name (8),
	// short nonce (8), flags byte (1) and the box's authenticator (16).
	MessageOverhead = 33
	// MaxMetadataSize bounds the ZMTP metadata in INITIATE and READY (real
	// ones are well under 1 KiB); INITIATE and READY are therefore at most
	// InitiateMinSize+MaxMetadataSize and ReadyMinSize+MaxMetadataSize.
	MaxMetadataSize = 32 << 10
)

// Flags inside a MESSAGE box (libzmq's msg_t::more and msg_t::command).
const (
	FlagMore    byte = 0x01
	FlagCommand byte = 0x02
)

// Command names with their length byte, as they start the bodies.
const (
	nameHello    = "\x05HELLO"
	nameWelcome  = "\x07WELCOME"
	nameInitiate = "\x08INITIATE"
	nameReady    = "\x05READY"
	nameMessage  = "\x07MESSAGE"
)

// Nonce prefixes (RFC 26).
const (
	prefixHello    = "CurveZMQHELLO---"
	prefixWelcome  = "WELCOME-"
	prefixCookie   = "COOKIE--"
	prefixInitiate = "CurveZMQINITIATE"
	prefixVouch    = "VOUCH---"
	prefixReady    = "CurveZMQREADY---"
	prefixMessageC = "CurveZMQMESSAGEC"
	prefixMessageS = "CurveZMQMESSAGES"
)

// Offsets inside the commands.
const (
	helloVersion  = 6                       // 2 bytes: 1, 0
	helloClient   = 80                      // C' after 72 bytes of padding
	helloNonce    = 112                     // short nonce
	helloBox      = 120                     // 80 bytes
	welcomeNonce  = 8                       // 16 bytes
	welcomeBox    = 24                      // 144 bytes
	cookieSize    = 96                      // nonce 16 + secretbox 80
	initCookie    = 9                       // cookie nonce 16 + secretbox 80
	initNonce     = initCookie + cookieSize // 105
	initBox       = initNonce + 8           // 113
	vouchSize     = 96                      // nonce 16 + box 80
	readyNonce    = 6
	readyBox      = 14
	messageNonce  = 8
	messageBox    = 16
	longNonceSize = 16
)

// handshake states, shared by Client and Server.
const (
	stateStart = iota
	stateSentHello
	stateSentInitiate
	stateSentWelcome
	stateDone
)

// shortNonce builds a 24-byte nonce from a 16-byte prefix and a counter.
func shortNonce(prefix string, n uint64) (nonce [24]byte) {
	copy(nonce[:16], prefix)
	binary.BigEndian.PutUint64(nonce[16:], n)
	return nonce
}

// longNonce builds a 24-byte nonce from an 8-byte prefix and 16 bytes.
func longNonce(prefix string, tail []byte) (nonce [24]byte) {
	copy(nonce[:8], prefix)
	copy(nonce[8:], tail)
	return nonce
}

func randomLongNonce(r io.Reader, prefix string) ([24]byte, error) {
	var tail [longNonceSize]byte
	if _, err := io.ReadFull(r, tail[:]); err != nil {
		return [24]byte{}, fmt.Errorf("curve: random nonce: %w", err)
	}
	return longNonce(prefix, tail[:]), nil
}

// precompute is box.Precompute of a peer's public key that refuses a
// low-order point: X25519 with one is all zeros whatever the secret key,
// so a box "between" it and us has a key anyone can compute, and a HELLO,
// or a vouch for a long-term key, made with it proves nothing. libsodium,
// which libzmq's CURVE uses, refuses them the same way (crypto_box_beforenm
// fails on an all-zero shared secret). It costs what box.Precompute does.
func precompute(shared *[32]byte, peer *PublicKey, secret *SecretKey, what string) error {
	dh, err := curve25519.X25519(secret[:], peer[:])
	if err != nil {
		return fmt.Errorf("%w: %s is a low-order point", ErrAuthentication, what)
	}
	var k [32]byte
	copy(k[:], dh)
	wipe(dh)
	var zeros [16]byte
	salsa.HSalsa20(shared, &zeros, &k, &salsa.Sigma)
	wipe(k[:])
	return nil
}

func wipe(b []byte) {
	for i := range b {
		b[i] = 0
	}
}

// Client is the client side of one connection's handshake.
type Client struct {
	rand     io.Reader
	server   PublicKey // S
	public   PublicKey // C
	secret   SecretKey // c
	shortPub PublicKey // C'
	shortSec SecretKey // c'
	shared   [32]byte  // precomputed from S' and c'
	nonce    uint64    // last short nonce sent
	state    int
}

// NewClient prepares the handshake of a client with long-term key pair
// (public, secret) to the server whose long-term public key is server. rand
// nil: crypto/rand.
func NewClient(server PublicKey, public PublicKey, secret SecretKey, r io.Reader) *Client {
	if r == nil {
		r = rand.Reader
	}
	return &Client{rand: r, server: server, public: public, secret: secret}
}

// Hello makes a fresh short-term key pair and returns the HELLO body.
func (c *Client) Hello() ([]byte, error) {
	if c.state != stateStart {
		return nil, fmt.Errorf("%w: HELLO already sent", ErrMalformed)
	}
	var err error
	if c.shortPub, c.shortSec, err = GenerateKeyPair(c.rand); err != nil {
		return nil, err
	}
	c.nonce = 1
	out := make([]byte, helloBox, HelloSize)
	copy(out, nameHello)
	out[helloVersion], out[helloVersion+1] = 1, 0
	copy(out[helloClient:], c.shortPub[:])
	binary.BigEndian.PutUint64(out[helloNonce:], c.nonce)
	var zeros [64]byte
	nonce := shortNonce(prefixHello, c.nonce)
	out = box.Seal(out, zeros[:], &nonce, (*[32]byte)(&c.server), (*[32]byte)(&c.shortSec))
	c.state = stateSentHello
	return out, nil
}

// Initiate checks the server's WELCOME and returns the INITIATE body,
// carrying metadata (ZMTP properties; at most MaxMetadataSize bytes).
func (c *Client) Initiate(welcome []byte, metadata []byte) ([]byte, error) {
	if c.state != stateSentHello {
		return nil, fmt.Errorf("%w: WELCOME out of order", ErrMalformed)
	}
	if len(metadata) > MaxMetadataSize {
		return nil, fmt.Errorf("%w: metadata of %d bytes exceeds %d", ErrMalformed, len(metadata), MaxMetadataSize)
	}
	if len(welcome) != WelcomeSize || string(welcome[:len(nameWelcome)]) != nameWelcome {
		return nil, fmt.Errorf("%w: not a WELCOME of %d bytes", ErrMalformed, WelcomeSize)
	}
	nonce := longNonce(prefixWelcome, welcome[welcomeNonce:welcomeBox])
	var welcomeKey [32]byte
	if err := precompute(&welcomeKey, &c.server, &c.shortSec, "the server key"); err != nil {
		return nil, err
	}
	plain, ok := box.OpenAfterPrecomputation(nil, welcome[welcomeBox:], &nonce, &welcomeKey)
	wipe(welcomeKey[:])
	if !ok {
		return nil, fmt.Errorf("%w: WELCOME does not open (wrong server key?)", ErrAuthentication)
	}
	var serverShort PublicKey
	copy(serverShort[:], plain[:KeySize])
	cookie := plain[KeySize : KeySize+cookieSize]

	// vouch = nonce + Box[C' + S](C->S')
	vouchNonce, err := randomLongNonce(c.rand, prefixVouch)
	if err != nil {
		return nil, err
	}
	vouchPlain := make([]byte, 0, 2*KeySize)
	vouchPlain = append(vouchPlain, c.shortPub[:]...)
	vouchPlain = append(vouchPlain, c.server[:]...)

	initPlain := make([]byte, 0, KeySize+vouchSize+len(metadata))
	initPlain = append(initPlain, c.public[:]...)
	initPlain = append(initPlain, vouchNonce[8:]...)
	var vouchKey [32]byte
	if err := precompute(&vouchKey, &serverShort, &c.secret, "the server's short-term key"); err != nil {
		return nil, err
	}
	initPlain = box.SealAfterPrecomputation(initPlain, vouchPlain, &vouchNonce, &vouchKey)
	wipe(vouchKey[:])
	initPlain = append(initPlain, metadata...)

	c.nonce++
	out := make([]byte, 0, initBox+len(initPlain)+box.Overhead)
	out = append(out, nameInitiate...)
	out = append(out, cookie...)
	out = binary.BigEndian.AppendUint64(out, c.nonce)
	nonce = shortNonce(prefixInitiate, c.nonce)
	if err := precompute(&c.shared, &serverShort, &c.shortSec, "the server's short-term key"); err != nil {
		return nil, err
	}
	out = box.SealAfterPrecomputation(out, initPlain, &nonce, &c.shared)
	wipe(c.shortSec[:])
	c.state = stateSentInitiate
	return out, nil
}

// Ready checks the server's READY and returns its metadata and the
// established session.
func (c *Client) Ready(ready []byte) (serverMetadata []byte, s *Session, err error) {
	if c.state != stateSentInitiate {
		return nil, nil, fmt.Errorf("%w: READY out of order", ErrMalformed)
	}
	if len(ready) < ReadyMinSize || len(ready) > ReadyMinSize+MaxMetadataSize || string(ready[:len(nameReady)]) != nameReady {
		return nil, nil, fmt.Errorf("%w: not a READY of %d to %d bytes", ErrMalformed, ReadyMinSize, ReadyMinSize+MaxMetadataSize)
	}
	n := binary.BigEndian.Uint64(ready[readyNonce:readyBox])
	if n == 0 {
		return nil, nil, fmt.Errorf("%w: READY nonce 0", ErrNonce)
	}
	nonce := shortNonce(prefixReady, n)
	md, ok := box.OpenAfterPrecomputation(nil, ready[readyBox:], &nonce, &c.shared)
	if !ok {
		return nil, nil, fmt.Errorf("%w: READY does not open", ErrAuthentication)
	}
	c.state = stateDone
	s = newSession(&c.shared, prefixMessageC, prefixMessageS, c.nonce, n)
	wipe(c.shared[:])
	return md, s, nil
}

// Server is the server side of one connection's handshake. Use a new Server
// for every connection: it holds that connection's short-term keys and
// cookie key.
type Server struct {
	rand        io.Reader
	allow       func(PublicKey) bool
	secret      SecretKey // s
	public      PublicKey // S
	clientShort PublicKey // C'
	shortPub    PublicKey // S'
	shortSec    SecretKey // s'
	cookieKey   [32]byte
	peerNonce   uint64 // last short nonce accepted from the client
	state       int
}

// NewServer prepares the handshake of the server with long-term secret key
// secret. allow decides on the client's long-term public key once the client
// has proved it holds it (nil: any client); it may be called from many
// connections at once. rand nil: crypto/rand.
func NewServer(secret SecretKey, allow func(PublicKey) bool, r io.Reader) *Server {
	if r == nil {
		r = rand.Reader
	}
	return &Server{rand: r, allow: allow, secret: secret, public: secret.Public()}
}

// Welcome checks the client's HELLO and returns the WELCOME body.
func (s *Server) Welcome(hello []byte) ([]byte, error) {
	if s.state != stateStart {
		return nil, fmt.Errorf("%w: HELLO out of order", ErrMalformed)
	}
	s.state = stateDone // any failure ends the handshake
	if len(hello) != HelloSize || string(hello[:len(nameHello)]) != nameHello {
		return nil, fmt.Errorf("%w: not a HELLO of %d bytes", ErrMalformed, HelloSize)
	}
	if hello[helloVersion] != 1 || hello[helloVersion+1] != 0 {
		return nil, fmt.Errorf("%w: HELLO version %d.%d, want 1.0", ErrMalformed, hello[helloVersion], hello[helloVersion+1])
	}
	copy(s.clientShort[:], hello[helloClient:helloNonce])
	n := binary.BigEndian.Uint64(hello[helloNonce:helloBox])
	nonce := shortNonce(prefixHello, n)
	var helloKey [32]byte // C' and s: HELLO and WELCOME
	if err := precompute(&helloKey, &s.clientShort, &s.secret, "the client's short-term key in HELLO"); err != nil {
		return nil, err
	}
	defer wipe(helloKey[:])
	var sig [64]byte
	plain, ok := box.OpenAfterPrecomputation(sig[:0], hello[helloBox:], &nonce, &helloKey)
	if !ok {
		return nil, fmt.Errorf("%w: HELLO does not open (the client has a wrong server key?)", ErrAuthentication)
	}
	var zeros [64]byte
	if subtle.ConstantTimeCompare(plain, zeros[:]) != 1 {
		return nil, fmt.Errorf("%w: HELLO signature is not 64 zero bytes", ErrAuthentication)
	}
	s.peerNonce = n

	var err error
	if s.shortPub, s.shortSec, err = GenerateKeyPair(s.rand); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(s.rand, s.cookieKey[:]); err != nil {
		return nil, fmt.Errorf("curve: cookie key: %w", err)
	}
	cookieNonce, err := randomLongNonce(s.rand, prefixCookie)
	if err != nil {
		return nil, err
	}
	wNonce, err := randomLongNonce(s.rand, prefixWelcome)
	if err != nil {
		return nil, err
	}

	// cookie = nonce + SecretBox[C' + s'](K)
	var keys [2 * KeySize]byte
	copy(keys[:], s.clientShort[:])
	copy(keys[KeySize:], s.shortSec[:])
	var plainWelcome [KeySize + cookieSize]byte
	copy(plainWelcome[:], s.shortPub[:])
	copy(plainWelcome[KeySize:], cookieNonce[8:])
	secretbox.Seal(plainWelcome[KeySize+longNonceSize:KeySize+longNonceSize], keys[:], &cookieNonce, &s.cookieKey)
	wipe(keys[:])

	out := make([]byte, welcomeBox, WelcomeSize)
	copy(out, nameWelcome)
	copy(out[welcomeNonce:], wNonce[8:])
	out = box.SealAfterPrecomputation(out, plainWelcome[:], &wNonce, &helloKey)
	s.state = stateSentWelcome
	return out, nil
}

// Ready checks the client's INITIATE (cookie, vouch, allowlist) and returns
// the READY body carrying metadata (ZMTP properties, at most
// MaxMetadataSize bytes), the client's long-term key, its metadata and the
// established session. On ErrNotAllowed, client is the refused key.
func (s *Server) Ready(initiate []byte, metadata []byte) (ready []byte, client PublicKey, clientMetadata []byte, sess *Session, err error) {
	if s.state != stateSentWelcome {
		return nil, client, nil, nil, fmt.Errorf("%w: INITIATE out of order", ErrMalformed)
	}
	s.state = stateDone // any failure ends the handshake
	defer wipe(s.cookieKey[:])
	defer wipe(s.shortSec[:])
	if len(metadata) > MaxMetadataSize {
		return nil, client, nil, nil, fmt.Errorf("%w: metadata of %d bytes exceeds %d", ErrMalformed, len(metadata), MaxMetadataSize)
	}
	if len(initiate) < InitiateMinSize || len(initiate) > InitiateMinSize+MaxMetadataSize ||
		string(initiate[:len(nameInitiate)]) != nameInitiate {
		return nil, client, nil, nil, fmt.Errorf("%w: not an INITIATE of %d to %d bytes", ErrMalformed, InitiateMinSize, InitiateMinSize+MaxMetadataSize)
	}

	if err := s.checkCookie(initiate[initCookie:initNonce]); err != nil {
		return nil, client, nil, nil, err
	}

	n := binary.BigEndian.Uint64(initiate[initNonce:initBox])
	if n <= s.peerNonce {
		return nil, client, nil, nil, fmt.Errorf("%w: INITIATE nonce %d after HELLO nonce %d", ErrNonce, n, s.peerNonce)
	}
	nonce := shortNonce(prefixInitiate, n)
	var shared [32]byte
	if err := precompute(&shared, &s.clientShort, &s.shortSec, "the client's short-term key"); err != nil {
		return nil, client, nil, nil, err
	}
	defer wipe(shared[:])
	plain, ok := box.OpenAfterPrecomputation(nil, initiate[initBox:], &nonce, &shared)
	if !ok {
		return nil, client, nil, nil, fmt.Errorf("%w: INITIATE does not open", ErrAuthentication)
	}
	s.peerNonce = n
	copy(client[:], plain[:KeySize])

	if err := s.checkVouch(client, plain[KeySize:KeySize+vouchSize]); err != nil {
		return nil, client, nil, nil, err
	}
	if s.allow != nil && !s.allow(client) {
		return nil, client, nil, nil, fmt.Errorf("%w: %s", ErrNotAllowed, client)
	}
	clientMetadata = plain[KeySize+vouchSize:]

	const readyNonceValue = 1
	rnonce := shortNonce(prefixReady, readyNonceValue)
	ready = make([]byte, readyBox, readyBox+len(metadata)+box.Overhead)
	copy(ready, nameReady)
	binary.BigEndian.PutUint64(ready[readyNonce:], readyNonceValue)
	ready = box.SealAfterPrecomputation(ready, metadata, &rnonce, &shared)
	return ready, client, clientMetadata, newSession(&shared, prefixMessageS, prefixMessageC, readyNonceValue, n), nil
}

// checkCookie checks INITIATE's cookie (nonce + SecretBox[C' + s'](K)): it
// must open with this connection's cookie key and hold this client's C'
// and our s'.
func (s *Server) checkCookie(cookie []byte) error {
	cookieNonce := longNonce(prefixCookie, cookie[:longNonceSize])
	var keysBuf [2 * KeySize]byte
	keys, ok := secretbox.Open(keysBuf[:0], cookie[longNonceSize:], &cookieNonce, &s.cookieKey)
	defer wipe(keysBuf[:])
	if !ok {
		return fmt.Errorf("%w: INITIATE cookie does not open", ErrAuthentication)
	}
	if subtle.ConstantTimeCompare(keys[:KeySize], s.clientShort[:])&subtle.ConstantTimeCompare(keys[KeySize:], s.shortSec[:]) != 1 {
		return fmt.Errorf("%w: INITIATE cookie is not this connection's", ErrAuthentication)
	}
	return nil
}

// checkVouch checks INITIATE's vouch (nonce + Box[C' + S](C->S')): the
// holder of the client's long-term key c vouches for C' and for talking
// to us.
func (s *Server) checkVouch(client PublicKey, voucher []byte) error {
	vouchNonce := longNonce(prefixVouch, voucher[:longNonceSize])
	var vouchKey [32]byte
	if err := precompute(&vouchKey, &client, &s.shortSec, "the client's long-term key in INITIATE"); err != nil {
		return err
	}
	var vouchBuf [2 * KeySize]byte
	vouch, ok := box.OpenAfterPrecomputation(vouchBuf[:0], voucher[longNonceSize:], &vouchNonce, &vouchKey)
	wipe(vouchKey[:])
	if !ok {
		return fmt.Errorf("%w: INITIATE vouch does not open", ErrAuthentication)
	}
	if subtle.ConstantTimeCompare(vouch[:KeySize], s.clientShort[:])&subtle.ConstantTimeCompare(vouch[KeySize:], s.public[:]) != 1 {
		return fmt.Errorf("%w: INITIATE vouch is not for this connection and server", ErrAuthentication)
	}
	return nil
}
