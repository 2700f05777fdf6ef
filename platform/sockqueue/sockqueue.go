// Package sockqueue tells what waits in a connection's socket queues:
// bytes its peer has sent that this process has not read yet, and bytes
// this process has written that its peer has not yet taken. A server
// that is about to act on a peer's silence or slowness (evict it, time
// it out) asks first: on a busy machine its own goroutine can be late to
// read what the peer sent in time, or to write what the peer is ready
// to take.
package sockqueue

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pending reports whether bytes from c's peer wait unread in the socket
// (TIOCINQ, alias FIONREAD). It is false for a connection that is not a
// socket of this process, or when the kernel cannot say.
func Pending(c net.Conn) bool {
	n, ok := queued(c, unix.TIOCINQ)
	return ok && n > 0
}

// Unsent reports whether bytes written to c wait in the socket for its
// peer to take them (TIOCOUTQ, alias SIOCOUTQ: sent and not yet
// acknowledged, or not yet sent). It is true when the kernel cannot say,
// so that a caller never takes an unknown send queue for an empty one.
func Unsent(c net.Conn) bool {
	n, ok := queued(c, unix.TIOCOUTQ)
	return !ok || n > 0
}

// queued asks the kernel for the length of one of c's socket queues.
func queued(c net.Conn, req uint) (n int, ok bool) {
	sc, isSocket := c.(syscall.Conn)
	if !isSocket {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var ioctlErr error
	if err := raw.Control(func(fd uintptr) { n, ioctlErr = unix.IoctlGetInt(int(fd), req) }); err != nil || ioctlErr != nil {
		return 0, false
	}
	return n, true
}
