package client

import (
	"bufio"
	"bytes"
	"testing"

	"ramanserve/server/zmtp/wire"
)

// The metadata a server sends in READY is parsed by package wire, whose
// FuzzParseProperties covers it.

// FuzzReadFrame: whatever a server sends, the frame reader returns
// bodies within the limit, or an error, and never allocates more than
// the limit for a frame that claims more.
func FuzzReadFrame(f *testing.F) {
	f.Add(wire.AppendHeader(nil, wire.FlagCommand, 3))
	f.Add(append(wire.AppendHeader(nil, 0, 300), make([]byte, 300)...))
	f.Add([]byte{wire.FlagLong, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{0x08, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 10
		c := &curveConn{r: bufio.NewReader(bytes.NewReader(data))}
		for i := 0; i < 64; i++ {
			flags, body, err := c.readFrame(limit)
			if err != nil {
				return
			}
			if len(body) > limit || cap(c.in) > limit || flags&wire.FlagReserved != 0 {
				t.Fatalf("frame flags %#x, %d bytes, buffer %d, limit %d", flags, len(body), cap(c.in), limit)
			}
		}
	})
}
