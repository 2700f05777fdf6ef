package zmtp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"ramanserve/server/zmtp/wire"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

func TestRequestReply(t *testing.T) {
	srv := startServer(t, Config{}, echoHandler)
	cases := []struct {
		name       string
		minor      byte
		socketType string
		send       [][]byte
		want       []string
	}{
		{"REQ over ZMTP 3.1", 1, "REQ", bytesOf("", "hello"), []string{"", "echo:hello"}},
		{"REQ over ZMTP 3.0", 0, "REQ", bytesOf("", "hello"), []string{"", "echo:hello"}},
		{"DEALER envelope echoed", 1, "DEALER", bytesOf("route-a", "route-b", "", "x"), []string{"route-a", "route-b", "", "echo:x"}},
		{"several body frames reach the handler", 1, "REQ", bytesOf("", "a", "b"), []string{"", "echo:a|b"}},
		{"empty body", 1, "REQ", bytesOf("", ""), []string{"", "echo:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := dialRaw(t, srv)
			p.handshake(tc.minor, tc.socketType)
			for i := 0; i < 3; i++ {
				p.sendMsg(tc.send...)
				got, _ := p.recvMsg()
				assertFrames(t, got, tc.want...)
			}
		})
	}
}

func TestDealerPipelinedRequestsAnsweredInOrder(t *testing.T) {
	srv := startServer(t, Config{}, echoHandler)
	p := dialRaw(t, srv)
	p.handshake(1, "DEALER")
	var burst []byte
	for _, body := range []string{"one", "two", "three", "four"} {
		burst = append(burst, encodeMsg(nil, []byte(body))...)
	}
	p.write(burst)
	for _, want := range []string{"one", "two", "three", "four"} {
		got, _ := p.recvMsg()
		assertFrames(t, got, "", "echo:"+want)
	}
}

func TestRefusesOtherSocketTypes(t *testing.T) {
	srv := startServer(t, Config{}, echoHandler)
	for _, st := range []string{"PUB", "SUB", "REP", "ROUTER", "PUSH"} {
		t.Run(st, func(t *testing.T) {
			p := dialRaw(t, srv)
			p.write(clientGreeting(3, 1, "NULL"))
			p.readServerGreeting()
			p.write(readyCommand(st))
			// The server's own READY may come first; then ERROR and close.
			f, err := p.readFrame()
			if err != nil {
				t.Fatal(err)
			}
			if name, _, _ := wire.ParseCommand(f.body); name != wire.CmdReady {
				p.br = bufio.NewReader(io.MultiReader(bytes.NewReader(append(wire.AppendHeader(nil, f.flags, len(f.body)), f.body...)), p.br))
			}
			p.expectErrorThenClose("socket type")
		})
	}
	probe(t, srv)
}

func TestPingIsAnsweredWithPong(t *testing.T) {
	srv := startServer(t, Config{}, echoHandler)
	p := dialRaw(t, srv)
	p.handshake(1, "REQ")
	ping := []byte{0, 50} // TTL 5 s in deciseconds
	ping = append(ping, "ctx-42"...)
	p.write(wire.AppendCommand(nil, wire.CmdPing, ping))
	name, data := p.readCommand()
	if name != wire.CmdPong || string(data) != "ctx-42" {
		t.Fatalf("got %s %q, want PONG \"ctx-42\"", name, data)
	}
	// Requests still work after heartbeats.
	p.sendMsg(nil, []byte("after"))
	got, _ := p.recvMsg()
	assertFrames(t, got, "", "echo:after")
}

func TestOversizedMessageStillGetsOneReply(t *testing.T) {
	srv := startServer(t, Config{MaxMessageSize: 1024}, echoHandler)
	p := dialRaw(t, srv)
	p.handshake(1, "REQ")
	p.sendMsg(nil, bytes.Repeat([]byte("x"), 4096))
	got, _ := p.recvMsg()
	assertFrames(t, got, "", "error:"+ErrMessageTooLarge.Error())
	p.sendMsg(nil, []byte("small"))
	got, _ = p.recvMsg()
	assertFrames(t, got, "", "echo:small")
}

