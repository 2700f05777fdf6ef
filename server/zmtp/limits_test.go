package zmtp

import (
	"bytes"
	"encoding/binary"
	"ramanserve/server/zmtp/wire"
	"strings"
	"testing"
	"time"
)

// longFrameHeader is the header of a data frame of size bytes.
func longFrameHeader(flags byte, size uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{flags | wire.FlagLong}, size)
}

// roundTrip sends one REQ-style request and checks the echo.
func (p *rawPeer) roundTrip(body string) {
	p.t.Helper()
	p.sendMsg(nil, []byte(body))
	reply, _ := p.recvMsg()
	assertFrames(p.t, reply, "", "echo:"+body)
}

// expectOpen asserts the server neither closed the connection nor sent
// anything within d.
func (p *rawPeer) expectOpen(d time.Duration) {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(d))
	b, err := p.br.ReadByte()
	if err == nil {
		p.t.Fatalf("server sent %#x, want silence", b)
	}
	if !isTimeout(err) {
		p.t.Fatalf("connection closed (%v), want it open", err)
	}
}

func TestSilentPeersAreEvictedOldestFirst(t *testing.T) {
	srv := startServer(t, Config{MaxConnections: 3}, echoHandler)
	var silent []*rawPeer
	for range 3 {
		p := dialRaw(t, srv)
		p.handshake(1, "REQ")
		silent = append(silent, p)
		time.Sleep(250 * time.Millisecond) // a few coarse-clock ticks apart
	}
	waitFor(t, "3 connections", func() bool { return srv.Stats().OpenConnections == 3 })

	newcomer := dialRaw(t, srv)
	newcomer.handshake(1, "REQ")
	newcomer.roundTrip("new")
	silent[0].expectClosed()
	silent[1].expectOpen(100 * time.Millisecond)
	if st := srv.Stats(); st.Evictions != 1 || st.RejectedConnections != 0 {
		t.Fatalf("evictions %d, rejected %d; want 1 and 0", st.Evictions, st.RejectedConnections)
	}
}

// TestServedAndHeartbeatingPeersSurviveAFlood: a client that had a reply and
// then went silent, and one that only PINGs, keep their connections while
// silent peers churn through the rest of the table.
func TestServedAndHeartbeatingPeersSurviveAFlood(t *testing.T) {
	srv := startServer(t, Config{MaxConnections: 8}, echoHandler)
	rig := dialRaw(t, srv)
	rig.handshake(1, "REQ")
	rig.roundTrip("spectrum 1")
	beating := dialRaw(t, srv)
	beating.handshake(1, "REQ")
	beating.write(wire.AppendCommand(nil, wire.CmdPing, []byte{0, 50})) // TTL 5 s
	if name, _ := beating.readCommand(); name != wire.CmdPong {
		t.Fatalf("got %s, want PONG", name)
	}

	for range 40 {
		dialRaw(t, srv).handshake(1, "REQ")
	}
	st := srv.Stats()
	if st.Evictions < 40-6 || st.OpenConnections > 8 {
		t.Fatalf("evictions %d, open %d; want >= 34 evictions and at most 8 open", st.Evictions, st.OpenConnections)
	}
	rig.roundTrip("spectrum 2")
	beating.roundTrip("after pings")
}

// TestPingProtectionIsCapped: a PING claiming the largest TTL (6553.5 s)
// protects its peer from eviction for maxPingProtection, not for 109
// minutes of silence.
func TestPingProtectionIsCapped(t *testing.T) {
	srv := startServer(t, Config{MaxConnections: 4}, echoHandler)
	p := dialRaw(t, srv)
	p.handshake(1, "REQ")
	p.write(wire.AppendCommand(nil, wire.CmdPing, []byte{0xff, 0xff}))
	if name, _ := p.readCommand(); name != wire.CmdPong {
		t.Fatalf("got %s, want PONG", name)
	}
	srv.mu.Lock()
	var protected time.Duration
	for sess := range srv.sessions {
		protected = time.Duration(sess.heartbeatUntil.Load()-srv.shared.now()) * time.Millisecond
	}
	srv.mu.Unlock()
	if protected > maxPingProtection || protected < maxPingProtection-5*time.Second {
		t.Fatalf("a PING with TTL 6553.5 s protects its peer for %v, want about %v", protected, maxPingProtection)
	}
}

