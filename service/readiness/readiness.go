// Package readiness decides whether the server can serve: the answer of
// GET /readyz, which load balancers read. It knows nothing of HTTP; the
// composition root gives it the checks.
package readiness

import (
	"context"
	"fmt"
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
	// ReadTimeout bounds Readable; 0 means 2 s. A probe must answer
	// within its own timeout, and a registry that does not answer in
	// time is not readable.
	ReadTimeout time.Duration
}

// Service answers readiness. Its zero value is not usable; use New.
type Service struct {
	checks   Checks
	stopping atomic.Bool
}

// New returns the service over checks.
func New(checks Checks) *Service {
	if checks.ReadTimeout <= 0 {
		checks.ReadTimeout = 2 * time.Second
	}
	return &Service{checks: checks}
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
		rctx, cancel := context.WithTimeout(ctx, s.checks.ReadTimeout)
		err := s.checks.Readable(rctx)
		cancel()
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("the registry cannot be read: %v", err))
		}
	}
	return reasons
}
