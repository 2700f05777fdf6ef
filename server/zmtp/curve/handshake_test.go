package curve

import (
	"bytes"
	"encoding/binary"
	"errors"
	mrand "math/rand"
	"testing"

	"golang.org/x/crypto/nacl/box"
)

// detRand is a deterministic random source for reproducible handshakes in
// tests and fuzzing (never for real keys).
func detRand(seed int64) *mrand.Rand { return mrand.New(mrand.NewSource(seed)) }

type parties struct {
	serverPub PublicKey
	serverSec SecretKey
	clientPub PublicKey
	clientSec SecretKey
}

func newParties(t testing.TB, seed int64) parties {
	t.Helper()
	var p parties
	var err error
	r := detRand(seed)
	if p.serverPub, p.serverSec, err = GenerateKeyPair(r); err != nil {
		t.Fatal(err)
	}
	if p.clientPub, p.clientSec, err = GenerateKeyPair(r); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	clientMeta = []byte("\x0bSocket-Type\x00\x00\x00\x03REQ")
	serverMeta = []byte("\x0bSocket-Type\x00\x00\x00\x03REP")
)

// handshake runs a whole handshake and returns both sessions.
func handshake(t testing.TB, p parties, allow func(PublicKey) bool) (*Session, *Session) {
	t.Helper()
	c := NewClient(p.serverPub, p.clientPub, p.clientSec, nil)
	s := NewServer(p.serverSec, allow, nil)
	hello, err := c.Hello()
	if err != nil {
		t.Fatal(err)
	}
	if len(hello) != HelloSize {
		t.Fatalf("HELLO is %d bytes", len(hello))
	}
	welcome, err := s.Welcome(hello)
	if err != nil {
		t.Fatal(err)
	}
	if len(welcome) != WelcomeSize {
		t.Fatalf("WELCOME is %d bytes", len(welcome))
	}
	initiate, err := c.Initiate(welcome, clientMeta)
	if err != nil {
		t.Fatal(err)
	}
	ready, client, md, ss, err := s.Ready(initiate, serverMeta)
	if err != nil {
		t.Fatal(err)
	}
	if client != p.clientPub || !bytes.Equal(md, clientMeta) {
		t.Fatalf("server saw client %s metadata %q", client, md)
	}
	smd, cs, err := c.Ready(ready)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(smd, serverMeta) {
		t.Fatalf("client saw metadata %q", smd)
	}
	return cs, ss
}

func TestHandshakeAndMessages(t *testing.T) {
	p := newParties(t, 1)
	cs, ss := handshake(t, p, func(k PublicKey) bool { return k == p.clientPub })

	for i, msg := range []struct {
		flags   byte
		payload []byte
	}{{FlagMore, nil}, {0, []byte("ping")}, {FlagCommand, []byte("\x04PING\x00\x00")}, {0, bytes.Repeat([]byte{7}, 40000)}} {
		body, err := cs.Seal(nil, msg.flags, msg.payload)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) != len(msg.payload)+MessageOverhead || string(body[:8]) != "\x07MESSAGE" {
			t.Fatalf("message %d: body of %d bytes", i, len(body))
		}
		flags, got, err := ss.Open([]byte("prefix"), body)
		if err != nil {
			t.Fatal(err)
		}
		if flags != msg.flags || !bytes.Equal(got, append([]byte("prefix"), msg.payload...)) {
			t.Fatalf("message %d: flags %#x payload %d bytes", i, flags, len(got))
		}
		// And back.
		reply, err := ss.Seal(nil, msg.flags, msg.payload)
		if err != nil {
			t.Fatal(err)
		}
		flags, got, err = cs.Open(nil, reply)
		if err != nil || flags != msg.flags || !bytes.Equal(got, msg.payload) {
			t.Fatalf("reply %d: %#x %d bytes %v", i, flags, len(got), err)
		}
	}
}