// TestNoEvictionMidMessage: a peer whose message is half received is never
// the one evicted; with nobody else evictable the newcomer is refused.
func TestNoEvictionMidMessage(t *testing.T) {
	srv := startServer(t, Config{MaxConnections: 2}, echoHandler)
	slow := dialRaw(t, srv)
	slow.handshake(1, "REQ")
	slow.write([]byte{wire.FlagMore, 0, 0, 10, 'h', 'a', 'l'}) // delimiter, then 3 of 10 bytes
	served := dialRaw(t, srv)
	served.handshake(1, "REQ")
	served.roundTrip("x")
	waitFor(t, "message in progress", func() bool {
		for _, w := range sessionStates(srv) {
			if phaseOf(w) == phaseReceiving {
				return true
			}
		}
		return false
	})

	dialRaw(t, srv).expectClosedAfterGreeting()
	slow.write([]byte("f-done!"))
	reply, _ := slow.recvMsg()
	assertFrames(t, reply, "", "echo:half-done!")
	if st := srv.Stats(); st.Evictions != 0 || st.RejectedConnections != 1 {
		t.Fatalf("evictions %d, rejected %d; want 0 and 1", st.Evictions, st.RejectedConnections)
	}
}

func sessionStates(srv *Server) []uint64 {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var out []uint64
	for s := range srv.sessions {
		out = append(out, s.state.Load())
	}
	return out
}

func TestFrameTimeoutCutsStalledPeersOnly(t *testing.T) {
	srv := startServer(t, Config{FrameTimeout: 300 * time.Millisecond}, echoHandler)
	idle := dialRaw(t, srv)
	idle.handshake(1, "REQ")
	idle.roundTrip("before")

	stalled := dialRaw(t, srv)
	stalled.handshake(1, "REQ")
	stalled.write(append(longFrameHeader(0, 1<<20-1), "abc"...))
	start := time.Now()
	stalled.expectClosed()
	if elapsed := time.Since(start); elapsed < 250*time.Millisecond {
		t.Fatalf("stalled peer closed after %v, before its frame timeout", elapsed)
	}
	stalledCmd := dialRaw(t, srv)
	stalledCmd.handshake(1, "REQ")
	stalledCmd.write([]byte{wire.FlagCommand, 8, 4, 'P', 'I'})
	stalledCmd.expectClosed()
	waitFor(t, "frame timeouts counted", func() bool { return srv.Stats().FrameTimeouts == 2 })

	// The idle peer waited between messages through all of that.
	idle.roundTrip("after")
	if st := srv.Stats(); st.ProtocolErrors != 0 || st.IdleTimeouts != 0 {
		t.Fatalf("frame timeouts counted as something else: %+v", st)
	}
}

// TestPartialBytesPool: stalled large frames hold nothing but the bytes sent,
// the pool caps what they can hold together, a message the pool cannot take
// is refused with a retryable error, and small messages always get through.
func TestPartialBytesPool(t *testing.T) {
	const limit = 256 << 10
	srv := startServer(t, Config{MaxPartialBytes: limit, FrameTimeout: 1500 * time.Millisecond}, echoHandler)

	// A header claiming 1 MiB and a few bytes reserve nothing.
	tease := dialRaw(t, srv)
	tease.handshake(1, "REQ")
	tease.write(append(longFrameHeader(0, 1<<20-1), "abc"...))

	// Peers that really send 200 KiB of a 1 MiB frame: the pool fills up.
	chunk := bytes.Repeat([]byte{'x'}, 200<<10)
	for range 4 {
		p := dialRaw(t, srv)
		p.handshake(1, "REQ")
		p.write(append(longFrameHeader(0, 1<<20-1), chunk...))
	}
	waitFor(t, "the pool to fill", func() bool { return srv.Stats().PartialBytes > limit/2 })
	if got := srv.Stats().PartialBytes; got > limit {
		t.Fatalf("%d bytes reserved, over the %d limit", got, limit)
	}

	big := dialRaw(t, srv)
	big.handshake(1, "REQ")
	big.sendMsg(nil, bytes.Repeat([]byte{'y'}, 300<<10))
	reply, _ := big.recvMsg()
	if len(reply) != 2 || !strings.Contains(string(reply[1]), "retry later") {
		t.Fatalf("reply %q, want the envelope and a retryable refusal", reply)
	}
	if srv.Stats().PartialBytesRefused == 0 {
		t.Fatal("refusal not counted")
	}
	spectrum := dialRaw(t, srv)
	spectrum.handshake(1, "REQ")
	body := strings.Repeat("s", 37<<10)
	spectrum.roundTrip(body)
	spectrum.roundTrip(body)

	waitFor(t, "the pool to empty once the stalled peers are cut", func() bool {
		return srv.Stats().PartialBytes == 0
	})
}

