package zmtp

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// Sizes of a 2048-point predict on the wire: the request is about 37 KiB
// of MessagePack (api/messages.md section 5), the reply a few hundred bytes.
const (
	predictRequestSize = 37 << 10
	predictReplySize   = 512
)

// BenchmarkPredictTransportCPU is the transport's own CPU cost of one
// 2048-point predict without the kernel, NULL next to CURVE: a session
// reads the REQ request (delimiter + 37 KiB) from memory, calls a handler
// returning a 512-byte reply, and writes it to nowhere. The CURVE case adds
// exactly the server's crypto: opening the request's two MESSAGE boxes and
// sealing the reply's two. The client's sealing happens with the timer
// stopped.
func BenchmarkPredictTransportCPU(b *testing.B) {
	reply := make([]byte, predictReplySize)
	h := HandlerFunc(func(_ context.Context, _ Request, dst []byte) []byte { return append(dst, reply...) })
	request := make([]byte, predictRequestSize)
	b.Run("NULL", func(b *testing.B) {
		cfg, err := Config{Logger: discardLogger()}.withDefaults()
		if err != nil {
			b.Fatal(err)
		}
		conn := &loopConn{msg: encodeMsg(nil, request), left: b.N}
		s := newSession(nil, newShared(cfg), cfg, h, conn)
		benchServe(b, s)
	})
	b.Run("CURVE", func(b *testing.B) {
		k := newCurveKeys(b)
		cfg, err := Config{Logger: discardLogger(), Curve: &CurveConfig{Secret: k.serverSec}}.withDefaults()
		if err != nil {
			b.Fatal(err)
		}
		client, server := curveSessions(b, k)
		conn := &sealingConn{b: b, client: client, frames: [][]byte{nil, request}, left: b.N}
		s := newSession(nil, newShared(cfg), cfg, h, conn)
		s.sec = server
		benchServe(b, s)
	})
}

// benchServe times s serving its connection's b.N predict requests to
// EOF, the same measurement for the NULL and CURVE sessions.
func benchServe(b *testing.B, s *session) {
	b.Helper()
	b.SetBytes(predictRequestSize)
	b.ReportAllocs()
	b.ResetTimer()
	if err := s.serve(context.Background()); !errors.Is(err, io.EOF) {
		b.Fatalf("serve: %v", err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/predict")
}

// curveSessions runs a CURVE handshake in memory and returns both ends.
func curveSessions(t testing.TB, k curveKeys) (client, server *curve.Session) {
	t.Helper()
	c := curve.NewClient(k.serverPub, k.clientPub, k.clientSec, nil)
	srv := curve.NewServer(k.serverSec, nil, nil)
	hello, err := c.Hello()
	if err != nil {
		t.Fatal(err)
	}
	welcome, err := srv.Welcome(hello)
	if err != nil {
		t.Fatal(err)
	}
	initiate, err := c.Initiate(welcome, ourMetadata)
	if err != nil {
		t.Fatal(err)
	}
	ready, _, _, server, err := srv.Ready(initiate, ourMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if _, client, err = c.Ready(ready); err != nil {
		t.Fatal(err)
	}
	return client, server
}

// sealingConn is a fuzzConn whose peer sends the same message, sealed
// afresh (new nonces) left times, then EOF. Sealing runs with the
// benchmark timer stopped, ringSize messages at a time.
type sealingConn struct {
	fuzzConn
	b      *testing.B
	client *curve.Session
	frames [][]byte
	ring   []byte
	pos    int
	left   int // messages still to seal
}

const ringSize = 64

func (c *sealingConn) Read(p []byte) (int, error) {
	if c.pos == len(c.ring) {
		if c.left == 0 {
			return 0, io.EOF
		}
		c.b.StopTimer()
		c.ring, c.pos = c.ring[:0], 0
		for i := 0; i < ringSize && c.left > 0; i, c.left = i+1, c.left-1 {
			c.ring = sealMsgInto(c.b, c.ring, c.client, c.frames...)
		}
		c.b.StartTimer()
	}
	n := copy(p, c.ring[c.pos:])
	c.pos += n
	return n, nil
}

// sealMsgInto is sealMsg appending to dst.
func sealMsgInto(t testing.TB, dst []byte, sess *curve.Session, frames ...[]byte) []byte {
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags = curve.FlagMore
		}
		dst = wire.AppendHeader(dst, 0, len(f)+curve.MessageOverhead)
		var err error
		if dst, err = sess.Seal(dst, flags, f); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// BenchmarkCurveRoundTrip is BenchmarkRoundTrip's 37 KiB case with CURVE:
// one predict-sized request and a 512-byte reply over loopback TCP. The
// client's crypto (seal the request, open the reply) is part of each round
// trip, as it is for a real client.
func BenchmarkCurveRoundTrip(b *testing.B) {
	for _, mech := range []string{"NULL", "CURVE"} {
		b.Run(mech, func(b *testing.B) {
			reply := make([]byte, predictReplySize)
			h := HandlerFunc(func(_ context.Context, _ Request, dst []byte) []byte { return append(dst, reply...) })
			k := newCurveKeys(b)
			cfg := Config{Logger: discardLogger()}
			if mech == "CURVE" {
				cfg.Curve = &CurveConfig{Secret: k.serverSec}
			}
			srv := startServer(b, cfg, h)
			p := dialRaw(b, srv)
			var sess *curve.Session
			if mech == "CURVE" {
				sess = p.curveHandshake(k, "REQ")
			} else {
				p.handshake(1, "REQ")
			}
			_ = p.conn.SetDeadline(time.Time{})
			request := make([]byte, predictRequestSize)
			frames := [][]byte{nil, request}
			want := len(encodeMsg(nil, reply))
			if sess != nil {
				want += 2 * curve.MessageOverhead
			}
			in := make([]byte, want)
			var out, plain []byte
			b.SetBytes(predictRequestSize)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if sess != nil {
					out = sealMsgInto(b, out[:0], sess, frames...)
				} else {
					out = append(out[:0], encodeMsg(frames...)...)
				}
				if _, err := p.conn.Write(out); err != nil {
					b.Fatal(err)
				}
				if _, err := readFullConn(p, in); err != nil {
					b.Fatal(err)
				}
				if sess != nil {
					if _, plain, err := sess.Open(plain[:0], in[2:2+curve.MessageOverhead]); err != nil || len(plain) != 0 {
						b.Fatalf("delimiter: %v", err)
					}
					if _, _, err := sess.Open(plain[:0], in[2+curve.MessageOverhead+9:]); err != nil {
						b.Fatalf("reply: %v", err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/roundtrip")
		})
	}
}
