package curve

import (
	"bytes"
	"errors"
	"testing"
)

func TestZ85RFC32Vector(t *testing.T) {
	raw := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	s, err := EncodeZ85(raw)
	if err != nil || s != "HelloWorld" {
		t.Fatalf("EncodeZ85 = %q, %v; want HelloWorld", s, err)
	}
	back, err := DecodeZ85("HelloWorld")
	if err != nil || !bytes.Equal(back, raw) {
		t.Fatalf("DecodeZ85(HelloWorld) = %x, %v", back, err)
	}
}

func TestZ85RoundTripEdges(t *testing.T) {
	for _, raw := range [][]byte{{}, {0, 0, 0, 0}, {0xFF, 0xFF, 0xFF, 0xFF}, bytes.Repeat([]byte{0xA5, 1, 2, 3}, 8)} {
		s, err := EncodeZ85(raw)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeZ85(s)
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("round trip of %x: %q -> %x, %v", raw, s, back, err)
		}
	}
}

func TestZ85Refusals(t *testing.T) {
	if _, err := EncodeZ85([]byte{1, 2, 3}); !errors.Is(err, ErrZ85) {
		t.Errorf("3 bytes: %v", err)
	}
	for _, s := range []string{"Hell", "Hello World", "Hell\"", "Hello\x00orld", "%nSc1", "#####"} {
		if _, err := DecodeZ85(s); !errors.Is(err, ErrZ85) {
			t.Errorf("DecodeZ85(%q) = %v, want ErrZ85", s, err)
		}
	}
	// The largest 5-character group that fits 32 bits decodes.
	if b, err := DecodeZ85("%nSc0"); err != nil || !bytes.Equal(b, []byte{0xFF, 0xFF, 0xFF, 0xFF}) {
		t.Errorf("DecodeZ85(%%nSc0) = %x, %v", b, err)
	}
}

func FuzzZ85Decode(f *testing.F) {
	f.Add("HelloWorld")
	f.Add("%nSc1")
	f.Add("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := DecodeZ85(s)
		if err != nil {
			return
		}
		back, err := EncodeZ85(b)
		if err != nil || back != s {
			t.Fatalf("%q decodes to %x, which encodes to %q, %v", s, b, back, err)
		}
	})
}
