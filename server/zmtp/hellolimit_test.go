package zmtp

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// dialRawFrom is dialRaw from the local address ip (any 127/8 address
// reaches a loopback listener on Linux).
func dialRawFrom(t testing.TB, srv *Server, ip string) *rawPeer {
	t.Helper()
	d := net.Dialer{Timeout: ioDeadline, LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := d.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &rawPeer{t: t, conn: conn, br: bufio.NewReader(conn)}
}

// TestCurveHelloRateLimit: a source address gets its burst of HELLOs
// answered and then ERROR "300" (the bucket refills too slowly here to
// matter); once its bucket is empty its next connection is closed at
// accept; a client from another address completes its handshake and is
// served at once.
func TestCurveHelloRateLimit(t *testing.T) {
	k := newCurveKeys(t)
	const burst = 3
	srv := startServer(t, Config{Curve: &CurveConfig{Secret: k.serverSec, HelloRate: 0.001, HelloBurst: burst}}, echoHandler)
	// burst+1 connections, admitted while the bucket is full, then a
	// HELLO on each: the last one is beyond the burst.
	peers := make([]*rawPeer, burst+1)
	for i := range peers {
		peers[i] = dialRawFrom(t, srv, "127.0.0.2")
		peers[i].write(clientGreeting(3, 1, "CURVE"))
		peers[i].readCurveServerGreeting()
	}
	for i, p := range peers {
		c := curve.NewClient(k.serverPub, k.strangerPub, k.strangerSec, nil)
		hello, err := c.Hello()
		if err != nil {
			t.Fatal(err)
		}
		p.write(appendSealedCommand(nil, hello))
		if i == burst {
			p.expectErrorThenClose(helloTemporaryFailure)
			break
		}
		if f, err := p.readFrame(); err != nil || f.flags != wire.FlagCommand {
			t.Fatalf("HELLO %d within the burst: flags %#x, %v; want a WELCOME", i+1, f.flags, err)
		}
	}
	late := dialRawFrom(t, srv, "127.0.0.2")
	late.expectClosed()

	other := dialRawFrom(t, srv, "127.0.0.1")
	sess := other.curveHandshake(k, "REQ")
	other.write(sealMsg(t, sess, nil, []byte("still served")))
	msg, _ := other.recvSealed(sess)
	assertFrames(t, msg, "", "echo:still served")
	if st := srv.Stats(); st.CurveHellosLimited != 2 {
		t.Fatalf("CurveHellosLimited = %d, want 2 (one HELLO, one connection)", st.CurveHellosLimited)
	}
}

// TestHelloLimiterBounds: the table forgets addresses whose bucket has
// refilled, holds at most maxHelloSources, sends newcomers beyond that
// to the shared overflow bucket, and counts an IPv6 /64 as one source.
func TestHelloLimiterBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	h := newHelloLimiter(10, 2)
	addr := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 1} }

	if !h.allow(addr("2001:db8::1"), now) || !h.allow(addr("2001:db8::2"), now) || h.allow(addr("2001:db8::ffff"), now) {
		t.Fatal("three HELLOs from one IPv6 /64 at once: want the burst of 2, then a refusal")
	}
	if !h.allow(addr("2001:db8:0:1::1"), now) {
		t.Fatal("another /64 shares the first one's bucket")
	}
	if !h.allow(addr("::ffff:192.0.2.1"), now) || !h.allow(addr("192.0.2.1"), now) || h.allow(addr("192.0.2.1"), now) {
		t.Fatal("an IPv4-mapped address and its IPv4 form are not one source")
	}
	h.forgetIdle(now.Add(time.Second)) // every bucket full again
	if n := h.size(); n != 0 {
		t.Fatalf("%d sources remembered after their buckets refilled, want 0", n)
	}

	for i := range maxHelloSources {
		if !h.allow(addr(fmt.Sprintf("10.%d.%d.1", i/256, i%256)), now) {
			t.Fatalf("source %d refused its first HELLO", i)
		}
	}
	if n := h.size(); n != maxHelloSources {
		t.Fatalf("%d sources, want %d", n, maxHelloSources)
	}
	// Newcomers share the overflow bucket: its burst, then refusals.
	if !h.allow(addr("198.51.100.1"), now) || !h.allow(addr("198.51.100.2"), now) || h.allow(addr("198.51.100.3"), now) {
		t.Fatal("newcomers at the cap: want the overflow bucket's burst of 2, then a refusal")
	}
	if n := h.size(); n != maxHelloSources {
		t.Fatalf("the table grew past its bound: %d", n)
	}
	if newHelloLimiter(-1, 0) != nil {
		t.Fatal("a negative rate should turn the limit off")
	}
}
