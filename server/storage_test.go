package server

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"ramanserve/server/contract"
)

// TestWriteProbeShared: health requests that arrive while a probe runs
// share it, so a flood of them costs one write at a time; a later request
// runs a fresh probe.
// In a synctest bubble, so that the probe is released only once all 20
// checks wait on it (synctest.Wait), however slowly the goroutines start,
// and the probe timeout runs on the bubble's clock, which stands still
// while the test goroutine works.
func TestWriteProbeShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p writeProbe
		var calls atomic.Int32
		release := make(chan struct{})
		probe := func() error {
			calls.Add(1)
			<-release
			return syscall.ENOSPC
		}
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- p.check(probe) }()
		}
		synctest.Wait() // every check waits on the one probe
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("shared probe result = %v", err)
			}
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("20 concurrent checks ran %d probes, want 1", n)
		}
		if err := p.check(func() error { return nil }); err != nil {
			t.Fatalf("a later check reused an old result: %v", err)
		}
	})
}

func TestStorageReason(t *testing.T) {
	wrap := func(errno syscall.Errno) error {
		return fmt.Errorf("registry: not writable: %w", &fs.PathError{Op: "write", Path: "/secret/path/.probe", Err: errno})
	}
	for errno, want := range map[syscall.Errno]string{
		syscall.ENOSPC: "ENOSPC", syscall.EROFS: "EROFS", syscall.EDQUOT: "EDQUOT", syscall.ENOENT: "write: no such file",
	} {
		got := storageReason(wrap(errno))
		if !strings.Contains(got, want) || strings.Contains(got, "/secret/path") {
			t.Errorf("storageReason(%v) = %q, want it to name %q and no path", errno, got, want)
		}
	}
}

// TestWriteProbeDeadline: on a file system that does not answer (a probe
// stuck in fsync), every check returns errStorageTimeout within
// probeTimeout, 507 INSUFFICIENT_STORAGE and retryable, with health's
// reason naming it; the stuck probe stays the only one in flight however
// many checks come; once it returns, the next check runs a fresh probe.
func TestWriteProbeDeadline(t *testing.T) {
	t.Parallel() // waits on its own server's timers: runs beside the others
	const probeTimeout = time.Second
	p := writeProbe{timeout: probeTimeout}
	var calls, inFlight, most atomic.Int32
	stuck := make(chan struct{})
	hung := func() error {
		calls.Add(1)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-stuck
		return nil
	}
	start := time.Now()
	err := p.check(hung)
	if took := time.Since(start); !errors.As(err, new(*probeTimeoutError)) || took < probeTimeout || took > probeTimeout+10*time.Second {
		t.Fatalf("check on a hung disk: %v after %v, want a probe timeout after %v", err, took, probeTimeout)
	}
	if cl := contract.Classify(err); cl.Code != contract.InsufficientStorage || cl.Status != 507 || !cl.Retryable {
		t.Fatalf("a probe timeout classifies as %+v, want 507 INSUFFICIENT_STORAGE retryable", cl)
	}
	if r := storageReason(err); r != "registry storage did not answer a 4 KiB write within 1s" {
		t.Fatalf("health reason %q", r)
	}

	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.check(hung); !errors.As(err, new(*probeTimeoutError)) {
				t.Errorf("check while the probe is stuck: %v", err)
			}
		}()
	}
	wg.Wait()
	if n, m := calls.Load(), most.Load(); n != 1 || m != 1 {
		t.Fatalf("21 checks on a hung disk started %d probes, %d at once; want the stuck one only", n, m)
	}

	close(stuck)
	deadline := time.Now().Add(time.Second)
	for {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if running == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stuck probe did not finish after the disk answered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.check(func() error { return syscall.ENOSPC }); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("check after the disk answered: %v, want a fresh probe's ENOSPC", err)
	}
}
