package conformance

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Bounded connections on the prediction channel, against a real ramanserve
// process: silent peers cannot lock real clients out, stalled frames cannot
// hold memory, and a client that had a reply is never the one evicted. The
// attackers are raw TCP peers speaking just enough ZMTP; the clients are
// real libzmq REQ sockets (pyzmq) with reconnection off, so a connection the
// server cut shows as a timeout instead of being quietly replaced.

// zmtpGreeting is a ZMTP 3.1 NULL greeting, as a libzmq client sends it.
func zmtpGreeting() []byte {
	g := make([]byte, 64)
	g[0], g[9], g[10], g[11] = 0xFF, 0x7F, 3, 1
	copy(g[12:], "NULL")
	return g
}

// zmtpReadyREQ is a READY command announcing Socket-Type REQ.
func zmtpReadyREQ() []byte {
	body := append([]byte{5}, "READY"...)
	body = append(body, 11)
	body = append(body, "Socket-Type"...)
	body = binary.BigEndian.AppendUint32(body, 3)
	body = append(body, "REQ"...)
	return append([]byte{0x04, byte(len(body))}, body...)
}

// dialHandshaken connects to a "tcp://host:port" endpoint and completes the
// ZMTP NULL handshake as a REQ peer.
func dialHandshaken(endpoint string) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(endpoint, "tcp://"), 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(append(zmtpGreeting(), zmtpReadyREQ()...)); err != nil {
		conn.Close()
		return nil, err
	}
	// The server's greeting (64 bytes), then its READY as a short command frame.
	var buf [64 + 2 + 255]byte
	if _, err := io.ReadFull(conn, buf[:66]); err != nil {
		conn.Close()
		return nil, fmt.Errorf("server greeting and READY header: %w", err)
	}
	if buf[64] != 0x04 {
		conn.Close()
		return nil, fmt.Errorf("server sent frame flags %#x, want a short command", buf[64])
	}
	if _, err := io.ReadFull(conn, buf[66:66+int(buf[65])]); err != nil {
		conn.Close()
		return nil, fmt.Errorf("server READY: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// silentPeers opens n handshaken connections (16 at a time) that then say
// nothing. hold, when set, is written by each one after its handshake.
func silentPeers(t *testing.T, endpoint string, n int, hold []byte) []net.Conn {
	t.Helper()
	conns, cut := openPeers(t, endpoint, n, hold, false)
	if cut != 0 {
		t.Fatalf("%d silent peers cut during their handshake", cut)
	}
	return conns
}

// floodPeers is silentPeers for a table under eviction pressure: a peer may
// be evicted (by a later one) before its own handshake completes; those are
// counted in cut.
func floodPeers(t *testing.T, endpoint string, n int) (conns []net.Conn, cut int) {
	t.Helper()
	return openPeers(t, endpoint, n, nil, true)
}

func openPeers(t *testing.T, endpoint string, n int, hold []byte, mayBeCut bool) ([]net.Conn, int) {
	t.Helper()
	var cut atomic.Int64
	conns := make([]net.Conn, n)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := dialHandshaken(endpoint)
				if err == nil && hold != nil {
					_, err = c.Write(hold)
				}
				if err != nil && mayBeCut && isCut(err) {
					cut.Add(1)
					continue
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("peer %d: %w", i, err))
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	if err := firstErr.Load(); err != nil {
		t.Fatalf("opening %d silent peers: %v", n, err)
	}
	var open []net.Conn
	for _, c := range conns {
		if c != nil {
			open = append(open, c)
		}
	}
	return open, int(cut.Load())
}

// isCut reports an error that means the server closed the connection.
func isCut(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// closedByServer counts the connections the server has closed, giving each
// up to wait to show EOF.
func closedByServer(conns []net.Conn, wait time.Duration) int {
	var closed atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(wait))
			var b [1]byte
			if _, err := c.Read(b[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				closed.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(closed.Load())
}

// pySession is a running pyzmq_session.py client.
type pySession struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Scanner
	kill func() // ends the client; its stdout then ends too
}

type pyReply struct {
	Type    string  `json:"type"`
	OK      bool    `json:"ok"`
	Code    string  `json:"code"`
	Timeout bool    `json:"timeout"`
	MS      float64 `json:"ms"`
}

func startPySession(t *testing.T, endpoint string, heartbeatMS int) *pySession {
	t.Helper()
	py := debianPython(t, "zmq", "msgpack")
	opts, _ := json.Marshal(map[string]any{"endpoint": endpoint, "heartbeat_ms": heartbeatMS, "timeout_ms": 3000})
	cmd := exec.Command(py, "testdata/pyzmq_session.py", string(opts))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if stderr.Len() > 0 {
			t.Logf("pyzmq client stderr: %s", stderr.String())
		}
	})
	return &pySession{t: t, in: in, out: bufio.NewScanner(out), kill: func() { cmd.Process.Kill() }}
}

// do sends one command and returns the client's report.
func (s *pySession) do(cmd string) pyReply {
	s.t.Helper()
	if _, err := io.WriteString(s.in, cmd+"\n"); err != nil {
		s.t.Fatalf("pyzmq client: %v", err)
	}
	// The client answers within its own send and receive timeouts; past a
	// generous bound it is stuck, and the test fails instead of hanging.
	scanned := make(chan bool, 1)
	go func() { scanned <- s.out.Scan() }()
	select {
	case ok := <-scanned:
		if !ok {
			s.t.Fatalf("pyzmq client exited: %v", s.out.Err())
		}
	case <-time.After(60 * time.Second):
		s.kill()
		s.t.Fatalf("pyzmq client did not answer %q within 60 s", cmd)
	}
	var r pyReply
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		s.t.Fatalf("pyzmq client said %q: %v", s.out.Bytes(), err)
	}
	return r
}

