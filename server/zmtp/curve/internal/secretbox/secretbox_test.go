package secretbox

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/poly1305"
	"golang.org/x/crypto/salsa20/salsa"
)

// lengths crosses every boundary of the implementation: the 32 bytes
// encrypted with block 0, the 1024-byte runs of xor16, and a tail of each
// size around them.
func lengths() []int {
	ls := []int{0, 1, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 1055, 1056, 1057, 2047, 2048, 2080, 3000, 4096 + 32, 37 << 10, 37<<10 + 33}
	for range 40 {
		ls = append(ls, rand.IntN(9000))
	}
	return ls
}

// paths runs f with the wide keystream on (where this machine has it) and
// off, so both are checked against x/crypto wherever the tests run.
func paths(t *testing.T, f func(t *testing.T)) {
	saved := hasWide
	t.Cleanup(func() { hasWide = saved })
	for _, wide := range []bool{saved, false} {
		hasWide = wide
		name := "generic"
		if wide {
			name = "wide"
		}
		t.Run(name, f)
	}
}

func random(r *rand.ChaCha8, n int) []byte {
	b := make([]byte, n)
	r.Read(b)
	return b
}

func TestXORKeyStreamMatchesXCrypto(t *testing.T) {
	t.Logf("wide keystream on this machine: %v", hasWide)
	paths(t, func(t *testing.T) {
		r := rand.NewChaCha8([32]byte{1})
		for _, n := range lengths() {
			var key [32]byte
			var counter [16]byte
			r.Read(key[:])
			r.Read(counter[:8])
			// Block counters near where the low word carries into the
			// high one, and where the 64-bit counter wraps.
			starts := []uint64{0, 1, 1<<32 - 5, 1<<32 - 16, 1<<64 - 7, rand.Uint64()}
			binary.LittleEndian.PutUint64(counter[8:], starts[rand.IntN(len(starts))])
			in := random(r, n)
			want := make([]byte, n)
			c := counter
			salsa.XORKeyStream(want, in, &c, &key)
			got := make([]byte, n)
			xorKeyStream(got, in, &counter, &key)
			if !bytes.Equal(got, want) {
				t.Fatalf("%d bytes from block %#x: keystream differs from x/crypto's at byte %d", n, binary.LittleEndian.Uint64(counter[8:]), firstDiff(got, want))
			}
			xorKeyStream(in, in, &counter, &key) // in place
			if !bytes.Equal(in, want) {
				t.Fatalf("%d bytes in place: differs from x/crypto's at byte %d", n, firstDiff(in, want))
			}
		}
	})
}

