package zmtp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"ramanserve/server/zmtp/wire"
	"strings"
	"testing"
	"time"
)

// ioDeadline bounds every blocking step of a test, to tell "at once"
// from "never": a passing test never waits it out. 1 s was too little
// for a CURVE handshake under the race detector beside a second make
// test.
const ioDeadline = 10 * time.Second

// echoHandler replies "echo:" followed by the body frames joined with "|", or
// "error:<err>" when the request carries an error.
var echoHandler = HandlerFunc(func(_ context.Context, req Request, dst []byte) []byte {
	if req.Err != nil {
		return append(append(dst, "error:"...), req.Err.Error()...)
	}
	dst = append(dst, "echo:"...)
	for i, f := range req.Frames {
		if i > 0 {
			dst = append(dst, '|')
		}
		dst = append(dst, f...)
	}
	return dst
})

// testLogger sends server logs to the test log, so failures come with context.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startServer listens on a free loopback port and serves until the test ends;
// cleanup shuts it down and checks that Serve returned nil.
func startServer(t testing.TB, cfg Config, h Handler) *Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	srv, err := Listen("tcp://127.0.0.1:0", cfg, h)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve returned %v, want nil", err)
			}
		case <-time.After(30 * time.Second): // Serve returns at once: generous for a busy machine
			t.Errorf("Serve did not return after Shutdown")
		}
	})
	return srv
}

// waitFor polls cond until it holds or the deadline passes. Counters are
// updated just after the wire event a test observes, hence the polling.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rawPeer is a hand-driven ZMTP client, able to misbehave on purpose.
type rawPeer struct {
	t    testing.TB
	conn net.Conn
	br   *bufio.Reader
}

func dialRaw(t testing.TB, srv *Server) *rawPeer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", srv.Addr().String(), ioDeadline)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &rawPeer{t: t, conn: conn, br: bufio.NewReader(conn)}
}

func (p *rawPeer) write(b []byte) {
	p.t.Helper()
	_ = p.conn.SetWriteDeadline(time.Now().Add(ioDeadline))
	if _, err := p.conn.Write(b); err != nil {
		p.t.Fatalf("write: %v", err)
	}
}

// clientGreeting builds a 64-byte greeting with the given version and
// mechanism, and libzmq-style non-zero padding.
func clientGreeting(major, minor byte, mechanism string) []byte {
	g := make([]byte, wire.GreetingSize)
	g[0] = 0xFF
	binary.BigEndian.PutUint64(g[1:9], 1) // what libzmq writes: identity size + 1
	g[9] = 0x7F
	g[10], g[11] = major, minor
	copy(g[12:32], mechanism)
	return g
}

// readServerGreeting reads and checks the server's greeting.
func (p *rawPeer) readServerGreeting() {
	p.t.Helper()
	var g [wire.GreetingSize]byte
	_ = p.conn.SetReadDeadline(time.Now().Add(ioDeadline))
	if _, err := io.ReadFull(p.br, g[:]); err != nil {
		p.t.Fatalf("read server greeting: %v", err)
	}
	if g[0] != 0xFF || g[9] != 0x7F || g[10] != 3 || g[11] != 1 || string(g[12:16]) != "NULL" || g[16] != 0 {
		p.t.Fatalf("unexpected server greeting % x", g)
	}
}

func readyCommand(socketType string) []byte {
	return wire.AppendCommand(nil, wire.CmdReady, wire.AppendProperties(nil, []wire.Property{
		{Name: "Socket-Type", Value: []byte(socketType)},
		{Name: "Identity", Value: nil},
	}))
}

// handshake completes a well-formed handshake as the given socket type.
func (p *rawPeer) handshake(minor byte, socketType string) {
	p.t.Helper()
	p.write(clientGreeting(3, minor, "NULL"))
	p.readServerGreeting()
	p.write(readyCommand(socketType))
	name, data := p.readCommand()
	if name != wire.CmdReady {
		p.t.Fatalf("got %s command, want READY", name)
	}
	props, err := wire.ParseProperties(data)
	if err != nil {
		p.t.Fatalf("server READY: %v", err)
	}
	if st, _ := wire.LookupProperty(props, "socket-type"); string(st) != "REP" {
		p.t.Fatalf("server Socket-Type %q, want REP", st)
	}
}

type frame struct {
	flags byte
	body  []byte
}