// TestEnvelopeBeyondTheLimits: a large body behind a small DEALER
// envelope is answered with MESSAGE_TOO_LARGE through that envelope. When
// the limits are crossed before the delimiter, the envelope is lost and no
// reply could be routed: the server sends ERROR and closes instead.
func TestEnvelopeBeyondTheLimits(t *testing.T) {
	srv := startServer(t, Config{MaxMessageSize: 1024}, echoHandler)
	p := dialRaw(t, srv)
	p.handshake(1, "DEALER")
	p.sendMsg([]byte("route-1"), nil, bytes.Repeat([]byte("x"), 4096))
	got, _ := p.recvMsg()
	assertFrames(t, got, "route-1", "", "error:"+ErrMessageTooLarge.Error())

	big := dialRaw(t, srv)
	big.handshake(1, "DEALER")
	big.sendMsg(bytes.Repeat([]byte("e"), 4096), nil, []byte("ping"))
	big.expectClosedAfterCommands()

	many := dialRaw(t, srv)
	many.handshake(1, "DEALER")
	frames := make([][]byte, 0, MaxFramesPerMessage+3)
	for range MaxFramesPerMessage + 1 {
		frames = append(frames, []byte("h"))
	}
	many.sendMsg(append(frames, nil, []byte("ping"))...)
	many.expectClosedAfterCommands()

	probe(t, srv)
}

// TestHostilePeers: whatever a peer sends, the server stays up and a
// well-behaved client is still answered promptly.
func TestHostilePeers(t *testing.T) {
	srv := startServer(t, Config{HandshakeTimeout: 300 * time.Millisecond}, echoHandler)
	longHeader := func(size uint64) []byte {
		b := []byte{wire.FlagLong}
		return binary.BigEndian.AppendUint64(b, size)
	}
	cases := []struct {
		name string
		act  func(p *rawPeer)
	}{
		{"silent connection held open", func(p *rawPeer) {}},
		{"bad signature", func(p *rawPeer) {
			g := clientGreeting(3, 1, "NULL")
			g[0] = 'G' // e.g. an HTTP client: "GET / ..."
			p.write(g)
			p.expectClosedAfterGreeting()
		}},
		{"bad version", func(p *rawPeer) {
			p.write(clientGreeting(2, 0, "NULL"))
			p.expectClosedAfterGreeting()
		}},
		{"unsupported mechanism", func(p *rawPeer) {
			p.write(clientGreeting(3, 1, "CURVE"))
			p.expectClosedAfterGreeting()
		}},
		{"READY property name past the end", func(p *rawPeer) {
			p.write(clientGreeting(3, 1, "NULL"))
			p.readServerGreeting()
			p.write(wire.AppendCommand(nil, wire.CmdReady, []byte{200, 'S', 'o'}))
			p.expectClosedAfterCommands()
		}},
		{"READY property value length huge", func(p *rawPeer) {
			p.write(clientGreeting(3, 1, "NULL"))
			p.readServerGreeting()
			props := append([]byte{11}, "Socket-Type"...)
			props = binary.BigEndian.AppendUint32(props, 0xFFFFFFF0)
			p.write(wire.AppendCommand(nil, wire.CmdReady, append(props, "REQ"...)))
			p.expectClosedAfterCommands()
		}},
		{"READY truncated", func(p *rawPeer) {
			p.write(clientGreeting(3, 1, "NULL"))
			p.readServerGreeting()
			p.write([]byte{wire.FlagCommand, 40, 5, 'R', 'E', 'A'})
			_ = p.conn.(*net.TCPConn).CloseWrite()
			p.expectClosedAfterCommands()
		}},
		{"frame header claiming 1 TiB", func(p *rawPeer) {
			p.handshake(1, "REQ")
			p.write(longHeader(1 << 40))
			p.expectClosedAfterCommands()
		}},
		{"command header claiming 1 TiB", func(p *rawPeer) {
			p.handshake(1, "REQ")
			p.write(append([]byte{wire.FlagCommand | wire.FlagLong}, longHeader(1 << 40)[1:]...))
			p.expectClosedAfterCommands()
		}},
		{"random bytes after the handshake", func(p *rawPeer) {
			p.handshake(1, "REQ")
			rng := rand.New(rand.NewPCG(1, 2))
			junk := make([]byte, 4096)
			for i := range junk {
				junk[i] = byte(rng.UintN(256))
			}
			p.write(junk)
			// Whatever it made of them, the server must not hang on to a
			// peer speaking garbage forever; a close or replies are fine,
			// as long as the probe below is served.
		}},
		{"reserved flag bits", func(p *rawPeer) {
			p.handshake(1, "REQ")
			p.write([]byte{0x80, 1, 'x'})
			p.expectClosedAfterCommands()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := dialRaw(t, srv)
			tc.act(p)
			probe(t, srv)
			assertPromptRoundTrip(t, srv)
		})
	}
	if st := srv.Stats(); st.Panics != 0 {
		t.Fatalf("%d connection goroutines panicked", st.Panics)
	}
}