func TestSealOpenMatchXCrypto(t *testing.T) {
	paths(t, func(t *testing.T) {
		r := rand.NewChaCha8([32]byte{2})
		for _, n := range lengths() {
			var key [32]byte
			var nonce [24]byte
			r.Read(key[:])
			r.Read(nonce[:])
			msg := random(r, n)
			prefix := random(r, rand.IntN(20))
			want := secretbox.Seal(bytes.Clone(prefix), msg, &nonce, &key)
			got := Seal(bytes.Clone(prefix), msg, &nonce, &key)
			if !bytes.Equal(got, want) {
				t.Fatalf("Seal of %d bytes differs from x/crypto's at byte %d", n, firstDiff(got, want))
			}
			inPlaceBox := make([]byte, Overhead+n)
			copy(inPlaceBox[Overhead:], msg)
			SealInPlace(inPlaceBox, &nonce, &key)
			if !bytes.Equal(inPlaceBox, want[len(prefix):]) {
				t.Fatalf("SealInPlace of %d bytes differs from x/crypto's Seal at byte %d", n, firstDiff(inPlaceBox, want[len(prefix):]))
			}
			box := got[len(prefix):]
			opened, ok := Open(bytes.Clone(prefix), box, &nonce, &key)
			if !ok || !bytes.Equal(opened[len(prefix):], msg) || !bytes.Equal(opened[:len(prefix)], prefix) {
				t.Fatalf("Open of %d bytes: ok %v, message differs at byte %d", n, ok, firstDiff(opened[len(prefix):], msg))
			}
			// Into a buffer with room: no allocation, same bytes.
			room := make([]byte, 3, 3+n)
			if opened, ok := Open(room, box, &nonce, &key); !ok || &opened[0] != &room[0] || !bytes.Equal(opened[3:], msg) {
				t.Fatalf("Open of %d bytes into a buffer with room: ok %v, same buffer %v", n, ok, ok && &opened[0] == &room[0])
			}
			// In place, as x/crypto allows.
			inPlace := bytes.Clone(box)
			if opened, ok := Open(inPlace[Overhead:Overhead], inPlace, &nonce, &key); !ok || !bytes.Equal(opened, msg) {
				t.Fatalf("Open of %d bytes in place: ok %v", n, ok)
			}
			// Any flipped bit, in the tag or the ciphertext, fails like x/crypto's.
			bad := bytes.Clone(box)
			bad[rand.IntN(len(bad))] ^= 1 << rand.IntN(8)
			if out, ok := Open(nil, bad, &nonce, &key); ok || out != nil {
				t.Fatalf("Open of a tampered %d-byte box: ok %v", n, ok)
			}
			if _, ok := secretbox.Open(nil, bad, &nonce, &key); ok {
				t.Fatal("x/crypto opened the tampered box")
			}
		}
		var key [32]byte
		var nonce [24]byte
		if _, ok := Open(nil, make([]byte, Overhead-1), &nonce, &key); ok {
			t.Fatal("Open of a box shorter than its tag succeeded")
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func BenchmarkXORKeyStream(b *testing.B) {
	var key [32]byte
	var counter [16]byte
	buf := make([]byte, 37<<10)
	for _, impl := range []struct {
		name string
		f    func(out, in []byte, counter *[16]byte, key *[32]byte)
	}{{"x-crypto", salsa.XORKeyStream}, {"this", xorKeyStream}} {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				impl.f(buf, buf, &counter, &key)
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	var key [32]byte
	var nonce [24]byte
	msg := make([]byte, 37<<10)
	box := Seal(nil, msg, &nonce, &key)
	out := make([]byte, 0, len(msg))
	b.Run("x-crypto", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			secretbox.Open(out[:0], box, &nonce, &key)
		}
	})
	b.Run("this", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			Open(out[:0], box, &nonce, &key)
		}
	})
}

func TestPoly1305MatchesXCrypto(t *testing.T) {
	paths(t, func(t *testing.T) {
		r := rand.NewChaCha8([32]byte{3})
		ls := []int{0, 15, 16, 17, 1023, 1024, 1025, 1024 + 15, 1024 + 16, 1024 + 127, 1024 + 128, 1024 + 129, 2048, 37 << 10, 37<<10 + 1}
		for range 60 {
			ls = append(ls, rand.IntN(10000))
		}
		for _, n := range ls {
			var key [32]byte
			r.Read(key[:])
			if n%3 == 0 {
				// r's limbs at their clamped maximum, the message all ones:
				// the largest products and carries.
				for i := range 16 {
					key[i] = 0xff
				}
			}
			msg := random(r, n)
			if n%3 == 0 {
				for i := range msg {
					msg[i] = 0xff
				}
			}
			var got, want [16]byte
			polySum(&got, msg, &key)
			poly1305.Sum(&want, msg, &key)
			if got != want {
				t.Fatalf("Poly1305 of %d bytes: %x, x/crypto %x", n, got, want)
			}
			if !polyVerify(&want, msg, &key) {
				t.Fatalf("Poly1305 of %d bytes: x/crypto's tag does not verify", n)
			}
			want[rand.IntN(16)] ^= 1 << rand.IntN(8)
			if polyVerify(&want, msg, &key) {
				t.Fatalf("Poly1305 of %d bytes: a wrong tag verifies", n)
			}
		}
	})
}

func BenchmarkPoly1305(b *testing.B) {
	var key [32]byte
	msg := make([]byte, 37<<10)
	for _, impl := range []struct {
		name string
		f    func(out *[16]byte, m []byte, key *[32]byte)
	}{{"x-crypto", poly1305.Sum}, {"this", polySum}} {
		b.Run(impl.name, func(b *testing.B) {
			var tag [16]byte
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				impl.f(&tag, msg, &key)
			}
		})
	}
}
