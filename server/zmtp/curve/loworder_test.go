package curve

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/crypto/nacl/box"
)

// lowOrderPoints are public keys whose X25519 with any secret key is all
// zeros: a box "between" one of them and anyone has a key everybody can
// compute. libsodium (libzmq's CURVE) refuses them: crypto_box_beforenm
// fails on an all-zero shared secret.
var lowOrderPoints = map[string]PublicKey{
	"zero": {},
	"one":  {1},
}

// zeroKey is the box key of a low-order point with any secret: what an
// attacker seals with, knowing no key at all.
func zeroKey(p PublicKey) *[32]byte {
	var k [32]byte
	_, sec, _ := GenerateKeyPair(nil)
	box.Precompute(&k, (*[32]byte)(&p), (*[32]byte)(&sec))
	return &k
}

// TestLowOrderShortKeyRefused: a HELLO whose short-term key C' is a
// low-order point opens without knowing the server's key; it must be
// refused, not answered with a WELCOME.
func TestLowOrderShortKeyRefused(t *testing.T) {
	p := newParties(t, 31)
	for name, point := range lowOrderPoints {
		hello := make([]byte, helloBox, HelloSize)
		copy(hello, nameHello)
		hello[helloVersion] = 1
		copy(hello[helloClient:], point[:])
		binary.BigEndian.PutUint64(hello[helloNonce:], 1)
		nonce := shortNonce(prefixHello, 1)
		hello = box.SealAfterPrecomputation(hello, make([]byte, 64), &nonce, zeroKey(point))
		s := NewServer(p.serverSec, nil, nil)
		if _, err := s.Welcome(hello); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s: HELLO from a low-order C' (made without the server key): %v, want ErrAuthentication", name, err)
		}
	}
}

// TestLowOrderLongTermKeyRefused: an INITIATE whose client long-term key
// C is a low-order point carries a vouch anyone can seal; the server must
// refuse it even with no allowlist.
func TestLowOrderLongTermKeyRefused(t *testing.T) {
	p := newParties(t, 32)
	for name, point := range lowOrderPoints {
		c := NewClient(p.serverPub, p.clientPub, p.clientSec, nil)
		s := NewServer(p.serverSec, nil, nil)
		hello, err := c.Hello()
		if err != nil {
			t.Fatal(err)
		}
		welcome, err := s.Welcome(hello)
		if err != nil {
			t.Fatal(err)
		}
		// The client's own steps, but with C a low-order point and the
		// vouch sealed with the key anyone can compute.
		wnonce := longNonce(prefixWelcome, welcome[welcomeNonce:welcomeBox])
		plain, ok := box.Open(nil, welcome[welcomeBox:], &wnonce, (*[32]byte)(&c.server), (*[32]byte)(&c.shortSec))
		if !ok {
			t.Fatal("WELCOME does not open")
		}
		var serverShort PublicKey
		copy(serverShort[:], plain[:KeySize])
		cookie := plain[KeySize : KeySize+cookieSize]
		vnonce := longNonce(prefixVouch, make([]byte, longNonceSize))
		vouchPlain := append(append([]byte{}, c.shortPub[:]...), p.serverPub[:]...)
		initPlain := append([]byte{}, point[:]...)
		initPlain = append(initPlain, vnonce[8:]...)
		initPlain = box.SealAfterPrecomputation(initPlain, vouchPlain, &vnonce, zeroKey(point))
		initPlain = append(initPlain, clientMeta...)
		out := append([]byte{}, nameInitiate...)
		out = append(out, cookie...)
		out = binary.BigEndian.AppendUint64(out, 2)
		inonce := shortNonce(prefixInitiate, 2)
		out = box.Seal(out, initPlain, &inonce, (*[32]byte)(&serverShort), (*[32]byte)(&c.shortSec))

		if _, client, _, _, err := s.Ready(out, serverMeta); !errors.Is(err, ErrAuthentication) {
			t.Errorf("%s: INITIATE from low-order C %s: %v, want ErrAuthentication", name, client, err)
		}
	}
}
