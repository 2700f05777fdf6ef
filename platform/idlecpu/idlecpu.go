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
	"sync"

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
// ordinary priority, still on its own thread). Nothing raises such a
// thread again, so on a machine kept busy its last work and its exit wait
// for idle CPU: EnterRaisable, where the process may raise, avoids that.
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
// priority while it does not, and one that is closing finishes at
// ordinary priority, so that a busy machine cannot hold a shutdown.
type Thread struct {
	tid int
	// nice is the thread's nice value before it was lowered, the one
	// Raise restores: a process started at another nice value than 0
	// (systemd's Nice=) raises its writer to its own threads' level.
	nice int32

	mu sync.Mutex
	// ended is set by End: the thread is gone, or going, and its id may
	// be given to another thread.
	ended bool
}

// ErrCannotRaise is returned by EnterRaisable when the process may not
// take a thread back from idle to ordinary priority: Linux allows it only
// with CAP_SYS_NICE, or an RLIMIT_NICE of at least 20 minus the thread's
// nice value (systemd: LimitNICE= set to the unit's Nice=, +0 by default).
var ErrCannotRaise = errors.New("idlecpu: this process may not raise a thread back from idle priority (needs CAP_SYS_NICE, or an RLIMIT_NICE of 20 minus its nice value: systemd LimitNICE= equal to Nice=)")

// EnterRaisable locks the calling goroutine to its OS thread, for the rest
// of its life, and gives the thread SCHED_IDLE, but only once a trial on
// a thread of its own has raised one back (Raise): a worker that could be
// lowered but never raised again could not keep its promise, nor finish
// its work at shutdown on a busy machine. On ErrCannotRaise the thread
// runs at ordinary priority, still locked. The goroutine calls End as it
// returns.
func EnterRaisable() (*Thread, error) {
	runtime.LockOSThread()
	t := &Thread{tid: unix.Gettid()}
	attr, err := unix.SchedGetAttr(t.tid, 0)
	if err != nil {
		return nil, fmt.Errorf("idlecpu: %w", err)
	}
	t.nice = attr.Nice
	// The trial runs on another thread: a thread lowered that then fails
	// to rise stays at idle priority for good. The kernel's rule has too
	// many inputs (capabilities in which user namespace, an LSM, limits a
	// filter may hide) to be predicted from here.
	if err := tryRaise(t.nice); err != nil {
		return nil, err
	}
	if err := t.lower(); err != nil {
		return nil, fmt.Errorf("idlecpu: %w", err)
	}
	if err := t.raise(); err != nil {
		// Only a thread whose own credentials differ from the trial's
		// gets here, and it stays at idle priority.
		return nil, fmt.Errorf("%w (this thread stays at idle priority): %v", ErrCannotRaise, err)
	}
	if err := t.lower(); err != nil {
		return nil, fmt.Errorf("idlecpu: %w", err)
	}
	return t, nil
}

// tryRaise lowers a new thread to SCHED_IDLE and raises it back to
// SCHED_NORMAL at nice, and says whether that was allowed. The thread
// ends with its goroutine, which never unlocks it: no other goroutine
// ever runs on it, even when it could not be raised.
func tryRaise(nice int32) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		trial := &Thread{tid: unix.Gettid(), nice: nice}
		// At the caller's nice value, which the raise must restore.
		// sched_setattr, not setpriority: the systemd unit's filter
		// allows the one and refuses the other (@resources).
		if err := trial.raise(); err != nil {
			errc <- fmt.Errorf("%w: %v", ErrCannotRaise, err)
			return
		}
		if err := trial.lower(); err != nil {
			errc <- fmt.Errorf("idlecpu: %w", err)
			return
		}
		if err := trial.raise(); err != nil {
			errc <- fmt.Errorf("%w: %v", ErrCannotRaise, err)
			return
		}
		errc <- nil
	}()
	return <-errc
}

// Raise gives the thread ordinary priority (SCHED_OTHER) at the nice
// value it had before EnterRaisable. Any goroutine may call it; after End
// it does nothing.
func (t *Thread) Raise() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	return t.raise()
}

// Lower gives the thread idle priority (SCHED_IDLE) again. Any goroutine
// may call it; after End it does nothing.
func (t *Thread) Lower() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	return t.lower()
}

// End is called by the goroutine that entered, as it returns. It raises
// the thread: the thread ends with the goroutine, and a thread still at
// idle priority on a busy machine can wait seconds for the core it needs
// to exit, which holds the exit of the whole process. Later calls to
// Raise and Lower do nothing, since the kernel may give the thread's id
// to another thread.
func (t *Thread) End() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		_ = t.raise() // EnterRaisable checked that it may
		t.ended = true
	}
}

func (t *Thread) raise() error {
	return unix.SchedSetAttr(t.tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: t.nice}, 0)
}

func (t *Thread) lower() error {
	return unix.SchedSetAttr(t.tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE, Nice: t.nice}, 0)
}
