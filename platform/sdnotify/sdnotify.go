// Package sdnotify speaks systemd's notification protocol (sd_notify(3)):
// datagrams of "KEY=value" lines on the unix socket named by
// NOTIFY_SOCKET, for a service of Type=notify (READY=1, STOPPING=1) and
// its watchdog (WATCHDOG=1 within WATCHDOG_USEC).
package sdnotify

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// Notifier sends notifications to the service manager. A nil *Notifier
// (no NOTIFY_SOCKET: not started by systemd, or not Type=notify) sends
// nothing, and every method is a no-op.
type Notifier struct {
	addr     *net.UnixAddr
	watchdog time.Duration
}

// New reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID through getenv;
// pid is this process's id. It returns nil when there is no socket. A
// socket name starting with "@" is in the abstract namespace.
func New(getenv func(string) string, pid int) (*Notifier, error) {
	name := getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil, nil
	}
	if name[0] != '@' && name[0] != '/' {
		return nil, fmt.Errorf("NOTIFY_SOCKET %q: not an absolute path or an abstract socket name", name)
	}
	n := &Notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}}
	if name[0] == '@' {
		n.addr.Name = "\x00" + name[1:]
	}
	if usec := getenv("WATCHDOG_USEC"); usec != "" {
		// A watchdog meant for another process (the variables inherited
		// by a child) is not ours to feed.
		if p := getenv("WATCHDOG_PID"); p == "" || p == strconv.Itoa(pid) {
			v, err := strconv.ParseInt(usec, 10, 64)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("WATCHDOG_USEC %q: not a positive number of microseconds", usec)
			}
			n.watchdog = time.Duration(v) * time.Microsecond
		}
	}
	return n, nil
}

// Send sends one notification, state being "KEY=value" lines.
func (n *Notifier) Send(state string) error {
	if n == nil {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	defer conn.Close()
	// A datagram socket never blocks for long, but a manager that does
	// not read must not hold the caller.
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify: %w", err)
	}
	return nil
}

// Ready tells the manager the service is up (READY=1), with a status line.
func (n *Notifier) Ready(status string) error {
	return n.Send("READY=1\nSTATUS=" + status)
}

// Stopping tells the manager the service is shutting down (STOPPING=1).
func (n *Notifier) Stopping() error { return n.Send("STOPPING=1") }

// Watchdog feeds the watchdog (WATCHDOG=1).
func (n *Notifier) Watchdog() error { return n.Send("WATCHDOG=1") }

// WatchdogInterval is WATCHDOG_USEC: the manager kills the service when
// no WATCHDOG=1 arrives within it; 0 when there is no watchdog.
func (n *Notifier) WatchdogInterval() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}
