package idlecpu_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"ramanserve/platform/idlecpu"
)

// TestEnterLowersOnlyItsThread checks that the goroutine's thread runs at
// SCHED_IDLE (or nice 19 where that is refused), and that a thread of
// another goroutine keeps its ordinary policy.
func TestEnterLowersOnlyItsThread(t *testing.T) {
	type sched struct {
		policy uint32
		nice   int
		err    error
	}
	read := func() sched {
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			return sched{err: err}
		}
		return sched{policy: attr.Policy, nice: int(attr.Nice)}
	}
	got := make(chan sched)
	go func() {
		err := idlecpu.Enter()
		s := read()
		if err != nil {
			s.err = err
		}
		got <- s
	}()
	s := <-got
	if s.err != nil {
		t.Fatal(s.err)
	}
	if s.policy != unix.SCHED_IDLE && s.nice != 19 {
		t.Errorf("after Enter: policy %d nice %d, want SCHED_IDLE (%d) or nice 19", s.policy, s.nice, unix.SCHED_IDLE)
	}
	// The entered goroutine has returned, and its thread with it: no
	// other goroutine runs at idle priority.
	for range 50 {
		go func() { got <- read() }()
		if o := <-got; o.err == nil && (o.policy == unix.SCHED_IDLE || o.nice == 19) {
			t.Fatalf("a later goroutine runs at policy %d nice %d", o.policy, o.nice)
		}
	}
}

// TestRaisableThread: EnterRaisable leaves its thread at SCHED_IDLE;
// another goroutine raises it to SCHED_NORMAL and lowers it again, and
// only that thread changes. Skipped where the process may not raise.
func TestRaisableThread(t *testing.T) {
	th, tid := enteredThread(t, nil)
	if p := policyOf(t, tid); p != unix.SCHED_IDLE {
		t.Fatalf("after EnterRaisable: policy %d, want SCHED_IDLE", p)
	}
	if err := th.Raise(); err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, tid); p != unix.SCHED_NORMAL {
		t.Fatalf("after Raise: policy %d, want SCHED_NORMAL", p)
	}
	if err := th.Lower(); err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, tid); p != unix.SCHED_IDLE {
		t.Fatalf("after Lower: policy %d, want SCHED_IDLE", p)
	}
	if attr, err := unix.SchedGetAttr(0, 0); err != nil || attr.Policy != unix.SCHED_NORMAL {
		t.Fatalf("the test's own thread: %+v %v", attr, err)
	}
}

// enteredThread calls EnterRaisable on a goroutine of its own, then
// inside (when not nil) on that goroutine, and returns the thread and its
// id; the goroutine, and so the thread, lives until the test ends. It
// skips the test where the process may not raise.
func enteredThread(t *testing.T, inside func(*idlecpu.Thread)) (*idlecpu.Thread, int) {
	t.Helper()
	type entered struct {
		thread *idlecpu.Thread
		tid    int
		err    error
	}
	got := make(chan entered)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	go func() {
		th, err := idlecpu.EnterRaisable()
		if err == nil && inside != nil {
			inside(th)
		}
		got <- entered{th, unix.Gettid(), err}
		<-release // the thread ends with this goroutine
	}()
	e := <-got
	if errors.Is(e.err, idlecpu.ErrCannotRaise) {
		t.Skipf("cannot raise here: %v", e.err)
	}
	if e.err != nil {
		t.Fatal(e.err)
	}
	return e.thread, e.tid
}

// policyOf is the scheduling policy of thread tid.
func policyOf(t *testing.T, tid int) uint32 {
	t.Helper()
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatal(err)
	}
	return attr.Policy
}

// TestRaiseRestoresTheThreadsNice: a thread at nice 5 before
// EnterRaisable is raised back to nice 5, not 0: Raise restores the
// process's own level, whatever it was started at (systemd's Nice=).
func TestRaiseRestoresTheThreadsNice(t *testing.T) {
	got := make(chan error)
	release := make(chan struct{})
	defer close(release)
	var nice int32
	go func() {
		runtime.LockOSThread() // the thread ends with this goroutine, its nice value with it
		if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 5); err != nil {
			got <- err
			return
		}
		th, err := idlecpu.EnterRaisable()
		if err == nil {
			err = th.Raise()
		}
		if err == nil {
			var attr *unix.SchedAttr
			if attr, err = unix.SchedGetAttr(0, 0); err == nil {
				nice = attr.Nice
			}
		}
		got <- err
		<-release
	}()
	err := <-got
	if errors.Is(err, idlecpu.ErrCannotRaise) {
		t.Skipf("cannot raise here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if nice != 5 {
		t.Fatalf("after Raise: nice %d, want the 5 the thread had before", nice)
	}
}

// TestEndRaisesTheThreadForGood: End, called by the goroutine as it
// returns, leaves its thread at SCHED_NORMAL (its exit must not wait for
// idle CPU), and a later Lower from another goroutine does nothing.
func TestEndRaisesTheThreadForGood(t *testing.T) {
	th, tid := enteredThread(t, (*idlecpu.Thread).End)
	if err := th.Lower(); err != nil {
		t.Fatal(err)
	}
	if p := policyOf(t, tid); p != unix.SCHED_NORMAL {
		t.Fatalf("after End and a Lower: policy %d, want SCHED_NORMAL", p)
	}
}

// TestCannotRaiseLeavesTheThreadOrdinary: where the thread could not be
// raised back (no CAP_SYS_NICE, RLIMIT_NICE 0), EnterRaisable says so and
// leaves it at ordinary priority, instead of lowering it for good. It
// runs in a child process: without CAP_SYS_NICE (setpriv drops it from a
// root process's bounding set) and with RLIMIT_NICE 0 (the child sets
// it), as a service without the right to raise runs.
func TestCannotRaiseLeavesTheThreadOrdinary(t *testing.T) {
	if os.Getenv(cannotRaiseChild) == "1" {
		enterWithoutTheRightToRaise(t)
		return
	}
	args := []string{os.Args[0], "-test.run=^TestCannotRaiseLeavesTheThreadOrdinary$", "-test.count=1", "-test.v"}
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("root without setpriv (util-linux): cannot drop CAP_SYS_NICE for the child")
		}
		args = append([]string{setpriv, "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), cannotRaiseChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), cannotRaiseChecked) {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

const (
	cannotRaiseChild   = "IDLECPU_TEST_CANNOT_RAISE_CHILD"
	cannotRaiseChecked = "checked: ErrCannotRaise, the thread at SCHED_NORMAL"
)

// enterWithoutTheRightToRaise is the child of
// TestCannotRaiseLeavesTheThreadOrdinary.
func enterWithoutTheRightToRaise(t *testing.T) {
	if err := unix.Setrlimit(unix.RLIMIT_NICE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() {
		_, err := idlecpu.EnterRaisable() // the thread ends with this goroutine
		if !errors.Is(err, idlecpu.ErrCannotRaise) {
			got <- fmt.Errorf("EnterRaisable without the right to raise: %v, want ErrCannotRaise", err)
			return
		}
		attr, err := unix.SchedGetAttr(0, 0)
		if err == nil && attr.Policy != unix.SCHED_NORMAL {
			err = fmt.Errorf("after ErrCannotRaise: policy %d, want SCHED_NORMAL", attr.Policy)
		}
		got <- err
	}()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	t.Log(cannotRaiseChecked)
}
