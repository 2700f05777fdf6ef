package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Heartbeat writes this replica's row at a steady pace, counts the
// replicas it then sees alive (ramanserve_fleet_replicas), and now and
// then deletes the rows of replicas gone long ago.
//
// It never holds anything else up: each beat is bounded by the pace, so a
// database that hangs costs one missed beat per period and no pile-up,
// and a failure is logged once per outage (and once when it ends), not at
// every beat. While the store is down the row ages, and the other
// replicas show this one as gone after their GoneAfter: from where they
// stand it is.
type Heartbeat struct {
	service     *Service
	self        func() Replica
	every       time.Duration
	forgetAfter time.Duration
	log         *slog.Logger
	alive       atomic.Int64

	mu         sync.Mutex // one beat at a time; guards the fields below
	failing    bool       // the last beat failed: the outage was logged
	lastPruned time.Time
}

// HeartbeatOptions configure NewHeartbeat.
type HeartbeatOptions struct {
	// Every is the pace of the beats and the bound of each (default
	// HeartbeatEvery).
	Every time.Duration
	// ForgetAfter is how long a gone replica's row is kept (default
	// DefaultForgetAfter); the rows are pruned at most once a minute.
	ForgetAfter time.Duration
	Logger      *slog.Logger
}

// pruneEvery is how often a replica deletes forgotten rows: often enough
// that they do not pile up, rarely enough that a fleet's replicas do not
// all issue the same DELETE every second.
const pruneEvery = time.Minute

// NewHeartbeat returns the beat of the replica self describes, writing
// through service's store. self is called at each beat: what the replica
// serves changes while it runs.
func NewHeartbeat(service *Service, self func() Replica, o HeartbeatOptions) *Heartbeat {
	if o.Every <= 0 {
		o.Every = HeartbeatEvery
	}
	if o.ForgetAfter <= 0 {
		o.ForgetAfter = DefaultForgetAfter
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Heartbeat{service: service, self: self, every: o.Every, forgetAfter: o.ForgetAfter, log: o.Logger}
}

// Run beats every period until ctx ends.
func (h *Heartbeat) Run(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.Beat(ctx)
	}
}

// Beat writes the row once, within one period, then refreshes the count
// of replicas alive and prunes when it is time. The error is also logged,
// once per outage.
func (h *Heartbeat) Beat(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	bctx, cancel := context.WithTimeout(ctx, h.every)
	defer cancel()
	err := h.beat(bctx)
	if ctx.Err() != nil {
		return err // stopping: not an outage
	}
	h.noteOutcome(err)
	return err
}

func (h *Heartbeat) beat(ctx context.Context) error {
	store := h.service.store
	if err := store.Heartbeat(ctx, h.self()); err != nil {
		return err
	}
	view, err := h.service.List(ctx)
	if err != nil {
		return err
	}
	h.alive.Store(int64(view.Alive()))
	if time.Since(h.lastPruned) >= pruneEvery {
		if err := store.Prune(ctx, h.forgetAfter); err != nil {
			return err
		}
		h.lastPruned = time.Now()
	}
	return nil
}

// noteOutcome logs the first failure of an outage and its end.
func (h *Heartbeat) noteOutcome(err error) {
	switch {
	case err != nil && !h.failing:
		h.failing = true
		h.log.Warn("fleet heartbeat failed; the other replicas will show this one as gone until the store answers again",
			"gone_after", h.service.goneAfter, "err", err)
	case err == nil && h.failing:
		h.failing = false
		h.log.Info("fleet heartbeats resumed")
	}
}

// Leave deletes this replica's row: a clean shutdown is not a replica
// gone missing.
func (h *Heartbeat) Leave(ctx context.Context) error {
	if err := h.service.store.Remove(ctx, h.self().ID); err != nil {
		return fmt.Errorf("fleet: remove this replica's row: %w", err)
	}
	return nil
}

// ReplicasAlive is how many replicas, this one included, the last beat
// that reached the store saw alive; 0 before the first.
func (h *Heartbeat) ReplicasAlive() int { return int(h.alive.Load()) }
