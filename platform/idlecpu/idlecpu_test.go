package idlecpu_test

import (
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
