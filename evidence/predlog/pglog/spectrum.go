package pglog

import (
	"errors"
	"fmt"
	"math"
)

// Spectra and axes are stored as bytea: a format byte, then the
// little-endian float32 values shuffled into byte planes (every value's
// first byte, then every second byte, and so on). The compression is
// left to PostgreSQL, which compresses a row's long values (TOAST, pglz)
// once the row passes about 2 kB, as a spectrum of a few hundred points
// does. The shuffle is what makes that pay: the sign, exponent and high
// mantissa bytes of neighbouring points are nearly equal and their planes
// compress well, where interleaved float32s barely compress at all. (A
// 2048-point scan, peak and baseline under counting noise: 8192 bytes
// interleaved stay 8192, pglz gives up; shuffled they take 2429.)
//
// This is not sqlitelog's encoding (which deflates in Go), whose codec is
// private to that package; predlog has no shared one.

// MaxSpectrumPoints bounds the points of one stored spectrum or axis, as
// sqlitelog does: a longer one is not stored (its record is), and a stored
// value claiming more is refused on reading.
const MaxSpectrumPoints = 1 << 16

// formatShuffledFloat32 is the format byte of the encoding above.
const formatShuffledFloat32 = 1

var errCorruptSpectrum = errors.New("pglog: corrupt stored spectrum")

// encodeSpectrum returns the stored form of v in a new slice (the caller's
// slice is not kept).
func encodeSpectrum(v []float32) []byte {
	n := len(v)
	out := make([]byte, 1+4*n)
	out[0] = formatShuffledFloat32
	planes := out[1:]
	for i, f := range v {
		bits := math.Float32bits(f)
		for plane := range 4 {
			planes[plane*n+i] = byte(bits >> (8 * plane))
		}
	}
	return out
}

// decodeSpectrum parses a stored spectrum or axis.
func decodeSpectrum(stored []byte) ([]float32, error) {
	if len(stored) < 1 || stored[0] != formatShuffledFloat32 || (len(stored)-1)%4 != 0 {
		return nil, errCorruptSpectrum
	}
	planes := stored[1:]
	n := len(planes) / 4
	if n > MaxSpectrumPoints {
		return nil, fmt.Errorf("%w: %d points, at most %d", errCorruptSpectrum, n, MaxSpectrumPoints)
	}
	v := make([]float32, n)
	for i := range v {
		var bits uint32
		for plane := range 4 {
			bits |= uint32(planes[plane*n+i]) << (8 * plane)
		}
		v[i] = math.Float32frombits(bits)
	}
	return v, nil
}

// storable reports whether rec's spectrum (and axis) fit the bound.
func storable(spectrum, axis []float32) bool {
	return spectrum != nil && len(spectrum) <= MaxSpectrumPoints && len(axis) <= MaxSpectrumPoints
}
