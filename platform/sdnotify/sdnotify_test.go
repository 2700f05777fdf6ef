package sdnotify

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// listen is a manager's socket: a unixgram socket the test reads.
func listen(t *testing.T) (string, *net.UnixConn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return path, conn
}

func read(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestSendsEachNotification(t *testing.T) {
	path, conn := listen(t)
	env := map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "42"}
	n, err := New(func(k string) string { return env[k] }, 42)
	if err != nil || n == nil {
		t.Fatalf("New: %v, %v", n, err)
	}
	if got := n.WatchdogInterval(); got != 2*time.Second {
		t.Fatalf("watchdog interval %v, want 2s", got)
	}
	for _, c := range []struct {
		send func() error
		want string
	}{
		{func() error { return n.Ready("serving") }, "READY=1\nSTATUS=serving"},
		{n.Watchdog, "WATCHDOG=1"},
		{n.Stopping, "STOPPING=1"},
	} {
		if err := c.send(); err != nil {
			t.Fatal(err)
		}
		if got := read(t, conn); got != c.want {
			t.Fatalf("the manager read %q, want %q", got, c.want)
		}
	}
}

func TestWithoutASocketNothingIsSent(t *testing.T) {
	n, err := New(func(string) string { return "" }, 1)
	if n != nil || err != nil {
		t.Fatalf("New without NOTIFY_SOCKET: %v, %v", n, err)
	}
	if err := n.Ready("x"); err != nil || n.WatchdogInterval() != 0 {
		t.Fatalf("a nil notifier: %v, interval %v", err, n.WatchdogInterval())
	}
}

func TestAnotherProcesssWatchdogIsNotFed(t *testing.T) {
	path, _ := listen(t)
	env := map[string]string{"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": strconv.Itoa(7)}
	n, err := New(func(k string) string { return env[k] }, 8)
	if err != nil {
		t.Fatal(err)
	}
	if n.WatchdogInterval() != 0 {
		t.Fatalf("interval %v for another process's watchdog", n.WatchdogInterval())
	}
}

func TestBadEnvironmentIsAnError(t *testing.T) {
	for _, env := range []map[string]string{
		{"NOTIFY_SOCKET": "relative"},
		{"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "soon"},
		{"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "0"},
	} {
		if _, err := New(func(k string) string { return env[k] }, 1); err == nil {
			t.Errorf("New with %v: no error", env)
		}
	}
}
