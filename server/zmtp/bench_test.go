package zmtp

import (
	"context"
	"errors"
	"io"
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

// BenchmarkSessionCPU is the transport's own CPU cost per request without
// the kernel: a session reads a REQ-style message of size bytes from memory,
// calls a handler that returns a short reply, and writes it to nowhere. The
// socket round trip above is dominated by system calls; this isolates what
// the package itself adds per message (phase changes, buffer handling).
func BenchmarkSessionCPU(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"256B", 256}, {"37KiB", 37 << 10}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg, err := Config{Logger: discardLogger()}.withDefaults()
			if err != nil {
				b.Fatal(err)
			}
			h := HandlerFunc(func(_ context.Context, _ Request, dst []byte) []byte { return append(dst, "ok"...) })
			conn := &loopConn{msg: encodeMsg(nil, make([]byte, bc.size)), left: b.N}
			s := newSession(nil, newShared(cfg), cfg, h, conn)
			b.SetBytes(int64(bc.size))
			b.ReportAllocs()
			b.ResetTimer()
			if err := s.serve(context.Background()); !errors.Is(err, io.EOF) {
				b.Fatalf("serve: %v", err)
			}
		})
	}
}

// loopConn is a fuzzConn whose peer sends msg left times, then EOF.
type loopConn struct {
	fuzzConn
	msg  []byte
	pos  int
	left int
}

func (c *loopConn) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.msg[c.pos:])
	c.pos += n
	if c.pos == len(c.msg) {
		c.pos, c.left = 0, c.left-1
	}
	return n, nil
}

// BenchmarkEvictionCandidate is the admission-time walk over a full table of
// 1024 silent connections: what a newcomer at the cap costs the accept loop.
func BenchmarkEvictionCandidate(b *testing.B) {
	cfg, err := Config{Logger: discardLogger()}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	srv := &Server{cfg: cfg, shared: newShared(cfg), sessions: make(map[*session]struct{})}
	for i := range cfg.MaxConnections {
		sess := newSession(srv, srv.shared, cfg, echoHandler, &fuzzConn{})
		sess.seq = uint64(i)
		srv.sessions[sess] = struct{}{}
	}
	b.ReportAllocs()
	for b.Loop() {
		if victim, _ := srv.evictionCandidateLocked(srv.shared.now()); victim == nil {
			b.Fatal("no candidate among silent connections")
		}
	}
}
