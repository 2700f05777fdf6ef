package sqlitelog

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	kflate "github.com/klauspost/compress/flate"
)

// Spectra are stored as float32, compressed with DEFLATE after a
// byte-plane shuffle: all first bytes of the little-endian float32s, then
// all second bytes, and so on. The sign, exponent and high mantissa bytes
// of neighbouring points are nearly equal, so their planes compress well;
// the low mantissa bytes are noise and no codec compresses them.
//
// The writer is github.com/klauspost/compress/flate at its fastest level:
// the same DEFLATE stream format as the standard library's, which reads
// it, at about half the CPU of compress/flate's BestSpeed for a 2048-point
// spectrum (BenchmarkEncodeSpectrum: 32 against 66 us for whole counts,
// 46 against 84 us for fractional values), for 18 % more bytes on whole
// counts and 3 % fewer on fractional values. The writer compresses one
// spectrum per logged record, so under -log-spectra at full rate its CPU
// competes with the replies for the cores; an LZ-only codec (s2, snappy)
// is faster still but stored whole counts a third larger again, which the
// size bound would pay in retained records.
//
// Encoding: format byte (1), uvarint point count, DEFLATE stream of the
// shuffled planes.

// MaxSpectrumPoints bounds the points of one stored spectrum, so that a
// damaged or hostile blob cannot make the decoder allocate without limit.
const MaxSpectrumPoints = 1 << 16

const spectrumFormatShuffleFlate = 1

var errSpectrum = errors.New("predlog: corrupt spectrum blob")

// spectrumCodec compresses spectra; it is owned by the writer goroutine and
// reuses its buffers and its flate.Writer between records.
type spectrumCodec struct {
	planes []byte
	out    bytes.Buffer
	fw     *kflate.Writer
}

// encode returns the stored form of s. The slice is valid until the next
// call.
func (c *spectrumCodec) encode(s []float32) ([]byte, error) {
	if len(s) > MaxSpectrumPoints {
		return nil, fmt.Errorf("predlog: spectrum of %d points, at most %d are stored", len(s), MaxSpectrumPoints)
	}
	n := len(s)
	if cap(c.planes) < 4*n {
		c.planes = make([]byte, 4*n)
	}
	planes := c.planes[:4*n]
	for i, v := range s {
		b := math.Float32bits(v)
		planes[i] = byte(b)
		planes[n+i] = byte(b >> 8)
		planes[2*n+i] = byte(b >> 16)
		planes[3*n+i] = byte(b >> 24)
	}
	c.out.Reset()
	c.out.WriteByte(spectrumFormatShuffleFlate)
	var hdr [binary.MaxVarintLen64]byte
	c.out.Write(hdr[:binary.PutUvarint(hdr[:], uint64(n))])
	if c.fw == nil {
		fw, err := kflate.NewWriter(&c.out, kflate.BestSpeed)
		if err != nil {
			return nil, err
		}
		c.fw = fw
	} else {
		c.fw.Reset(&c.out)
	}
	if _, err := c.fw.Write(planes); err != nil {
		return nil, err
	}
	if err := c.fw.Close(); err != nil {
		return nil, err
	}
	return c.out.Bytes(), nil
}

// decodeSpectrum parses a stored spectrum. It never allocates more than
// 4*MaxSpectrumPoints bytes of planes, whatever the blob says.
func decodeSpectrum(blob []byte) ([]float32, error) {
	if len(blob) < 2 || blob[0] != spectrumFormatShuffleFlate {
		return nil, errSpectrum
	}
	n, k := binary.Uvarint(blob[1:])
	if k <= 0 || n > MaxSpectrumPoints {
		return nil, errSpectrum
	}
	planes := make([]byte, 4*n)
	fr := flate.NewReader(bytes.NewReader(blob[1+k:]))
	defer fr.Close()
	if _, err := io.ReadFull(fr, planes); err != nil {
		return nil, errSpectrum
	}
	// The stream must end exactly there: trailing data means the count
	// does not describe the blob.
	var one [1]byte
	if m, err := io.ReadAtLeast(fr, one[:], 1); m != 0 || err != io.EOF {
		return nil, errSpectrum
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = math.Float32frombits(uint32(planes[i]) | uint32(planes[int(n)+i])<<8 |
			uint32(planes[2*int(n)+i])<<16 | uint32(planes[3*int(n)+i])<<24)
	}
	return s, nil
}