// pongWait is how long a served client may wait for its pong before the
// test calls it starved or cut: a few ms on a quiet machine (each is
// logged); generous, because a test must pass on a busy machine.
const pongWait = 10 * time.Second

// expectPong sends a ping and requires the pong within limit.
func (s *pySession) expectPong(what string, limit time.Duration) pyReply {
	s.t.Helper()
	r := s.do("ping")
	if r.Timeout || r.Type != "pong" || !r.OK {
		s.t.Fatalf("%s: got %+v, want pong (a timeout means the connection was refused or cut)", what, r)
	}
	if got := time.Duration(r.MS * float64(time.Millisecond)); got > limit {
		s.t.Fatalf("%s: pong after %v, want within %v", what, got, limit)
	}
	s.t.Logf("%s: pong after %.1f ms", what, r.MS)
	return r
}

// procStatus reads a field of /proc/<pid>/status in KiB.
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// waitRSSSettled waits until the process's resident size stops growing (the
// server has read what the peers sent), at most 10 s.
func waitRSSSettled(t *testing.T, pid int) {
	t.Helper()
	last := procStatusKiB(t, pid, "VmRSS")
	for range 50 {
		time.Sleep(200 * time.Millisecond)
		now := procStatusKiB(t, pid, "VmRSS")
		if now-last < 512 {
			return
		}
		last = now
	}
}

// TestChannelSilentPeersCannotLockOutClients: 1,024 peers that complete the
// handshake and say nothing fill the default connection table; a new libzmq
// REQ client still gets its pong within 1 s, because the longest-silent
// peer that never had a reply is evicted to admit it.
func TestChannelSilentPeersCannotLockOutClients(t *testing.T) {
	p := startProcess(t, t.TempDir())
	silent := silentPeers(t, p.zmq, 1024, nil)

	client := startPySession(t, p.zmq, 0)
	client.expectPong("new client with 1,024 silent peers connected", pongWait)
	client.expectPong("second request", pongWait)
	if n := closedByServer(silent, 500*time.Millisecond); n < 1 {
		t.Fatalf("no silent peer was evicted, yet the table was full")
	} else {
		t.Logf("%d of 1,024 silent peers evicted", n)
	}
}

