// Package idlecpu runs a goroutine's work on the CPU the rest of the
// process leaves idle: the evidence workers (the prediction log's writer,
// the shadow scorer) use it so that, on a busy machine, they never take a
// core from the prediction channel.
//
// Enter locks the calling goroutine to its OS thread and gives that thread
// Linux's SCHED_IDLE policy: the kernel runs it only when no ordinary
// thread wants the core, and a waking ordinary thread preempts it at once.
// Where SCHED_IDLE is refused (a system-call filter), the thread gets the
// lowest nice value instead; where that is refused too, it keeps its
// priority and Enter says so.
//
// A goroutine locked to a thread keeps holding its scheduler slot (a P)
// while the kernel leaves that thread waiting, so the Go runtime needs one
// slot more per such goroutine (Threads), or the prediction channel would
// run on fewer slots than cores whenever the machine is busy. The program
// raises GOMAXPROCS by Threads (cmd/ramanserve).
package idlecpu

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Threads is the number of goroutines of the server that call Enter: the
// prediction log's writer and the shadow scorer's worker.
const Threads = 2

// lowestNice is the nice value of the fallback.
const lowestNice = 19

// Enter moves the calling goroutine, for the rest of its life, onto an OS
// thread of its own at idle priority. The thread ends with the goroutine
// (a locked goroutine that returns takes its thread with it), so no other
// goroutine ever runs at that priority. It returns nil when the thread runs
// at SCHED_IDLE or nice 19, else why not (the goroutine then runs at its
// ordinary priority, still on its own thread).
func Enter() error {
	runtime.LockOSThread()
	errIdle := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0)
	if errIdle == nil {
		return nil
	}
	errNice := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), lowestNice)
	if errNice == nil {
		return nil
	}
	return fmt.Errorf("idlecpu: the thread keeps its priority: %w", errors.Join(errIdle, errNice))
}

// Thread is a goroutine's own OS thread, entered at idle priority by
// EnterRaisable, whose priority another goroutine may raise to ordinary
// and lower again: a worker that must keep a promise (the prediction
// log's commit) runs at idle priority while it keeps up, and at ordinary
// priority while it does not.
type Thread struct {
	tid int
	// nice is the thread's nice value before it was lowered, the one
	// Raise restores: a process started at another nice value than 0
	// (systemd's Nice=) raises its writer to its own threads' level.
	nice int32
}

// ErrCannotRaise is returned by EnterRaisable when the process may not
// take a thread back from idle to ordinary priority: Linux allows it only
// with CAP_SYS_NICE or an RLIMIT_NICE of at least 20 (systemd:
// LimitNICE=+0).
var ErrCannotRaise = errors.New("idlecpu: this process may not raise a thread back from idle priority (needs CAP_SYS_NICE or RLIMIT_NICE >= 20, systemd LimitNICE=+0)")

// EnterRaisable locks the calling goroutine to its OS thread, for the rest
// of its life, and gives the thread SCHED_IDLE, but only once it has
// checked, on that thread, that it can raise it back (Raise): a worker
// that could be lowered but never raised again could not keep its
// promise. On an error the thread runs at ordinary priority, still locked.
func EnterRaisable() (*Thread, error) {
	runtime.LockOSThread()
	t := &Thread{tid: unix.Gettid()}
	attr, err := unix.SchedGetAttr(t.tid, 0)
	if err != nil {
		return nil, fmt.Errorf("idlecpu: %w", err)
	}
	t.nice = attr.Nice
	if err := t.Lower(); err != nil {
		return nil, fmt.Errorf("idlecpu: %w", err)
	}
	if err := t.Raise(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotRaise, err)
	}
	if err := t.Lower(); err != nil {
		return nil, fmt.Errorf("idlecpu: %w", err)
	}
	return t, nil
}

// Raise gives the thread ordinary priority (SCHED_OTHER) at the nice
// value it had before EnterRaisable. Any goroutine may call it.
func (t *Thread) Raise() error {
	return unix.SchedSetAttr(t.tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: t.nice}, 0)
}

// Lower gives the thread idle priority (SCHED_IDLE) again. Any goroutine
// may call it.
func (t *Thread) Lower() error {
	return unix.SchedSetAttr(t.tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}, 0)
}
