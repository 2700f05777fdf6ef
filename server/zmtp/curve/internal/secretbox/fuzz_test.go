package secretbox

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/poly1305"
	"golang.org/x/crypto/salsa20/salsa"
)

// FuzzXORKeyStream compares the keystream with x/crypto's for any key,
// nonce, first block counter and input. The seeds cover the lengths where
// the implementation changes path and counters near their carries.
func FuzzXORKeyStream(f *testing.F) {
	for i, n := range []int{0, 1, 255, 256, 1023, 1024, 1025, 1279, 1280, 4100} {
		first := []uint64{0, 1, 1<<32 - 3, 1<<64 - 5}[i%4]
		f.Add(bytes.Repeat([]byte{byte(i + 1)}, 32), uint64(i)*0x0102030405060708, first, bytes.Repeat([]byte{byte(i)}, n))
	}
	f.Fuzz(func(t *testing.T, keyBytes []byte, nonce, first uint64, in []byte) {
		var key [32]byte
		copy(key[:], keyBytes)
		var counter [16]byte
		binary.LittleEndian.PutUint64(counter[:8], nonce)
		binary.LittleEndian.PutUint64(counter[8:], first)
		want := make([]byte, len(in))
		salsa.XORKeyStream(want, in, &counter, &key)
		got := make([]byte, len(in))
		xorKeyStream(got, in, &counter, &key)
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes from block %#x: differs from x/crypto's at byte %d", len(in), first, firstDiff(got, want))
		}
	})
}

// FuzzOpen opens any box under any key and nonce, as x/crypto does: the
// same verdict and the same message; a message sealed here opens with
// x/crypto to the same bytes.
func FuzzOpen(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	nonce := bytes.Repeat([]byte{9}, 24)
	for _, n := range []int{0, 1, 32, 33, 300, 1056, 1057, 1400, 3000} {
		msg := bytes.Repeat([]byte{byte(n)}, n)
		box := secretbox.Seal(nil, msg, (*[24]byte)(nonce), (*[32]byte)(key))
		f.Add(key, nonce, box)
		bad := bytes.Clone(box)
		bad[len(bad)/2] ^= 0x10
		f.Add(key, nonce, bad)
	}
	f.Add(key, nonce, []byte("short"))
	f.Fuzz(func(t *testing.T, keyBytes, nonceBytes, box []byte) {
		var key [32]byte
		var nonce [24]byte
		copy(key[:], keyBytes)
		copy(nonce[:], nonceBytes)
		want, wantOK := secretbox.Open(nil, box, &nonce, &key)
		got, ok := Open(nil, box, &nonce, &key)
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("Open of %d bytes: ok %v (x/crypto %v), message differs at byte %d", len(box), ok, wantOK, firstDiff(got, want))
		}
		sealed := Seal(nil, box, &nonce, &key)
		if back, ok := secretbox.Open(nil, sealed, &nonce, &key); !ok || !bytes.Equal(back, box) {
			t.Fatalf("x/crypto does not open what Seal made of %d bytes (ok %v)", len(box), ok)
		}
		if !bytes.Equal(sealed, secretbox.Seal(nil, box, &nonce, &key)) {
			t.Fatalf("Seal of %d bytes differs from x/crypto's", len(box))
		}
	})
}

// FuzzPoly1305 compares the tag with x/crypto's for any key and message;
// the seeds reach the eight-lane path (1024 bytes and more) with every
// kind of tail.
func FuzzPoly1305(f *testing.F) {
	for i, n := range []int{0, 16, 1000, 1024, 1025, 1040, 1151, 1152, 1153, 3000} {
		f.Add(bytes.Repeat([]byte{byte(0xf0 + i)}, 32), bytes.Repeat([]byte{byte(0xff - i)}, n))
	}
	f.Fuzz(func(t *testing.T, keyBytes, msg []byte) {
		var key [32]byte
		copy(key[:], keyBytes)
		var got, want [16]byte
		polySum(&got, msg, &key)
		poly1305.Sum(&want, msg, &key)
		if got != want {
			t.Fatalf("Poly1305 of %d bytes: %x, x/crypto %x", len(msg), got, want)
		}
	})
}
