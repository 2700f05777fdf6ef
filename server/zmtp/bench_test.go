package zmtp

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkRoundTrip is the transport's cost of one request and reply over
// loopback TCP: a REQ-style message of size bytes in, a short reply out. The
// client reuses its buffers, so allocations reported are the server's.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"256B", 256}, {"37KiB", 37 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			reply := []byte("ok")
			h := HandlerFunc(func(_ context.Context, _ Request, dst []byte) []byte { return append(dst, reply...) })
			srv := startServer(b, Config{Logger: discardLogger()}, h)
			p := dialRaw(b, srv)
			p.handshake(1, "REQ")
			_ = p.conn.SetDeadline(time.Time{})
			msg := encodeMsg(nil, make([]byte, bc.size))
			want := len(encodeMsg(nil, reply))
			in := make([]byte, want)
			b.SetBytes(int64(bc.size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := p.conn.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := readFullConn(p, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func readFullConn(p *rawPeer, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := p.br.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
