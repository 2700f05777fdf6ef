package conformance

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"ramanserve/server/codec"
	"ramanserve/server/codec/wire"
)

// TestExampleCOwnsItsReplies runs the C example, built with AddressSanitizer
// and UBSan, against a server whose pong carries a large extra field (keys
// a client does not know are to be skipped). A reply over libzmq's 8 KiB
// receive batch is a buffer of its own, freed when the message is closed;
// msgpack_unpack_next's strings point into that buffer, so the example must
// keep the message until it has read the reply.
func TestExampleCOwnsItsReplies(t *testing.T) {
	modules := needCToolchain(t)
	tmp := t.TempDir()
	bin := buildCExampleWith(t, tmp, modules, "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, paddedPongPeer(ctx, t, 64<<10))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // the predict gets no predict_reply from this server: exit status 1 is expected
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if strings.Contains(stderr.String(), "Sanitizer") || strings.Contains(stderr.String(), "runtime error") {
		t.Errorf("the C example read memory it does not own (see stderr)")
	}
	if !strings.Contains(stdout.String(), "pong: server_version=padded protocol_version=1 model_version=m1") {
		t.Errorf("the C example did not print the pong")
	}
}

// paddedPongPeer listens on a loopback REP socket, closed with the test,
// that answers every request with answerWithPaddedPong until ctx ends, and
// returns its endpoint.
func paddedPongPeer(ctx context.Context, t *testing.T, padding int) string {
	t.Helper()
	rep := zmq4.NewRep(ctx)
	t.Cleanup(func() { rep.Close() })
	if err := rep.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go answerWithPaddedPong(ctx, rep, padding)
	return "tcp://" + rep.Addr().String()
}

// answerWithPaddedPong answers every request with a pong whose body holds
// a field of padding bytes that no client knows.
func answerWithPaddedPong(ctx context.Context, rep zmq4.Socket, padding int) {
	var req codec.Request
	pad := strings.Repeat("x", padding)
	for ctx.Err() == nil {
		msg, err := rep.Recv()
		if err != nil {
			return
		}
		if len(msg.Frames) != 1 {
			return
		}
		_ = codec.DecodeRequest(msg.Frames[0], &req) // only its id is used
		b := wire.AppendMapHeader(nil, 7)
		b = wire.AppendString(b, "v")
		b = wire.AppendInt(b, 1)
		b = wire.AppendString(b, "type")
		b = wire.AppendString(b, "pong")
		b = wire.AppendString(b, "id")
		b = wire.AppendString(b, "00000000-0000-4000-8000-000000000000")
		b = wire.AppendString(b, "correlation_id")
		b = wire.AppendStringBytes(b, req.ID)
		b = wire.AppendString(b, "ts")
		b = wire.AppendFloat64(b, 1)
		b = wire.AppendString(b, "body")
		b = wire.AppendMapHeader(b, 5)
		b = wire.AppendString(b, "pad")
		b = wire.AppendString(b, pad)
		b = wire.AppendString(b, "server_version")
		b = wire.AppendString(b, "padded")
		b = wire.AppendString(b, "protocol_version")
		b = wire.AppendInt(b, 1)
		b = wire.AppendString(b, "model_version")
		b = wire.AppendString(b, "m1")
		b = wire.AppendString(b, "uptime_seconds")
		b = wire.AppendFloat64(b, 1)
		b = wire.AppendString(b, "error")
		b = wire.AppendNil(b)
		if err := rep.Send(zmq4.NewMsg(b)); err != nil {
			return
		}
	}
}

// TestExampleCRefusesHugeReplies: the example caps what it receives
// (ZMQ_MAXMSGSIZE), so a wrong or hostile peer on the endpoint cannot make
// it buffer any size it announces. A 2 MiB pong is dropped with its
// connection, and the example reports the channel down (exit status 3).
func TestExampleCRefusesHugeReplies(t *testing.T) {
	modules := needCToolchain(t)
	bin := buildCExample(t, t.TempDir(), modules)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, paddedPongPeer(ctx, t, 2<<20))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit: %v, want status 3 (no reply)", err)
	}
	if strings.Contains(stdout.String(), "pong:") {
		t.Errorf("the example took a 2 MiB pong")
	}
}