// TestPartialBytesAreReleasedAfterEachMessage: a large message reserves while
// it is held and gives it all back once the reply is written.
func TestPartialBytesAreReleasedAfterEachMessage(t *testing.T) {
	srv := startServer(t, Config{MaxPartialBytes: 2 << 20}, echoHandler)
	p := dialRaw(t, srv)
	p.handshake(1, "REQ")
	body := strings.Repeat("z", 900<<10)
	for range 3 {
		p.roundTrip(body)
		waitFor(t, "release", func() bool { return srv.Stats().PartialBytes == 0 })
	}
}

// TestLargeEnvelopeIsEchoed: a DEALER envelope bigger than the reply buffer
// is written straight from the message buffer, frame by frame.
func TestLargeEnvelopeIsEchoed(t *testing.T) {
	srv := startServer(t, Config{}, echoHandler)
	p := dialRaw(t, srv)
	p.handshake(1, "DEALER")
	route := bytes.Repeat([]byte{'r'}, 100<<10)
	p.sendMsg(route, nil, []byte("body"))
	reply, _ := p.recvMsg()
	if len(reply) != 3 || !bytes.Equal(reply[0], route) || len(reply[1]) != 0 || string(reply[2]) != "echo:body" {
		t.Fatalf("reply of %d frames, want the 100 KiB route, the delimiter and the echo", len(reply))
	}
	waitFor(t, "release", func() bool { return srv.Stats().PartialBytes == 0 })
}

// TestLargeCommandsDrawOnThePool: a command beyond 1 KiB is held from the
// shared pool; when the pool cannot spare it the peer gets an ERROR.
func TestLargeCommandsDrawOnThePool(t *testing.T) {
	srv := startServer(t, Config{MaxPartialBytes: 8 << 10}, echoHandler)
	unknown := func(n int) []byte { return wire.AppendCommand(nil, "FUTURE", make([]byte, n)) }

	ok := dialRaw(t, srv)
	ok.handshake(1, "REQ")
	ok.write(unknown(6 << 10)) // ignored, like any unknown command
	ok.roundTrip("still here")

	busy := dialRaw(t, srv)
	busy.handshake(1, "REQ")
	busy.write(unknown(32 << 10))
	busy.expectErrorThenClose("server busy")
	waitFor(t, "release", func() bool { return srv.Stats().PartialBytes == 0 })
}

// TestServedPeersBecomeEvictableAfterSilence: a peer that had a reply is
// protected for EvictableAfter, then goes like any other silent peer.
func TestServedPeersBecomeEvictableAfterSilence(t *testing.T) {
	srv := startServer(t, Config{MaxConnections: 1, EvictableAfter: 500 * time.Millisecond}, echoHandler)
	old := dialRaw(t, srv)
	old.handshake(1, "REQ")
	old.roundTrip("once")

	dialRaw(t, srv).expectClosedAfterGreeting() // protected: the newcomer is refused
	time.Sleep(800 * time.Millisecond)
	newcomer := dialRaw(t, srv)
	newcomer.handshake(1, "REQ")
	newcomer.roundTrip("in")
	old.expectClosed()
	if st := srv.Stats(); st.Evictions != 1 || st.RejectedConnections != 1 {
		t.Fatalf("evictions %d, rejected %d; want 1 and 1", st.Evictions, st.RejectedConnections)
	}
}