func (p *rawPeer) readFrame() (frame, error) {
	_ = p.conn.SetReadDeadline(time.Now().Add(ioDeadline))
	flags, err := p.br.ReadByte()
	if err != nil {
		return frame{}, err
	}
	var size uint64
	if flags&wire.FlagLong != 0 {
		var b [8]byte
		if _, err := io.ReadFull(p.br, b[:]); err != nil {
			return frame{}, err
		}
		size = binary.BigEndian.Uint64(b[:])
	} else {
		b, err := p.br.ReadByte()
		if err != nil {
			return frame{}, err
		}
		size = uint64(b)
	}
	if size > 64<<20 {
		return frame{}, fmt.Errorf("server sent a %d-byte frame", size)
	}
	body := make([]byte, size)
	_, err = io.ReadFull(p.br, body)
	return frame{flags: flags, body: body}, err
}

// readCommand reads one frame that must be a command.
func (p *rawPeer) readCommand() (string, []byte) {
	p.t.Helper()
	f, err := p.readFrame()
	if err != nil {
		p.t.Fatalf("read command: %v", err)
	}
	if f.flags&wire.FlagCommand == 0 {
		p.t.Fatalf("got a message frame %q, want a command", f.body)
	}
	name, data, err := wire.ParseCommand(f.body)
	if err != nil {
		p.t.Fatalf("server command: %v", err)
	}
	return name, data
}

// expectErrorThenClose asserts the server sends an ERROR whose reason
// contains want, then closes the connection.
func (p *rawPeer) expectErrorThenClose(want string) {
	p.t.Helper()
	name, data := p.readCommand()
	if name != wire.CmdError {
		p.t.Fatalf("got %s, want ERROR", name)
	}
	if len(data) < 1 || int(data[0]) != len(data)-1 {
		p.t.Fatalf("malformed ERROR reason % x", data)
	}
	if reason := string(data[1:]); !strings.Contains(reason, want) {
		p.t.Fatalf("ERROR reason %q, want it to contain %q", reason, want)
	}
	p.expectClosed()
}

// expectClosed asserts the server closes the connection (EOF or reset)
// without sending anything more.
func (p *rawPeer) expectClosed() {
	p.t.Helper()
	_ = p.conn.SetReadDeadline(time.Now().Add(2 * ioDeadline))
	b, err := p.br.ReadByte()
	if err == nil {
		p.t.Fatalf("server sent %#x, want the connection closed", b)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		p.t.Fatalf("connection still open after %v", 2*ioDeadline)
	}
}

// sendMsg writes one message made of the given frames, in one write.
func (p *rawPeer) sendMsg(frames ...[]byte) {
	p.t.Helper()
	p.write(encodeMsg(frames...))
}

func encodeMsg(frames ...[]byte) []byte {
	var b []byte
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags = wire.FlagMore
		}
		b = wire.AppendFrame(b, flags, f)
	}
	return b
}

// recvMsg reads frames up to the end of one message; commands are returned
// to the caller via cmds and skipped.
func (p *rawPeer) recvMsg() (msg [][]byte, cmds []string) {
	p.t.Helper()
	for {
		f, err := p.readFrame()
		if err != nil {
			p.t.Fatalf("read reply: %v", err)
		}
		if f.flags&wire.FlagCommand != 0 {
			name, _, _ := wire.ParseCommand(f.body)
			cmds = append(cmds, name)
			continue
		}
		msg = append(msg, f.body)
		if f.flags&wire.FlagMore == 0 {
			return msg, cmds
		}
	}
}

// assertFrames compares a received message with the expected frames.
func assertFrames(t testing.TB, got [][]byte, want ...string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = string(got[i]) == want[i]
	}
	if !ok {
		t.Fatalf("got frames %q, want %q", got, want)
	}
}

// probe checks that a well-behaved REQ client is served promptly: it connects,
// handshakes and does one round trip. The latency is logged, and asserted
// only against a bound that tells an answer from none, so that a machine
// busy with a second make test does not fail it (make bench measures it).
func probe(t testing.TB, srv *Server) {
	t.Helper()
	start := time.Now()
	p := dialRaw(t, srv)
	p.handshake(1, "REQ")
	p.sendMsg(nil, []byte("probe"))
	reply, _ := p.recvMsg()
	elapsed := time.Since(start)
	assertFrames(t, reply, "", "echo:probe")
	t.Logf("probe: connect + handshake + round trip in %v", elapsed)
	if elapsed > 10*time.Second {
		t.Fatalf("probe took %v, want an answer (typically under 50ms)", elapsed)
	}
	_ = p.conn.Close()
}

// bytesOf is shorthand for building frame lists in tables.
func bytesOf(frames ...string) [][]byte {
	out := make([][]byte, len(frames))
	for i, f := range frames {
		out[i] = []byte(f)
	}
	return out
}

var _ = bytes.Equal
