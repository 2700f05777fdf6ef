package server

import (
	"errors"
	"io/fs"
	"sync"
	"syscall"

	"ramanserve/server/contract"
)

// writeProbe runs the registry's write probe for GET /health, one at a
// time: callers that arrive while a probe is running share its result, so
// a flood of health requests costs one write and fsync at a time, never
// one each. Every caller still gets a result no older than its own request.
type writeProbe struct {
	mu      sync.Mutex
	running *probeRun
}

type probeRun struct {
	done chan struct{}
	err  error
}

// check runs probe, or waits for the one already running, and returns its
// error.
func (p *writeProbe) check(probe func() error) error {
	p.mu.Lock()
	if run := p.running; run != nil {
		p.mu.Unlock()
		<-run.done
		return run.err
	}
	run := &probeRun{done: make(chan struct{})}
	p.running = run
	p.mu.Unlock()

	run.err = probe()
	p.mu.Lock()
	p.running = nil
	p.mu.Unlock()
	close(run.done)
	return run.err
}

// storageReason is health's degraded reason for a failed write probe: it
// names the condition and the errno, so an operator knows what to fix.
func storageReason(err error) string {
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
