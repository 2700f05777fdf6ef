package sqlitelog

import (
	"math"
	"math/rand/v2"
	"testing"
)

// scan is a 2048-point Raman-like scan: a sloping baseline, two peaks and
// counting noise, whole counts when counts is set (as a rig's detector
// gives them) and fractional otherwise (as a preprocessed one is).
func scan(seed uint64, counts bool) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	s := make([]float32, 2048)
	for i := range s {
		x := float64(i)
		v := 1000 + 0.2*x + 800*math.Exp(-math.Pow((x-600)/8, 2)) + 1200*math.Exp(-math.Pow((x-1300)/12, 2)) + 6*r.NormFloat64()
		if counts {
			v = math.Round(v)
		}
		s[i] = float32(v)
	}
	return s
}

// TestSpectrumCodecReused: one codec, as the writer keeps it, encodes
// spectra of every length in turn (its buffers and its DEFLATE writer
// reused and resized), and each blob decodes to its spectrum bit for bit
// through the standard library's DEFLATE reader.
func TestSpectrumCodecReused(t *testing.T) {
	var c spectrumCodec
	r := rand.New(rand.NewPCG(3, 4))
	for k := range 300 {
		var s []float32
		switch k % 3 {
		case 0:
			s = scan(uint64(k), k%2 == 0)
		case 1:
			s = make([]float32, r.IntN(5000))
			for i := range s {
				s[i] = math.Float32frombits(r.Uint32()) // any bits, NaNs too
			}
		default:
			s = scan(uint64(k), false)[:r.IntN(2048)]
		}
		b, err := c.encode(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeSpectrum(b)
		if err != nil {
			t.Fatalf("spectrum %d (%d points): %v", k, len(s), err)
		}
		if len(back) != len(s) {
			t.Fatalf("spectrum %d: %d points back, want %d", k, len(back), len(s))
		}
		for i := range s {
			if math.Float32bits(back[i]) != math.Float32bits(s[i]) {
				t.Fatalf("spectrum %d, point %d: %v back, want %v", k, i, back[i], s[i])
			}
		}
	}
}

// BenchmarkEncodeSpectrum is the log writer's cost of storing one
// 2048-point spectrum (shuffle and DEFLATE), with the stored size.
func BenchmarkEncodeSpectrum(b *testing.B) {
	for _, counts := range []bool{true, false} {
		name := "fractional"
		if counts {
			name = "counts"
		}
		b.Run(name, func(b *testing.B) {
			s := scan(1, counts)
			var c spectrumCodec
			var n int
			b.ReportAllocs()
			for range b.N {
				blob, err := c.encode(s)
				if err != nil {
					b.Fatal(err)
				}
				n = len(blob)
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}
