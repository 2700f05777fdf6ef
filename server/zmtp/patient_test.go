package zmtp

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"ramanserve/platform/sockqueue"
)

// tcpPair is a connected pair of loopback TCP connections.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestPatientReaderIsNotFooledByItsOwnLateness: a read whose deadline
// has passed while the peer's bytes already wait in the socket (the
// reading goroutine was late, as on a busy machine) returns the bytes;
// without waiting bytes, or when the deadline must stand, it times out.
func TestPatientReaderIsNotFooledByItsOwnLateness(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sent     bool
		rearm    time.Duration
		wantRead bool
	}{
		{"bytes waiting", true, time.Second, true},
		{"silent peer", false, time.Second, false},
		{"deadline stands", true, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := tcpPair(t)
			if tc.sent {
				if _, err := client.Write([]byte("PING")); err != nil {
					t.Fatal(err)
				}
				// The event: the bytes are in the server's socket.
				for deadline := time.Now().Add(10 * time.Second); !sockqueue.Pending(server); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the bytes never reached the server's socket")
					}
				}
			}
			// The deadline passed before this goroutine came to read.
			if err := server.SetReadDeadline(time.Now().Add(-time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			r := patientReader{conn: server, rearm: func() time.Duration { return tc.rearm }}
			buf := make([]byte, 16)
			n, err := r.Read(buf)
			switch {
			case tc.wantRead && (err != nil || string(buf[:n]) != "PING"):
				t.Fatalf("read %q, %v; want the waiting bytes", buf[:n], err)
			case !tc.wantRead && !errors.Is(err, os.ErrDeadlineExceeded):
				t.Fatalf("read %q, %v; want the deadline's error", buf[:n], err)
			}
		})
	}
}
