// Package readiness decides whether the server can serve: the answer of
// GET /readyz, which load balancers read. It knows nothing of HTTP; the
// composition root gives it the checks.
package readiness

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Checks are what readiness is made of.
type Checks struct {
	// Bound reports why a port is not bound (nil: both are).
	Bound func() error
	// ModelLoaded reports whether a model is active.
	ModelLoaded func() bool
	// Readable reads the registry's record (in a fleet, from the shared
	// store) and reports why it cannot.
	Readable func(ctx context.Context) error
	// WithoutModel makes a server with no model ready
	// (-ready-without-model).
	WithoutModel bool
	// ReadTimeout bounds how long a probe waits for Readable; 0 means
	// 2 s. A probe must answer within its own timeout, and a registry
	// that does not answer in time is not readable.
	ReadTimeout time.Duration
}

// Service answers readiness. Its zero value is not usable; use New.
type Service struct {
	checks   Checks
	stopping atomic.Bool

	mu        sync.Mutex
	read      *flight       // the registry read in progress, shared by every probe; nil: none
	readLimit time.Duration // bounds one read (defaultReadLimit)
}

// flight is one registry read; err is set before done is closed.
type flight struct {
	done chan struct{}
	err  error
}

// readLimit bounds a registry read whatever the probes wait: a database
// read ends with its context; a file read on a hung disk may not, and
// then every later probe shares it instead of starting another.
const defaultReadLimit = 30 * time.Second

// New returns the service over checks.
func New(checks Checks) *Service {
	if checks.ReadTimeout <= 0 {
		checks.ReadTimeout = 2 * time.Second
	}
	return &Service{checks: checks, readLimit: defaultReadLimit}
}

// Stopping marks the server as shutting down: from then on it is never
// ready again.
func (s *Service) Stopping() { s.stopping.Store(true) }

// Reasons lists why the server is not ready; none means ready.
func (s *Service) Reasons(ctx context.Context) []string {
	var reasons []string
	if s.stopping.Load() {
		reasons = append(reasons, "the server is shutting down")
	}
	if s.checks.Bound != nil {
		if err := s.checks.Bound(); err != nil {
			reasons = append(reasons, err.Error())
		}
	}
	if !s.checks.WithoutModel && s.checks.ModelLoaded != nil && !s.checks.ModelLoaded() {
		reasons = append(reasons, "no model is loaded (POST /model/load; or run with -ready-without-model)")
	}
	if s.checks.Readable != nil {
		if err := s.readable(ctx); err != nil {
			reasons = append(reasons, fmt.Sprintf("the registry cannot be read: %v", err))
		}
	}
	return reasons
}

// readable waits at most ReadTimeout for a registry read: the one in
// progress if there is one, else a new one. Probes never pile up reads
// on a store that does not answer.
func (s *Service) readable(ctx context.Context) error {
	s.mu.Lock()
	f := s.read
	if f == nil {
		f = &flight{done: make(chan struct{})}
		s.read = f
		go func() {
			rctx, cancel := context.WithTimeout(context.Background(), s.readLimit)
			defer cancel()
			f.err = s.checks.Readable(rctx)
			s.mu.Lock()
			s.read = nil
			s.mu.Unlock()
			close(f.done)
		}()
	}
	s.mu.Unlock()
	t := time.NewTimer(s.checks.ReadTimeout)
	defer t.Stop()
	select {
	case <-f.done:
		return f.err
	case <-t.C:
		return fmt.Errorf("no answer within %v", s.checks.ReadTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}