func TestHalfOpenConnectionsDoNotBlockOthers(t *testing.T) {
	srv := startServer(t, Config{HandshakeTimeout: 2 * time.Second}, echoHandler)
	for i := 0; i < 50; i++ {
		p := dialRaw(t, srv)
		p.write(clientGreeting(3, 1, "NULL")[:10]) // a partial greeting, then silence
	}
	probe(t, srv)
	assertPromptRoundTrip(t, srv)
}

func TestHandshakeDeadlineClosesSilentPeers(t *testing.T) {
	srv := startServer(t, Config{HandshakeTimeout: 100 * time.Millisecond}, echoHandler)
	p := dialRaw(t, srv)
	p.expectClosedAfterGreeting()
}

// TestMaxConnections: at the cap, with every peer protected (each has just
// had a reply), a newcomer is closed at once.
func TestMaxConnections(t *testing.T) {
	srv := startServer(t, Config{MaxConnections: 3}, echoHandler)
	for i := 0; i < 3; i++ {
		p := dialRaw(t, srv)
		p.handshake(1, "REQ")
		p.sendMsg(nil, []byte("hi"))
		reply, _ := p.recvMsg()
		assertFrames(t, reply, "", "echo:hi")
	}
	waitFor(t, "3 connections", func() bool { return srv.Stats().OpenConnections == 3 })
	extra := dialRaw(t, srv)
	extra.expectClosedAfterGreeting()
	if st := srv.Stats(); st.RejectedConnections == 0 || st.Evictions != 0 {
		t.Fatalf("rejected %d, evicted %d; want a rejection and no eviction", st.RejectedConnections, st.Evictions)
	}
}

