// Package fleet holds the use case of a fleet's membership: which
// replicas share the store, what each serves, and which of them are gone.
// Each replica writes its own row through a Heartbeat loop; GET /fleet
// reads every row through Service. The transports call it; it knows
// nothing of HTTP, and the rows live in a Store: the fleet's PostgreSQL
// database (package pgfleet), or, for a single process with the embedded
// store, memory (MemoryStore).
package fleet

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

// The membership's timing. A replica writes its row every HeartbeatEvery
// and counts as gone once DefaultGoneAfter has passed without a
// heartbeat: ten beats in a row must be missed, so a garbage-collection
// pause, a slow statement or a database restart of a few seconds does
// not flap a live replica to gone, while a replica that crashed or lost
// the database shows as gone within ten seconds. A gone replica's row is
// kept for DefaultForgetAfter (an operator sees what vanished), then
// deleted by whichever replica prunes next, so that restarts, each a new
// replica id, do not pile up rows.
const (
	HeartbeatEvery     = time.Second
	DefaultGoneAfter   = 10 * time.Second
	DefaultForgetAfter = time.Hour
)

// Replica is one replica's row: what it says of itself at each heartbeat.
type Replica struct {
	ID            string
	Host          string
	HTTPAddress   string // the bound management address, e.g. "127.0.0.1:5556"
	ZMQEndpoint   string // the bound prediction endpoint, e.g. "tcp://127.0.0.1:5555"
	VersionServed string // "" when no model is active
	ShadowVersion string // "" when no shadow is set
	// Ready: the replica serves the model the fleet's index names and
	// reaches the store.
	Ready bool

	// Set by the store on List, from its own clock (the database's for a
	// fleet), so that the replicas' clocks never need to agree.
	StartedAt     time.Time     // the replica's first heartbeat
	LastHeartbeat time.Time     // its latest
	Silence       time.Duration // how long ago LastHeartbeat was
}

// Store keeps the replicas' rows. Implementations wrap a failure to reach
// the store with storeerr.ErrUnavailable.
type Store interface {
	// Heartbeat writes r's row (by r.ID), stamping it with the store's
	// clock; the first one of an id also sets its StartedAt.
	Heartbeat(ctx context.Context, r Replica) error
	// List returns every row, Silence filled in.
	List(ctx context.Context) ([]Replica, error)
	// Remove deletes id's row (a clean shutdown); an unknown id is no
	// error.
	Remove(ctx context.Context, id string) error
	// Prune deletes the rows silent for longer than silence.
	Prune(ctx context.Context, silence time.Duration) error
}

// Member is a replica as GET /fleet shows it.
type Member struct {
	Replica
	// Gone: no heartbeat for longer than the view's GoneAfter.
	Gone bool
}

// View is the fleet as one replica sees it.
type View struct {
	Replicas  []Member // oldest first, ties by id
	GoneAfter time.Duration
}

// Alive counts the members that are not gone.
func (v View) Alive() int {
	n := 0
	for _, m := range v.Replicas {
		if !m.Gone {
			n++
		}
	}
	return n
}

// Service lists the fleet's replicas under the gone rule.
type Service struct {
	store     Store
	goneAfter time.Duration
}

// Options configure New.
type Options struct {
	// GoneAfter is how long a replica may go without a heartbeat before
	// it is shown as gone (default DefaultGoneAfter).
	GoneAfter time.Duration
}

// New returns the membership's use cases over store.
func New(store Store, o Options) (*Service, error) {
	if store == nil {
		return nil, errors.New("fleet: no store")
	}
	if o.GoneAfter <= 0 {
		o.GoneAfter = DefaultGoneAfter
	}
	return &Service{store: store, goneAfter: o.GoneAfter}, nil
}

// GoneAfter is the bound after which a silent replica is gone.
func (s *Service) GoneAfter() time.Duration { return s.goneAfter }

// List returns every replica the store holds, each marked gone or not.
func (s *Service) List(ctx context.Context) (View, error) {
	rows, err := s.store.List(ctx)
	if err != nil {
		return View{}, err
	}
	v := View{Replicas: make([]Member, 0, len(rows)), GoneAfter: s.goneAfter}
	for _, r := range rows {
		v.Replicas = append(v.Replicas, Member{Replica: r, Gone: r.Silence > s.goneAfter})
	}
	slices.SortFunc(v.Replicas, func(a, b Member) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return v, nil
}
