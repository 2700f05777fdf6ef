package sqlitelog

import (
	"math"
	"reflect"
	"testing"

	"ramanserve/evidence/predlog"
)

// FuzzDecodeCursor: the cursor comes from a client's query string. Any text
// either fails with ErrBadCursor or decodes to a position that encodes back
// to the same text.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(cursor{ts: 1763884800000000000, id: 42}))
	f.Add(encodeCursor(cursor{ts: math.MinInt64, id: math.MaxInt64}))
	f.Add("")
	f.Add("AQ")
	f.Add("AYCAgICAgICAgAEB")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := decodeCursor(s)
		if err != nil {
			if err != predlog.ErrBadCursor {
				t.Fatalf("error %v is not predlog.ErrBadCursor", err)
			}
			return
		}
		if c.id < 0 || encodeCursor(c) != s {
			t.Fatalf("%q decoded to %+v, which encodes to %q", s, c, encodeCursor(c))
		}
	})
}

// FuzzDecodeSpectrum: a stored blob is read back from a file that a disk
// error or a hand edit may have damaged. Decoding fails cleanly or returns
// at most MaxSpectrumPoints points; an encoded spectrum round-trips.
func FuzzDecodeSpectrum(f *testing.F) {
	var c spectrumCodec
	for _, s := range [][]float32{{}, {1}, {1, 2, 3, float32(math.Inf(1)), float32(math.NaN())}} {
		b, err := c.encode(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte(nil), b...))
	}
	f.Add([]byte{1, 0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, blob []byte) {
		s, err := decodeSpectrum(blob)
		if err != nil {
			return
		}
		if len(s) > MaxSpectrumPoints {
			t.Fatalf("decoded %d points", len(s))
		}
		var c spectrumCodec
		b, err := c.encode(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeSpectrum(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(bitsOf(back), bitsOf(s)) {
			t.Fatal("a decoded spectrum does not round-trip")
		}
	})
}

func bitsOf(s []float32) []uint32 {
	b := make([]uint32, len(s))
	for i, v := range s {
		b[i] = math.Float32bits(v)
	}
	return b
}

func TestSpectrumRoundTrip(t *testing.T) {
	var c spectrumCodec
	s := make([]float32, 2048)
	for i := range s {
		s[i] = float32(1000 + 50*math.Sin(float64(i)/30))
	}
	b, err := c.encode(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeSpectrum(b)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := c.encode(make([]float32, MaxSpectrumPoints+1)); err == nil {
		t.Fatal("a spectrum over MaxSpectrumPoints was encoded")
	}
	// A count that promises more points than the stream holds.
	bad := append([]byte{spectrumFormatShuffleFlate, 0x80, 0x01}, b[1+2:]...)
	if _, err := decodeSpectrum(bad); err == nil {
		t.Fatal("a blob whose count does not match its data was decoded")
	}
}