// TestChannelStalledFramesHoldLittleMemory: 1,000 peers each send the header
// of a 1 MiB-1 byte frame and then stall. With a few body bytes each they
// hold a few KiB; sending 200 KiB each they fill the shared pool
// (-max-partial-bytes) and no more. Either way the process stays under the
// bound documented in api/messages.md (section 5) and a real client's
// 2048-point predict is still read and answered.
func TestChannelStalledFramesHoldLittleMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		body int
	}{{"header and 3 bytes", 3}, {"header and 200 KiB", 200 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			// A long frame timeout keeps every stalled frame held while we measure.
			p := startProcess(t, t.TempDir(), "-frame-timeout", "5m")
			pid := p.cmd.Process.Pid
			before := procStatusKiB(t, pid, "VmRSS")

			hold := binary.BigEndian.AppendUint64([]byte{0x02}, 1<<20-1)
			hold = append(hold, bytes.Repeat([]byte{'x'}, tc.body)...)
			silentPeers(t, p.zmq, 1000, hold)
			waitRSSSettled(t, pid)

			client := startPySession(t, p.zmq, 0)
			client.expectPong("client beside 1,000 stalled frames", pongWait)
			r := client.do("predict")
			if r.Timeout || r.Code != "MODEL_NOT_LOADED" {
				t.Fatalf("2048-point predict: got %+v, want it read and answered MODEL_NOT_LOADED", r)
			}

			rss, hwm := procStatusKiB(t, pid, "VmRSS"), procStatusKiB(t, pid, "VmHWM")
			fmt.Printf("channel bounds: 1,000 stalled 1 MiB-1 frames (%s): VmRSS %d MiB (%d MiB before), VmHWM %d MiB\n",
				tc.name, rss>>10, before>>10, hwm>>10)
			// api/messages.md: -max-partial-bytes + -max-connections x 128 KiB + 64 MiB.
			const capKiB = 64<<10 + 1024*128 + 64<<10
			if hwm > capKiB {
				t.Fatalf("VmHWM %d KiB, over the documented %d KiB", hwm, capKiB)
			}
		})
	}
}

// TestChannelServedClientsSurviveEvictionPressure: with a small table (64),
// two clients that had a reply (one with heartbeats, one without) stay
// silent while silent peers churn through the table for seconds; both are
// still connected and answered afterwards, and many silent peers were
// evicted on the way.
func TestChannelServedClientsSurviveEvictionPressure(t *testing.T) {
	t.Parallel() // a process of its own
	p := startProcess(t, t.TempDir(), "-max-connections", "64")
	plain := startPySession(t, p.zmq, 0)
	beating := startPySession(t, p.zmq, 100)
	plain.expectPong("client without heartbeats, first request", pongWait)
	beating.expectPong("client with heartbeats, first request", pongWait)

	pressure := 3 * time.Second
	var silent []net.Conn
	opened, cutEarly := 0, 0
	for end := time.Now().Add(pressure); time.Now().Before(end); {
		conns, cut := floodPeers(t, p.zmq, 32)
		silent = append(silent, conns...)
		opened, cutEarly = opened+32, cutEarly+cut
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // silent for longer than the pressure lasted

	plain.expectPong("client without heartbeats, after the flood", pongWait)
	beating.expectPong("client with heartbeats, after the flood", pongWait)
	evicted := cutEarly + closedByServer(silent, 500*time.Millisecond)
	t.Logf("%d silent peers opened, %d evicted (%d during their handshake)", opened, evicted, cutEarly)
	if evicted < opened-64 {
		t.Fatalf("only %d of %d silent peers evicted: the table was not under pressure", evicted, opened)
	}
	startPySession(t, p.zmq, 0).expectPong("a newcomer after the flood", pongWait)
}

// TestChannelFrameTimeout: a peer that stalls in the middle of a frame is
// cut once -frame-timeout runs out; a peer that is merely idle between
// messages is not.
func TestChannelFrameTimeout(t *testing.T) {
	t.Parallel() // a process of its own
	p := startProcess(t, t.TempDir(), "-frame-timeout", "1s")
	idle := startPySession(t, p.zmq, 0)
	idle.expectPong("idle client, first request", pongWait)

	stalled := silentPeers(t, p.zmq, 1, append(binary.BigEndian.AppendUint64([]byte{0x02}, 1000), "abc"...))
	start := time.Now()
	if n := closedByServer(stalled, 5*time.Second); n != 1 {
		t.Fatal("a peer stalled mid-frame was not cut within 5 s")
	}
	elapsed := time.Since(start)
	t.Logf("stalled peer cut after %v", elapsed)
	if elapsed < 900*time.Millisecond { // the server's clock started before ours
		t.Fatalf("stalled peer cut after %v, before its 1 s frame timeout", elapsed)
	}
	time.Sleep(time.Second) // idle well past the frame timeout
	idle.expectPong("idle client, after 2 s of silence", pongWait)
}
