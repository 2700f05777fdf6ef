package client

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzLookupProperty: any metadata a server sends in READY either parses
// or is refused; a value found lies inside the input.
func FuzzLookupProperty(f *testing.F) {
	f.Add(appendProperty(nil, "Socket-Type", "REP"))
	f.Add(appendProperty(appendProperty(nil, "Identity", ""), "socket-type", "ROUTER"))
	f.Add([]byte{11, 'S', 'o', 'c', 'k', 'e', 't', '-', 'T', 'y', 'p', 'e', 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, meta []byte) {
		v, ok, err := lookupProperty(meta, "Socket-Type")
		if err != nil && ok {
			t.Fatal("a value and an error")
		}
		if ok && len(v) > len(meta) {
			t.Fatalf("a %d-byte value from %d bytes", len(v), len(meta))
		}
	})
}

// FuzzReadFrame: whatever a server sends, the frame reader returns
// bodies within the limit, or an error, and never allocates more than
// the limit for a frame that claims more.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrameHeader(nil, frameCommand, 3))
	f.Add(append(appendFrameHeader(nil, 0, 300), make([]byte, 300)...))
	f.Add([]byte{frameLong, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{0x08, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 10
		c := &curveConn{r: bufio.NewReader(bytes.NewReader(data))}
		for i := 0; i < 64; i++ {
			flags, body, err := c.readFrame(limit)
			if err != nil {
				return
			}
			if len(body) > limit || cap(c.in) > limit || flags&frameReserve != 0 {
				t.Fatalf("frame flags %#x, %d bytes, buffer %d, limit %d", flags, len(body), cap(c.in), limit)
			}
		}
	})
}
