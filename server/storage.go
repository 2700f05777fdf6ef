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
// one each. Each caller waits at most the probe's timeout: on a hung
// file system (a network mount stalled in fsync) the caller gets a
// *probeTimeoutError at once, and the stuck probe stays the shared one, so no more than one
// probe goroutine is ever in flight; the first caller after it returns
// starts a fresh one.
type writeProbe struct {
	timeout time.Duration // 0: DefaultStorageProbeTimeout (HTTPConfig.StorageProbeTimeout)

	mu      sync.Mutex
	running *probeRun
}

// DefaultStorageProbeTimeout is how long a caller waits for the write
// probe by default (-storage-probe-timeout): long enough for an fsync on
// a disk busy with other writers, short enough that a hung mount shows
// at once.
const DefaultStorageProbeTimeout = 5 * time.Second

type probeRun struct {
	done chan struct{}
	err  error
}

// probeTimeoutError is a probe that did not finish within its timeout.
// It is 507 INSUFFICIENT_STORAGE (retryable), like a full disk.
type probeTimeoutError struct{ coded *contract.Error }

func newProbeTimeoutError(d time.Duration) *probeTimeoutError {
	return &probeTimeoutError{coded: contract.New(contract.InsufficientStorage, http.StatusInsufficientStorage,
		fmt.Sprintf("registry storage did not answer a 4 KiB write within %v", d))}
}

func (e *probeTimeoutError) Error() string { return e.coded.Error() }

// Unwrap gives the contract's coded error, which Classify maps.
func (e *probeTimeoutError) Unwrap() error { return e.coded }

// check runs probe, or joins the one already running, and returns its
// error, or a *probeTimeoutError when it has not finished within the
// timeout.
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
		timeout = DefaultStorageProbeTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-run.done:
		return run.err
	case <-timer.C:
		return newProbeTimeoutError(timeout)
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
	if pt := (*probeTimeoutError)(nil); errors.As(err, &pt) {
		return pt.coded.Message
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