func TestNoncesNeverRepeatAndReplaysAreRefused(t *testing.T) {
	p := newParties(t, 2)
	cs, ss := handshake(t, p, nil)
	seen := map[uint64]bool{}
	var bodies [][]byte
	for i := 0; i < 5; i++ {
		body, err := cs.Seal(nil, 0, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		n := binary.BigEndian.Uint64(body[8:16])
		if seen[n] {
			t.Fatalf("nonce %d reused", n)
		}
		seen[n] = true
		bodies = append(bodies, body)
	}
	// Client nonces: HELLO 1, INITIATE 2, then messages from 3.
	if !seen[3] || !seen[7] {
		t.Fatalf("client message nonces %v, want 3..7", seen)
	}
	if _, _, err := ss.Open(nil, bodies[1]); err != nil {
		t.Fatal(err)
	}
	// Replay and reordering.
	for _, i := range []int{1, 0} {
		if _, _, err := ss.Open(nil, bodies[i]); !errors.Is(err, ErrNonce) {
			t.Fatalf("message %d again: %v, want ErrNonce", i, err)
		}
	}
	// A tampered message fails and does not move the nonce: the real one
	// still opens afterwards.
	bad := bytes.Clone(bodies[3])
	bad[len(bad)-1] ^= 1
	if _, _, err := ss.Open(nil, bad); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("tampered: %v", err)
	}
	forged := bytes.Clone(bodies[4])
	binary.BigEndian.PutUint64(forged[8:16], 1<<62) // a forged nonce must not advance the window
	if _, _, err := ss.Open(nil, forged); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("forged nonce: %v", err)
	}
	for _, i := range []int{3, 4} {
		if _, _, err := ss.Open(nil, bodies[i]); err != nil {
			t.Fatalf("message %d after refusals: %v", i, err)
		}
	}
	// The client's own messages do not open as the server's (direction prefix).
	if _, _, err := cs.Open(nil, bodies[2]); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("client opened its own message: %v", err)
	}
	// Exhausted counters refuse to send.
	cs.sendNonce = ^uint64(0)
	if _, err := cs.Seal(nil, 0, nil); !errors.Is(err, ErrNonce) {
		t.Fatalf("exhausted nonce: %v", err)
	}
	if _, err := ss.Seal(nil, 0x04, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("reserved flag: %v", err)
	}
}

func TestNotAllowed(t *testing.T) {
	p := newParties(t, 3)
	c := NewClient(p.serverPub, p.clientPub, p.clientSec, nil)
	s := NewServer(p.serverSec, func(PublicKey) bool { return false }, nil)
	hello, _ := c.Hello()
	welcome, err := s.Welcome(hello)
	if err != nil {
		t.Fatal(err)
	}
	initiate, err := c.Initiate(welcome, clientMeta)
	if err != nil {
		t.Fatal(err)
	}
	ready, client, _, sess, err := s.Ready(initiate, serverMeta)
	if !errors.Is(err, ErrNotAllowed) || ready != nil || sess != nil || client != p.clientPub {
		t.Fatalf("Ready = %v, %v, %v, %v", ready, client, sess, err)
	}
}

func TestWrongServerKey(t *testing.T) {
	p := newParties(t, 4)
	other := newParties(t, 5)
	c := NewClient(other.serverPub, p.clientPub, p.clientSec, nil)
	s := NewServer(p.serverSec, nil, nil)
	hello, _ := c.Hello()
	if _, err := s.Welcome(hello); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("Welcome = %v, want ErrAuthentication", err)
	}
	// The server does not accept a second HELLO on the same handshake.
	if _, err := s.Welcome(hello); !errors.Is(err, ErrMalformed) {
		t.Fatalf("second HELLO: %v", err)
	}
}

