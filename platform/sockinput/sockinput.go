// Package sockinput tells whether a connection's peer has sent bytes that
// this process has not read yet. A server that is about to act on a
// peer's silence (evict it, time it out) asks first: on a busy machine
// its own goroutine can be late to read what the peer sent in time.
package sockinput

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pending reports whether bytes from c's peer wait unread in the socket
// (TIOCINQ, alias FIONREAD). It is false for a connection that is not a
// socket of this process, or when the kernel cannot say.
func Pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) })
	return n > 0
}
