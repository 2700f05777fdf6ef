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
	"time"
)

// TestWriteProbeShared: health requests that arrive while a probe runs
// share it, so a flood of them costs one write at a time; a later request
// runs a fresh probe.
func TestWriteProbeShared(t *testing.T) {
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
	time.Sleep(100 * time.Millisecond)
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
