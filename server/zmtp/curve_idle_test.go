package zmtp

import (
	"bytes"
	"testing"

	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// TestCurveCommandGivesThePoolBack: a sealed command (here one the
// server ignores) as large as a message draws on the shared pool for its
// ciphertext and plaintext; once it is processed and the peer is idle,
// that memory must be given back, as NULL gives back a command's buffer.
// Otherwise a few allowed peers, each parking one large command and
// staying idle (where FrameTimeout does not reach), hold the pool and
// every larger request of other clients is refused "server busy".
func TestCurveCommandGivesThePoolBack(t *testing.T) {
	k := newCurveKeys(t)
	srv := startCurveServer(t, k, Config{MaxPartialBytes: 1 << 20})
	p := dialRaw(t, srv)
	sess := p.curveHandshake(k, "REQ")

	body := append([]byte("\x04JUNK"), bytes.Repeat([]byte("z"), 300<<10)...)
	frame := wire.AppendHeader(nil, 0, len(body)+curve.MessageOverhead)
	frame, err := sess.Seal(frame, curve.FlagCommand, body)
	if err != nil {
		t.Fatal(err)
	}
	p.write(frame)
	waitFor(t, "the command to be processed", func() bool { return srv.Stats().CommandsIgnored == 1 })
	waitFor(t, "the pool to be given back while the peer is idle", func() bool { return srv.Stats().PartialBytes == 0 })

	// The connection still serves.
	p.write(sealMsg(t, sess, nil, []byte("hi")))
	if reply, _ := p.recvSealed(sess); len(reply) != 2 || string(reply[1]) != "echo:hi" {
		t.Fatalf("reply %q", reply)
	}
}
