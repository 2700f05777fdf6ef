package zmtp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// curveKeys are the long-term key pairs of a CURVE test: the server, an
// allowed client and a client nobody allowed.
type curveKeys struct {
	serverPub, clientPub, strangerPub curve.PublicKey
	serverSec, clientSec, strangerSec curve.SecretKey
}

func newCurveKeys(t testing.TB) curveKeys {
	t.Helper()
	var k curveKeys
	var err error
	for _, pair := range []struct {
		pub *curve.PublicKey
		sec *curve.SecretKey
	}{{&k.serverPub, &k.serverSec}, {&k.clientPub, &k.clientSec}, {&k.strangerPub, &k.strangerSec}} {
		if *pair.pub, *pair.sec, err = curve.GenerateKeyPair(nil); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// startCurveServer serves the echo handler with CURVE on, allowing only
// k.clientPub.
func startCurveServer(t testing.TB, k curveKeys, cfg Config) *Server {
	t.Helper()
	cfg.Curve = &CurveConfig{Secret: k.serverSec, Allow: curve.NewAllowlist([]curve.PublicKey{k.clientPub}).Allowed}
	return startServer(t, cfg, echoHandler)
}

// readCurveServerGreeting reads the server's greeting, which must offer
// CURVE in the server role.
func (p *rawPeer) readCurveServerGreeting() {
	p.t.Helper()
	var g [wire.GreetingSize]byte
	_ = p.conn.SetReadDeadline(time.Now().Add(ioDeadline))
	if _, err := readFullConn(p, g[:]); err != nil {
		p.t.Fatalf("read server greeting: %v", err)
	}
	if g[0] != 0xFF || g[9] != 0x7F || g[10] != 3 || g[11] != 1 || string(g[12:18]) != "CURVE\x00" || g[32] != 1 {
		p.t.Fatalf("unexpected server greeting % x", g)
	}
}

// curveStart sends a CURVE greeting and HELLO for the given keys and
// returns the client handshake, ready for the server's WELCOME.
func (p *rawPeer) curveStart(server, pub curve.PublicKey, sec curve.SecretKey) *curve.Client {
	p.t.Helper()
	p.write(clientGreeting(3, 1, "CURVE"))
	p.readCurveServerGreeting()
	c := curve.NewClient(server, pub, sec, nil)
	hello, err := c.Hello()
	if err != nil {
		p.t.Fatal(err)
	}
	p.write(appendSealedCommand(nil, hello))
	return c
}

// curveHandshake completes a CURVE handshake as socketType.
func (p *rawPeer) curveHandshake(k curveKeys, socketType string) *curve.Session {
	p.t.Helper()
	c := p.curveSendInitiate(k.serverPub, k.clientPub, k.clientSec, socketType)
	f, err := p.readFrame()
	if err != nil || f.flags != wire.FlagCommand {
		p.t.Fatalf("read READY: flags %#x, %v", f.flags, err)
	}
	md, sess, err := c.Ready(f.body)
	if err != nil {
		p.t.Fatalf("READY: %v", err)
	}
	props, err := wire.ParseProperties(md)
	if st, _ := wire.LookupProperty(props, "Socket-Type"); err != nil || string(st) != "REP" {
		p.t.Fatalf("server metadata %q: %v", md, err)
	}
	return sess
}

// curveSendInitiate runs a CURVE handshake up to sending INITIATE (for a
// client the server is expected to refuse there, or as the first half of
// curveHandshake) and returns the client state to read READY with.
func (p *rawPeer) curveSendInitiate(server, pub curve.PublicKey, sec curve.SecretKey, socketType string) *curve.Client {
	p.t.Helper()
	c := p.curveStart(server, pub, sec)
	f, err := p.readFrame()
	if err != nil {
		p.t.Fatalf("read WELCOME: %v", err)
	}
	initiate, err := c.Initiate(f.body, wire.AppendProperties(nil, []wire.Property{{Name: "Socket-Type", Value: []byte(socketType)}}))
	if err != nil {
		p.t.Fatalf("WELCOME: %v", err)
	}
	p.write(appendSealedCommand(nil, initiate))
	return c
}

// sealMsg encodes frames as sealed MESSAGE frames (MORE inside the boxes).
func sealMsg(t testing.TB, sess *curve.Session, frames ...[]byte) []byte {
	t.Helper()
	var b []byte
	for i, f := range frames {
		var flags byte
		if i < len(frames)-1 {
			flags = curve.FlagMore
		}
		b = wire.AppendHeader(b, 0, len(f)+curve.MessageOverhead)
		var err error
		if b, err = sess.Seal(b, flags, f); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// recvSealed reads one sealed message; sealed commands are returned by name.
func (p *rawPeer) recvSealed(sess *curve.Session) (msg [][]byte, cmds []string) {
	p.t.Helper()
	for {
		f, err := p.readFrame()
		if err != nil {
			p.t.Fatalf("read reply: %v", err)
		}
		if f.flags&^wire.FlagLong != 0 {
			p.t.Fatalf("CURVE frame with wire flags %#x", f.flags)
		}
		flags, payload, err := sess.Open(nil, f.body)
		if err != nil {
			p.t.Fatalf("open reply: %v", err)
		}
		if flags&curve.FlagCommand != 0 {
			name, data, _ := wire.ParseCommand(payload)
			cmds = append(cmds, name+":"+string(data))
			if name == wire.CmdError {
				return msg, cmds
			}
			continue
		}
		msg = append(msg, payload)
		if flags&curve.FlagMore == 0 {
			return msg, cmds
		}
	}
}

func TestCurveRequestReplyAndHeartbeat(t *testing.T) {
	k := newCurveKeys(t)
	srv := startCurveServer(t, k, Config{})
	p := dialRaw(t, srv)
	sess := p.curveHandshake(k, "REQ")

	p.write(sealMsg(t, sess, nil, []byte("hello")))
	reply, _ := p.recvSealed(sess)
	assertFrames(t, reply, "", "echo:hello")
	if n := connGoroutines(); n != 1 {
		t.Fatalf("%d connection goroutines for one connection", n)
	}

	// A DEALER-style envelope is echoed, sealed.
	p.write(sealMsg(t, sess, []byte("id-1"), []byte("id-2"), nil, []byte("a"), []byte("b")))
	reply, _ = p.recvSealed(sess)
	assertFrames(t, reply, "id-1", "id-2", "", "echo:a|b")

	// A PING inside a MESSAGE with the COMMAND flag gets a sealed PONG.
	var ping []byte
	ping = wire.AppendHeader(ping, 0, 1+len(wire.CmdPing)+2+3+curve.MessageOverhead)
	ping, _ = sess.Seal(ping, curve.FlagCommand, append([]byte("\x04PING\x00\x0a"), "ctx"...))
	p.write(append(ping, sealMsg(t, sess, nil, []byte("after ping"))...))
	reply, cmds := p.recvSealed(sess)
	if len(cmds) != 1 || cmds[0] != "PONG:ctx" {
		t.Fatalf("commands before the reply: %q, want PONG:ctx", cmds)
	}
	assertFrames(t, reply, "", "echo:after ping")

	// Counters move just after the reply is written.
	waitFor(t, "the third request to be counted", func() bool { return srv.Stats().RequestsServed == 3 })
	if st := srv.Stats(); st.HandshakesCompleted != 1 || st.PingsReceived != 1 || st.PartialBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCurveRefusesOtherClients(t *testing.T) {
	k := newCurveKeys(t)
	srv := startCurveServer(t, k, Config{})

	t.Run("NULL client", func(t *testing.T) {
		p := dialRaw(t, srv)
		p.write(clientGreeting(3, 1, "NULL"))
		p.readCurveServerGreeting()
		p.expectErrorThenClose("only CURVE")
	})
	t.Run("PLAIN client", func(t *testing.T) {
		p := dialRaw(t, srv)
		p.write(clientGreeting(3, 1, "PLAIN"))
		p.readCurveServerGreeting()
		p.expectErrorThenClose("only CURVE")
	})
	t.Run("client claiming the server role", func(t *testing.T) {
		p := dialRaw(t, srv)
		g := clientGreeting(3, 1, "CURVE")
		g[32] = 1
		p.write(g)
		p.readCurveServerGreeting()
		p.expectErrorThenClose("only CURVE")
	})
	t.Run("wrong server key", func(t *testing.T) {
		p := dialRaw(t, srv)
		p.curveStart(k.strangerPub, k.clientPub, k.clientSec)
		p.expectErrorThenClose("CURVE authentication failed")
	})
	t.Run("client not in the allowlist", func(t *testing.T) {
		p := dialRaw(t, srv)
		p.curveSendInitiate(k.serverPub, k.strangerPub, k.strangerSec, "REQ")
		p.expectErrorThenClose(notAllowedReason)
	})
	t.Run("ROUTER client", func(t *testing.T) {
		p := dialRaw(t, srv)
		p.curveSendInitiate(k.serverPub, k.clientPub, k.clientSec, "ROUTER")
		p.expectErrorThenClose("incompatible socket type")
	})
	t.Run("plaintext message instead of HELLO", func(t *testing.T) {
		p := dialRaw(t, srv)
		p.write(clientGreeting(3, 1, "CURVE"))
		p.readCurveServerGreeting()
		p.sendMsg(nil, []byte("hi"))
		p.expectErrorThenClose("expected HELLO")
	})
	waitFor(t, "every refused connection to close", func() bool { return srv.Stats().OpenConnections == 0 })
	if st := srv.Stats(); st.CurveNotAllowed != 1 || st.HandshakesFailed != 7 || st.HandshakesCompleted != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCurveSessionViolationsClose(t *testing.T) {
	k := newCurveKeys(t)
	srv := startCurveServer(t, k, Config{MaxMessageSize: 1 << 10, MaxPartialBytes: 64 << 10})
	for name, attack := range map[string]func(t *testing.T, p *rawPeer, sess *curve.Session){
		"replayed message": func(t *testing.T, p *rawPeer, sess *curve.Session) {
			msg := sealMsg(t, sess, nil, []byte("once"))
			p.write(msg)
			reply, _ := p.recvSealed(sess)
			assertFrames(t, reply, "", "echo:once")
			p.write(msg)
			p.expectClosed()
		},
		"tampered message": func(t *testing.T, p *rawPeer, sess *curve.Session) {
			msg := sealMsg(t, sess, nil, []byte("tampered"))
			msg[len(msg)-1] ^= 1
			p.write(msg)
			p.expectClosed()
		},
		"plaintext frame": func(t *testing.T, p *rawPeer, sess *curve.Session) {
			p.sendMsg(nil, []byte("plaintext"))
			p.expectClosed()
		},
		"MORE on the wire": func(t *testing.T, p *rawPeer, sess *curve.Session) {
			msg := sealMsg(t, sess, []byte("x"))
			msg[0] |= wire.FlagMore
			p.write(msg)
			p.expectClosed()
		},
		"frame beyond MaxMessageSize": func(t *testing.T, p *rawPeer, sess *curve.Session) {
			// The header alone is refused: nothing of its size is allocated.
			p.write(longFrameHeader(0, 1<<40))
			_, cmds := p.recvSealed(sess)
			if len(cmds) != 1 || !strings.Contains(cmds[0], "message too large") {
				t.Fatalf("commands %q, want a sealed ERROR", cmds)
			}
			p.expectClosed()
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := dialRaw(t, srv)
			attack(t, p, p.curveHandshake(k, "REQ"))
		})
	}
	t.Run("message over MaxMessageSize in several frames gets one reply", func(t *testing.T) {
		p := dialRaw(t, srv)
		sess := p.curveHandshake(k, "REQ")
		big := bytes.Repeat([]byte("x"), 700)
		p.write(sealMsg(t, sess, nil, big, big))
		reply, _ := p.recvSealed(sess)
		assertFrames(t, reply, "", "error:"+ErrMessageTooLarge.Error())
		p.write(sealMsg(t, sess, nil, []byte("next")))
		reply, _ = p.recvSealed(sess)
		assertFrames(t, reply, "", "echo:next")
	})
	waitFor(t, "connections to close", func() bool { return srv.Stats().OpenConnections <= 1 })
	if used := srv.Stats().PartialBytes; used != 0 {
		t.Fatalf("%d bytes of the pool still reserved", used)
	}
}

func TestCurveLargeMessagesDrawOnThePool(t *testing.T) {
	k := newCurveKeys(t)
	srv := startCurveServer(t, k, Config{MaxPartialBytes: 1 << 20})
	p := dialRaw(t, srv)
	sess := p.curveHandshake(k, "REQ")
	big := bytes.Repeat([]byte("y"), 300<<10)
	p.write(sealMsg(t, sess, nil, big))
	reply, _ := p.recvSealed(sess)
	if len(reply) != 2 || len(reply[1]) != len("echo:")+len(big) {
		t.Fatalf("reply of %d frames", len(reply))
	}
	waitFor(t, "the pool to be given back", func() bool { return srv.Stats().PartialBytes == 0 })
}

// FuzzCurveSession feeds arbitrary bytes after a CURVE greeting to a
// server session with CURVE on: nothing may panic and the pool must get
// everything back.
func FuzzCurveSession(f *testing.F) {
	k := newCurveKeys(f)
	c := curve.NewClient(k.serverPub, k.clientPub, k.clientSec, nil)
	hello, err := c.Hello()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(appendSealedCommand(nil, hello))
	f.Add(append(appendSealedCommand(nil, hello), appendSealedCommand(nil, []byte("\x08INITIATE"))...))
	f.Add(wire.AppendCommand(nil, wire.CmdReady, nil))
	f.Add(longFrameHeader(wire.FlagCommand, 1<<40))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Config{MaxPartialBytes: 96 << 10, Curve: &CurveConfig{Secret: k.serverSec}}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		sh := newShared(cfg)
		input := append(clientGreeting(3, 1, "CURVE"), data...)
		s := newSession(nil, sh, cfg, echoHandler, &fuzzConn{r: bytes.NewReader(input)})
		if err := s.handshake(); err == nil {
			t.Fatalf("a handshake completed without the server's randomness")
		}
		if used := sh.partialUsed.Load(); used > cfg.MaxPartialBytes || used != s.reserved+s.cmdReserved+s.encReserved {
			t.Fatalf("pool lent %d, session holds %d+%d+%d", used, s.reserved, s.cmdReserved, s.encReserved)
		}
		s.releaseBuffers()
		if used := sh.partialUsed.Load(); used != 0 {
			t.Fatalf("%d bytes still lent after the session ended", used)
		}
	})
}

// pyCurveJob is the input of testdata/pyzmq_curve.py.
type pyCurveJob struct {
	Endpoint    string `json:"endpoint"`
	ServerKey   string `json:"server_key,omitempty"`
	Public      string `json:"public,omitempty"`
	Secret      string `json:"secret,omitempty"`
	HeartbeatMS int    `json:"heartbeat_ms,omitempty"`
	// HeartbeatTimeoutMS and HeartbeatTTLMS: 0 leaves the script's
	// defaults, 3 and 10 intervals.
	HeartbeatTimeoutMS int      `json:"heartbeat_timeout_ms,omitempty"`
	HeartbeatTTLMS     int      `json:"heartbeat_ttl_ms,omitempty"`
	PauseMS            int      `json:"pause_ms,omitempty"`
	TimeoutMS          int      `json:"timeout_ms,omitempty"`
	Requests           []string `json:"requests"`
}

type pyCurveResult struct {
	Replies []*string `json:"replies"`
	Events  [][2]any  `json:"events"`
}

// runPyCurve runs a libzmq REQ client (pyzmq) to completion.
func runPyCurve(t *testing.T, script string, job pyCurveJob) pyCurveResult {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s not installed", py)
	}
	in, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	// Bounded: a client that hangs is a failure that says so, not a
	// test binary waiting for its timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyzmq client: %v (%v)\n%s", err, ctx.Err(), stderr.String())
	}
	var res pyCurveResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("pyzmq client output %q: %v", out, err)
	}
	return res
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func (r pyCurveResult) reply(t *testing.T, i int) string {
	t.Helper()
	if i >= len(r.Replies) || r.Replies[i] == nil {
		t.Fatalf("no reply %d; events %v", i, r.Events)
	}
	b, err := base64.StdEncoding.DecodeString(*r.Replies[i])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (r pyCurveResult) sawEvent(name string) bool {
	for _, e := range r.Events {
		if e[0] == name {
			return true
		}
	}
	return false
}

func TestCurvePyzmqClients(t *testing.T) {
	k := newCurveKeys(t)
	srv := startCurveServer(t, k, Config{})
	endpoint := "tcp://" + srv.Addr().String()
	const script = "testdata/pyzmq_curve.py"

	t.Run("allowed client", func(t *testing.T) {
		res := runPyCurve(t, script, pyCurveJob{Endpoint: endpoint, ServerKey: k.serverPub.String(),
			Public: k.clientPub.String(), Secret: curveSecretZ85(t, k.clientSec),
			Requests: []string{b64("one"), b64(strings.Repeat("s", 40<<10))}})
		if got := res.reply(t, 0); got != "echo:one" {
			t.Fatalf("reply %q", got)
		}
		if got := res.reply(t, 1); got != "echo:"+strings.Repeat("s", 40<<10) {
			t.Fatalf("reply of %d bytes", len(got))
		}
		if !res.sawEvent("EVENT_HANDSHAKE_SUCCEEDED") {
			t.Fatalf("events %v", res.Events)
		}
	})
	t.Run("heartbeats over CURVE", func(t *testing.T) {
		pings := srv.Stats().PingsReceived
		handshakes := srv.Stats().HandshakesCompleted
		res := runPyCurve(t, script, pyCurveJob{Endpoint: endpoint, ServerKey: k.serverPub.String(),
			Public: k.clientPub.String(), Secret: curveSecretZ85(t, k.clientSec),
			HeartbeatMS: 100, HeartbeatTimeoutMS: 3000, HeartbeatTTLMS: 6000, PauseMS: 3500,
			Requests: []string{b64("a"), b64("b")}})
		if res.reply(t, 0) != "echo:a" || res.reply(t, 1) != "echo:b" {
			t.Fatalf("replies %v", res.Replies)
		}
		// libzmq drops a connection that receives nothing within 3 s of a
		// PING: one handshake across the 3.5 s pause, longer than an
		// interval and that timeout, means the PINGs were answered. The
		// timeout and the TTL (after which the server drops a silent
		// client) are seconds, not the interval's few multiples, so
		// that a client or server kept off the CPU on a busy machine for
		// a moment is not taken for a dead peer.
		st := srv.Stats()
		if st.PingsReceived-pings < 3 || st.HandshakesCompleted-handshakes != 1 || res.sawEvent("EVENT_DISCONNECTED") {
			t.Fatalf("%d PINGs, %d handshakes, events %v", st.PingsReceived-pings, st.HandshakesCompleted-handshakes, res.Events)
		}
	})
	for _, tc := range []struct {
		name  string
		job   pyCurveJob
		event string // seen by the client's monitor
	}{
		{"client not in the allowlist", pyCurveJob{ServerKey: k.serverPub.String(), Public: k.strangerPub.String(), Secret: curveSecretZ85(t, k.strangerSec)}, "EVENT_HANDSHAKE_FAILED_AUTH"},
		// libzmq reports no handshake event for an ERROR whose reason is
		// not a ZAP status code; the client sees the connection close.
		{"wrong server key", pyCurveJob{ServerKey: k.strangerPub.String(), Public: k.clientPub.String(), Secret: curveSecretZ85(t, k.clientSec)}, "EVENT_DISCONNECTED"},
		{"NULL client", pyCurveJob{}, "EVENT_HANDSHAKE_FAILED_PROTOCOL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed := srv.Stats().HandshakesFailed
			job := tc.job
			job.Endpoint, job.TimeoutMS, job.Requests = endpoint, 700, []string{b64("let me in")}
			res := runPyCurve(t, script, job)
			if len(res.Replies) != 1 || res.Replies[0] != nil {
				t.Fatalf("refused client got replies %v", res.Replies)
			}
			if srv.Stats().HandshakesFailed == failed || res.sawEvent("EVENT_HANDSHAKE_SUCCEEDED") {
				t.Fatalf("no refused handshake; events %v", res.Events)
			}
			t.Logf("client events: %v", res.Events)
			if !res.sawEvent(tc.event) {
				t.Fatalf("client did not see %s; events %v", tc.event, res.Events)
			}
		})
	}
	waitFor(t, "every connection to close", func() bool { return srv.Stats().OpenConnections == 0 })
	waitFor(t, "no connection goroutine left behind", func() bool { return connGoroutines() == 0 })
	if st := srv.Stats(); st.PartialBytes != 0 || st.Panics != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// curveSecretZ85 is a test key's secret half in Z85, for the pyzmq client.
func curveSecretZ85(t testing.TB, k curve.SecretKey) string {
	t.Helper()
	s, err := curve.EncodeZ85(k[:])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connGoroutines counts the goroutines serving a connection.
func connGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return bytes.Count(buf, []byte("zmtp.(*Server).runConn("))
}

// FuzzCurveMessages drives an established CURVE session with frames the
// fuzzer composes and a real client seals: any mix of MORE and COMMAND
// flags, sizes around the limits (a 2 KiB message limit, a 96 KiB pool),
// unsealed junk and MORE on the wire. Nothing may panic, and the pool must
// be within its limit while the session runs and get everything back.
func FuzzCurveMessages(f *testing.F) {
	k := newCurveKeys(f)
	// Each frame: control byte, length byte, then that many payload bytes.
	// Control: 0x01 MORE, 0x02 COMMAND (inside the box), 0x04 unsealed,
	// 0x08 MORE on the wire; 0x30 scales the length by 1, 64, 1024, 4096.
	f.Add([]byte{0x01, 0, 0x00, 3, 'a', 'b', 'c'})
	f.Add([]byte{0x02, 8, 4, 'P', 'I', 'N', 'G', 0, 1, 'x', 0x01, 0, 0x00, 1, 'q'})
	f.Add([]byte{0x01, 0, 0x20, 3, 'a', 'b', 'c', 0x00, 1, 'z'})
	f.Add([]byte{0x01, 0, 0x31, 30, 0x00, 1, 'z'})
	f.Add([]byte{0x04, 40})
	f.Add([]byte{0x09, 1, 'm'})
	client0, server0 := curveSessions(f, k) // copied per input: handshakes are slow
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := new(curve.Session), new(curve.Session)
		*client, *server = *client0, *server0
		var stream []byte
		for len(data) >= 2 {
			ctrl, n := data[0], int(data[1])
			data = data[2:]
			n *= [4]int{1, 64, 1024, 4096}[ctrl>>4&3]
			payload := make([]byte, n)
			copy(payload, data[:min(n, len(data))])
			data = data[min(n, len(data)):]
			var wireFlags byte
			if ctrl&0x08 != 0 {
				wireFlags = wire.FlagMore
			}
			if ctrl&0x04 != 0 {
				stream = wire.AppendFrame(stream, wireFlags, payload)
				continue
			}
			stream = wire.AppendHeader(stream, wireFlags, n+curve.MessageOverhead)
			var err error
			if stream, err = client.Seal(stream, ctrl&(curve.FlagMore|curve.FlagCommand), payload); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Config{MaxMessageSize: 2 << 10, DiscardLimit: 64 << 10, MaxPartialBytes: 96 << 10, Curve: &CurveConfig{Secret: k.serverSec}}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		sh := newShared(cfg)
		var s *session
		h := HandlerFunc(func(ctx context.Context, req Request, dst []byte) []byte {
			if used := sh.partialUsed.Load(); used > cfg.MaxPartialBytes || used != s.reserved+s.cmdReserved+s.encReserved {
				t.Fatalf("pool lent %d, session holds %d+%d+%d", used, s.reserved, s.cmdReserved, s.encReserved)
			}
			return echoHandler(ctx, req, dst)
		})
		s = newSession(nil, sh, cfg, h, &fuzzConn{r: bytes.NewReader(stream)})
		s.sec = server
		_ = s.serve(context.Background())
		if used := sh.partialUsed.Load(); used > cfg.MaxPartialBytes || used != s.reserved+s.cmdReserved+s.encReserved {
			t.Fatalf("pool lent %d, session holds %d+%d+%d", used, s.reserved, s.cmdReserved, s.encReserved)
		}
		if int64(cap(s.encBuf)) > ownBufferSize+s.encReserved {
			t.Fatalf("cipher buffer of %d bytes with %d reserved", cap(s.encBuf), s.encReserved)
		}
		s.releaseBuffers()
		if used := sh.partialUsed.Load(); used != 0 {
			t.Fatalf("%d bytes still lent after the session ended", used)
		}
	})
}

// TestCurveAllowlistReload: replacing the allowlist (what SIGHUP does)
// applies to the next handshake without a restart; established sessions
// are not affected.
func TestCurveAllowlistReload(t *testing.T) {
	k := newCurveKeys(t)
	allow := curve.NewAllowlist([]curve.PublicKey{k.clientPub})
	srv := startServer(t, Config{Curve: &CurveConfig{Secret: k.serverSec, Allow: allow.Allowed}}, echoHandler)
	established := dialRaw(t, srv)
	sess := established.curveHandshake(k, "REQ")

	stranger := curveKeys{serverPub: k.serverPub, clientPub: k.strangerPub, clientSec: k.strangerSec}
	refused := dialRaw(t, srv)
	refused.curveSendInitiate(k.serverPub, k.strangerPub, k.strangerSec, "REQ")
	refused.expectErrorThenClose(notAllowedReason)

	allow.Replace([]curve.PublicKey{k.strangerPub})
	p := dialRaw(t, srv)
	s2 := p.curveHandshake(stranger, "REQ")
	p.write(sealMsg(t, s2, nil, []byte("now allowed")))
	reply, _ := p.recvSealed(s2)
	assertFrames(t, reply, "", "echo:now allowed")

	// The client dropped from the list keeps its session, but cannot
	// open a new one.
	established.write(sealMsg(t, sess, nil, []byte("still here")))
	reply, _ = established.recvSealed(sess)
	assertFrames(t, reply, "", "echo:still here")
	again := dialRaw(t, srv)
	again.curveSendInitiate(k.serverPub, k.clientPub, k.clientSec, "REQ")
	again.expectErrorThenClose(notAllowedReason)
}