func TestShutdownFinishesInFlightRequests(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	slow := HandlerFunc(func(ctx context.Context, req Request, dst []byte) []byte {
		started <- struct{}{}
		<-release
		return append(dst, "slow-done"...)
	})
	srv, err := Listen("tcp://127.0.0.1:0", Config{Logger: testLogger(t)}, slow)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(context.Background())
	p := dialRaw(t, srv)
	p.handshake(1, "REQ")
	p.sendMsg(nil, []byte("work"))
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	// New connections are refused once shutdown began.
	waitFor(t, "listener closed", func() bool {
		c, err := net.DialTimeout("tcp", srv.Addr().String(), 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	close(release)
	got, _ := p.recvMsg()
	assertFrames(t, got, "", "slow-done")
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestZmq4Clients(t *testing.T) {
	srv := startServer(t, Config{}, echoHandler)
	endpoint := "tcp://" + srv.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	req := zmq4.NewReq(ctx)
	defer req.Close()
	if err := req.Dial(endpoint); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := req.Send(zmq4.NewMsgString("ping")); err != nil {
			t.Fatal(err)
		}
		msg, err := req.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(msg.Bytes()); got != "echo:ping" {
			t.Fatalf("REQ got %q", got)
		}
	}

	dealer := zmq4.NewDealer(ctx)
	defer dealer.Close()
	if err := dealer.Dial(endpoint); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"a", "b", "c"} {
		if err := dealer.Send(zmq4.NewMsgFrom([]byte{}, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	for _, body := range []string{"a", "b", "c"} {
		msg, err := dealer.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Frames) != 2 || len(msg.Frames[0]) != 0 || string(msg.Frames[1]) != "echo:"+body {
			t.Fatalf("DEALER got %q", msg.Frames)
		}
	}
}

// TestConcurrentClientsAreServedInParallel: a handler blocked for one
// connection does not hold up another.
func TestConcurrentClientsAreServedInParallel(t *testing.T) {
	block := make(chan struct{})
	h := HandlerFunc(func(ctx context.Context, req Request, dst []byte) []byte {
		if string(req.Frames[0]) == "block" {
			<-block
		}
		return echoHandler(ctx, req, dst)
	})
	srv := startServer(t, Config{}, h)
	blocked := dialRaw(t, srv)
	blocked.handshake(1, "REQ")
	blocked.sendMsg(nil, []byte("block"))
	probe(t, srv)
	close(block)
	got, _ := blocked.recvMsg()
	assertFrames(t, got, "", "echo:block")
}

// assertPromptRoundTrip asserts that an established client gets a reply
// within 50 ms: the best of five round trips, so that one scheduling hiccup
// on a busy CI machine does not fail the test.
func assertPromptRoundTrip(t *testing.T, srv *Server) {
	t.Helper()
	p := dialRaw(t, srv)
	p.handshake(1, "REQ")
	best := time.Hour
	for i := 0; i < 5; i++ {
		start := time.Now()
		p.sendMsg(nil, []byte("rt"))
		got, _ := p.recvMsg()
		assertFrames(t, got, "", "echo:rt")
		best = min(best, time.Since(start))
	}
	if best > 50*time.Millisecond {
		t.Fatalf("best round trip %v, want <= 50ms", best)
	}
}

// expectClosedAfterGreeting reads the server's greeting if it sent one and
// then asserts the connection is closed.
func (p *rawPeer) expectClosedAfterGreeting() {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(2 * ioDeadline))
	var g [wire.GreetingSize]byte
	if _, err := io.ReadFull(p.br, g[:]); err != nil {
		if isTimeout(err) {
			p.t.Fatal("connection still open")
		}
		return
	}
	p.expectClosedAfterCommands()
}

// expectClosedAfterCommands skips command frames (READY, ERROR) and
// asserts the connection then closes.
func (p *rawPeer) expectClosedAfterCommands() {
	p.t.Helper()
	for {
		f, err := p.readFrame()
		if err != nil {
			if isTimeout(err) {
				p.t.Fatal("connection still open")
			}
			return
		}
		if f.flags&wire.FlagCommand == 0 {
			p.t.Fatalf("server sent a message frame %q to a misbehaving peer", f.body)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fuzzConn is a net.Conn whose peer sends the fuzz input and then EOF.
type fuzzConn struct {
	r io.Reader
}

func (c *fuzzConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *fuzzConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *fuzzConn) Close() error                     { return nil }
func (c *fuzzConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *fuzzConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzSession feeds arbitrary bytes, after a valid greeting and READY, or
// from the very first byte, to a server session. Nothing may panic, and
// nothing may allocate beyond the configured limits (checked by the race of
// a 1 MiB message limit against claimed sizes).
func FuzzSession(f *testing.F) {
	valid := append(clientGreeting(3, 1, "NULL"), readyCommand("REQ")...)
	f.Add(false, []byte{})
	f.Add(true, encodeMsg(nil, []byte("hello")))
	f.Add(true, wire.AppendCommand(nil, wire.CmdPing, []byte{0, 10, 'c'}))
	f.Add(true, []byte{wire.FlagLong, 0, 0, 1, 0, 0, 0, 0, 0})
	f.Add(true, append([]byte{wire.FlagMore, 0, wire.FlagLong, 0, 0, 0, 0, 0, 0x0F, 0xFF, 0xFF}, "abc"...))
	f.Add(true, append([]byte{wire.FlagCommand, 8, 4, 'P', 'I', 'N', 'G', 0, 0}, encodeMsg(nil, []byte("x"))...))
	f.Add(false, clientGreeting(3, 0, "NULL"))
	f.Add(false, append(clientGreeting(3, 1, "NULL"), wire.AppendCommand(nil, wire.CmdReady, []byte{200, 'S'})...))
	var mu sync.Mutex
	f.Fuzz(func(t *testing.T, afterHandshake bool, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		input := data
		if afterHandshake {
			input = append(append([]byte(nil), valid...), data...)
		}
		cfg, err := Config{MaxMessageSize: 1 << 20, DiscardLimit: 4 << 20, MaxPartialBytes: 96 << 10}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		sh := newShared(cfg)
		s := newSession(nil, sh, cfg, echoHandler, &fuzzConn{r: bytes.NewReader(input)})
		if err := s.handshake(); err == nil {
			_ = s.serve(context.Background())
		}
		// The pool never lends more than its limit, and gets everything back.
		if used := sh.partialUsed.Load(); used > cfg.MaxPartialBytes || used != s.reserved+s.cmdReserved+s.encReserved {
			t.Fatalf("pool lent %d (limit %d), session holds %d+%d+%d", used, cfg.MaxPartialBytes, s.reserved, s.cmdReserved, s.encReserved)
		}
		if int64(cap(s.msgBuf)) > ownBufferSize+s.reserved {
			t.Fatalf("message buffer of %d bytes with %d reserved", cap(s.msgBuf), s.reserved)
		}
		s.releaseBuffers()
		if used := sh.partialUsed.Load(); used != 0 {
			t.Fatalf("%d bytes still lent after the session ended", used)
		}
	})
}
