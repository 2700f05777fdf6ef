package pgdb

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Monitor pings the shared store and remembers whether it answered, for
// health and metrics: whether the database is up is known without a
// request having to fail first.
type Monitor struct {
	pool    *pgxpool.Pool
	every   time.Duration
	timeout time.Duration
	log     *slog.Logger
	// onUp runs after each ping that succeeds following one that failed.
	onUp func(context.Context)

	mu      sync.Mutex
	lastErr error
	since   time.Time // when the current state began
}

// MonitorOptions configure NewMonitor.
type MonitorOptions struct {
	// Every is the time between pings (default 1 s); Timeout bounds one
	// (default Every).
	Every, Timeout time.Duration
	// OnUp runs on the monitor's goroutine when the store answers again
	// after it did not: the moment to catch up with what changed.
	OnUp   func(context.Context)
	Logger *slog.Logger
}

// NewMonitor returns a monitor of pool that counts the store up until its
// first ping says otherwise; Run starts the pinging.
func NewMonitor(pool *pgxpool.Pool, o MonitorOptions) *Monitor {
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = o.Every
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Monitor{pool: pool, every: o.Every, timeout: o.Timeout, log: o.Logger, onUp: o.OnUp, since: time.Now()}
}

// Run pings until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.ping(ctx)
	}
}

func (m *Monitor) ping(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, m.timeout)
	err := m.pool.Ping(pctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	m.mu.Lock()
	wasDown := m.lastErr != nil
	changed := wasDown != (err != nil)
	m.lastErr = err
	if changed {
		m.since = time.Now()
	}
	m.mu.Unlock()
	switch {
	case changed && err != nil:
		m.log.Error("the shared store cannot be reached; predictions go on, management routes that need it answer STORE_UNAVAILABLE", "err", err)
	case changed:
		m.log.Info("the shared store answers again")
		if m.onUp != nil {
			m.onUp(ctx)
		}
	}
}

// Err is nil while the store answers, and the last ping's error since it
// stopped; Since is when that state began.
func (m *Monitor) Err() (err error, since time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastErr, m.since
}