func TestEveryHandshakeByteIsAuthenticated(t *testing.T) {
	p := newParties(t, 6)
	// HELLO: every byte but the 72 padding bytes (not covered by RFC 26's
	// box, like libzmq we do not check them) and the version (checked).
	c := NewClient(p.serverPub, p.clientPub, p.clientSec, detRand(10))
	hello, _ := c.Hello()
	for i := range hello {
		if i >= 8 && i < helloClient {
			continue
		}
		bad := bytes.Clone(hello)
		bad[i] ^= 0x20
		if _, err := NewServer(p.serverSec, nil, nil).Welcome(bad); err == nil {
			t.Fatalf("HELLO with byte %d changed accepted", i)
		}
	}
	s := NewServer(p.serverSec, nil, detRand(11))
	welcome, err := s.Welcome(hello)
	if err != nil {
		t.Fatal(err)
	}
	for i := range welcome {
		bad := bytes.Clone(welcome)
		bad[i] ^= 0x20
		c2 := *c
		if _, err := c2.Initiate(bad, nil); err == nil {
			t.Fatalf("WELCOME with byte %d changed accepted", i)
		}
	}
	initiate, err := c.Initiate(welcome, clientMeta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range initiate {
		bad := bytes.Clone(initiate)
		bad[i] ^= 0x20
		s2 := *s
		if _, _, _, _, err := s2.Ready(bad, serverMeta); err == nil {
			t.Fatalf("INITIATE with byte %d changed accepted", i)
		}
	}
	ready, _, _, _, err := s.Ready(initiate, serverMeta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ready {
		bad := bytes.Clone(ready)
		bad[i] ^= 0x20
		c2 := *c
		if _, _, err := c2.Ready(bad); err == nil && i != readyNonce+7 {
			t.Fatalf("READY with byte %d changed accepted", i)
		}
	}
}

// buildInitiate is Client.Initiate with the vouch's contents under the
// test's control, to show that the server checks both halves of it.
func buildInitiate(t *testing.T, c *Client, welcome []byte, vouchShort, vouchServer PublicKey, nonce uint64) []byte {
	t.Helper()
	wn := longNonce(prefixWelcome, welcome[welcomeNonce:welcomeBox])
	plain, ok := box.Open(nil, welcome[welcomeBox:], &wn, (*[32]byte)(&c.server), (*[32]byte)(&c.shortSec))
	if !ok {
		t.Fatal("welcome does not open")
	}
	var sShort [32]byte
	copy(sShort[:], plain[:32])
	vn := longNonce(prefixVouch, make([]byte, 16))
	ip := append([]byte{}, c.public[:]...)
	ip = append(ip, vn[8:]...)
	ip = box.Seal(ip, append(append([]byte{}, vouchShort[:]...), vouchServer[:]...), &vn, &sShort, (*[32]byte)(&c.secret))
	out := append([]byte(nameInitiate), plain[32:32+cookieSize]...)
	out = binary.BigEndian.AppendUint64(out, nonce)
	in := shortNonce(prefixInitiate, nonce)
	return box.Seal(out, ip, &in, &sShort, (*[32]byte)(&c.shortSec))
}

func TestVouchAndNonceChecks(t *testing.T) {
	p := newParties(t, 7)
	other := newParties(t, 8)
	run := func(vouchShort func(*Client) PublicKey, vouchServer PublicKey, nonce uint64) error {
		c := NewClient(p.serverPub, p.clientPub, p.clientSec, nil)
		s := NewServer(p.serverSec, nil, nil)
		hello, _ := c.Hello()
		welcome, err := s.Welcome(hello)
		if err != nil {
			t.Fatal(err)
		}
		_, _, _, _, err = s.Ready(buildInitiate(t, c, welcome, vouchShort(c), vouchServer, nonce), nil)
		return err
	}
	own := func(c *Client) PublicKey { return c.shortPub }
	if err := run(own, p.serverPub, 2); err != nil {
		t.Fatalf("well-formed INITIATE refused: %v", err)
	}
	if err := run(own, other.serverPub, 2); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("vouch for another server: %v", err)
	}
	if err := run(func(*Client) PublicKey { return other.clientPub }, p.serverPub, 2); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("vouch for another C': %v", err)
	}
	if err := run(own, p.serverPub, 1); !errors.Is(err, ErrNonce) {
		t.Fatalf("INITIATE reusing HELLO's nonce: %v", err)
	}
}

