package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
	"syscall"
	"time"

	"ramanserve/server/contract"
)

// writeProbe runs the registry's write probe for GET /health, one at a
// time: callers that arrive while a probe is running share its result, so
// a flood of health requests costs one write and fsync at a time, never
// one each. Each caller waits at most probeTimeout: on a hung file system
// (a network mount stalled in fsync) the caller gets errStorageTimeout at
// once, and the stuck probe stays the shared one, so no more than one
// probe goroutine is ever in flight; the first caller after it returns
// starts a fresh one.
type writeProbe struct {
	timeout time.Duration // 0: probeTimeout; a test seam

	mu      sync.Mutex
	running *probeRun
}

// probeTimeout is how long a caller waits for the write probe.
const probeTimeout = time.Second

type probeRun struct {
	done chan struct{}
	err  error
}

// errStorageTimeout is a probe that did not finish within probeTimeout.
// It is 507 INSUFFICIENT_STORAGE (retryable), like a full disk.
var errStorageTimeout = contract.New(contract.InsufficientStorage, http.StatusInsufficientStorage,
	fmt.Sprintf("registry storage did not answer a 4 KiB write within %v", probeTimeout))

// check runs probe, or joins the one already running, and returns its
// error, or errStorageTimeout when it has not finished within the timeout.
func (p *writeProbe) check(probe func() error) error {
	p.mu.Lock()
	run := p.running
	if run == nil {
		run = &probeRun{done: make(chan struct{})}
		p.running = run
		go p.run(run, probe)
	}
	p.mu.Unlock()

	timeout := p.timeout
	if timeout <= 0 {
		timeout = probeTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-run.done:
		return run.err
	case <-timer.C:
		return errStorageTimeout
	}
}

// run runs probe and publishes its result to every caller waiting on it.
func (p *writeProbe) run(run *probeRun, probe func() error) {
	run.err = probe()
	p.mu.Lock()
	p.running = nil
	p.mu.Unlock()
	close(run.done)
}

// storageReason is health's degraded reason for a failed write probe: it
// names the condition and the errno, so an operator knows what to fix.
func storageReason(err error) string {
	if errors.Is(err, errStorageTimeout) {
		return errStorageTimeout.Message
	}
	const prefix = "registry directory cannot take a write: "
	switch contract.StorageErrno(err) {
	case syscall.ENOSPC:
		return prefix + "the disk is full (ENOSPC)"
	case syscall.EROFS:
		return prefix + "the file system is read-only (EROFS)"
	case syscall.EDQUOT:
		return prefix + "the disk quota is exhausted (EDQUOT)"
	}
	// Other failures name the call and errno, not the path: health is
	// answered to anyone who can reach the port.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return prefix + pe.Op + ": " + pe.Err.Error()
	}
	return prefix + err.Error()
}