func TestCookieOfAnotherConnectionIsRefused(t *testing.T) {
	p := newParties(t, 9)
	c1 := NewClient(p.serverPub, p.clientPub, p.clientSec, nil)
	s1 := NewServer(p.serverSec, nil, nil)
	c2 := NewClient(p.serverPub, p.clientPub, p.clientSec, nil)
	s2 := NewServer(p.serverSec, nil, nil)
	h1, _ := c1.Hello()
	h2, _ := c2.Hello()
	w1, _ := s1.Welcome(h1)
	if _, err := s2.Welcome(h2); err != nil {
		t.Fatal(err)
	}
	i1, err := c1.Initiate(w1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := s2.Ready(i1, nil); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("INITIATE of connection 1 on connection 2: %v", err)
	}
	if _, _, _, _, err := s1.Ready(i1, nil); err != nil {
		t.Fatalf("on its own connection: %v", err)
	}
	if _, _, _, _, err := s1.Ready(i1, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("INITIATE replayed after the handshake: %v", err)
	}
}

func TestMetadataBound(t *testing.T) {
	p := newParties(t, 12)
	c := NewClient(p.serverPub, p.clientPub, p.clientSec, nil)
	s := NewServer(p.serverSec, nil, nil)
	hello, _ := c.Hello()
	welcome, _ := s.Welcome(hello)
	if _, err := c.Initiate(welcome, make([]byte, MaxMetadataSize+1)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("oversized client metadata: %v", err)
	}
	initiate, err := c.Initiate(welcome, make([]byte, MaxMetadataSize))
	if err != nil {
		t.Fatal(err)
	}
	if len(initiate) != InitiateMinSize+MaxMetadataSize {
		t.Fatalf("INITIATE of %d bytes", len(initiate))
	}
	if _, _, md, _, err := s.Ready(initiate, make([]byte, MaxMetadataSize+1)); !errors.Is(err, ErrMalformed) || md != nil {
		t.Fatalf("oversized server metadata: %v", err)
	}
}

func TestSessionAllocations(t *testing.T) {
	p := newParties(t, 13)
	cs, ss := handshake(t, p, nil)
	// Requests: a 2048-point request is about 37 KiB; Open into a buffer
	// with room allocates nothing.
	request := make([]byte, 37<<10)
	const runs = 50
	bodies := make([][]byte, runs+1)
	for i := range bodies {
		bodies[i], _ = cs.Seal(nil, 0, request)
	}
	dst := make([]byte, 0, len(request)+1)
	next := 0
	if a := testing.AllocsPerRun(runs, func() {
		if _, _, err := ss.Open(dst[:0], bodies[next]); err != nil {
			t.Fatal(err)
		}
		next++
	}); a != 0 {
		t.Fatalf("%v allocations per Open", a)
	}
	// Replies (small): Seal into a buffer with room allocates nothing once
	// its scratch has grown.
	reply := make([]byte, 200)
	body := make([]byte, 0, len(reply)+MessageOverhead)
	body, _ = ss.Seal(body[:0], 0, reply)
	if a := testing.AllocsPerRun(runs, func() {
		body, _ = ss.Seal(body[:0], 0, reply)
	}); a != 0 {
		t.Fatalf("%v allocations per Seal", a)
	}
}

func TestAllowlistReplace(t *testing.T) {
	p := newParties(t, 14)
	a := NewAllowlist([]PublicKey{p.clientPub, p.clientPub})
	if !a.Allowed(p.clientPub) || a.Allowed(p.serverPub) || a.Len() != 1 {
		t.Fatal("initial set wrong")
	}
	a.Replace([]PublicKey{p.serverPub})
	if a.Allowed(p.clientPub) || !a.Allowed(p.serverPub) {
		t.Fatal("replaced set wrong")
	}
	var zero Allowlist
	if zero.Allowed(p.clientPub) || zero.Len() != 0 {
		t.Fatal("zero Allowlist allows")
	}
}
