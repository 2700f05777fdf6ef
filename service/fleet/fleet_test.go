package fleet

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"ramanserve/platform/storeerr"
)

// TestMemoryStoreGoneRule: the embedded store applies the same rule as
// the database: silent past GoneAfter is gone, ordered oldest first.
func TestMemoryStoreGoneRule(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	m := NewMemoryStore()
	m.now = func() time.Time { return now }
	svc, _ := New(m, Options{})
	m.Heartbeat(ctx, Replica{ID: "old"})
	now = now.Add(5 * time.Second)
	m.Heartbeat(ctx, Replica{ID: "new"})
	now = now.Add(6 * time.Second) // old: 11 s silent, new: 6 s
	v, err := svc.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Replicas) != 2 || v.Replicas[0].ID != "old" || !v.Replicas[0].Gone || v.Replicas[1].Gone || v.Alive() != 1 || v.GoneAfter != DefaultGoneAfter {
		t.Fatalf("%+v", v)
	}
	m.Heartbeat(ctx, Replica{ID: "old"})
	v, _ = svc.List(ctx)
	if v.Alive() != 2 || !v.Replicas[0].StartedAt.Equal(now.Add(-11*time.Second)) {
		t.Fatalf("after old's next heartbeat: %+v", v)
	}
}

// flakyStore fails while down is set.
type flakyStore struct {
	*MemoryStore
	mu   sync.Mutex
	down bool
}

func (f *flakyStore) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

func (f *flakyStore) Heartbeat(ctx context.Context, r Replica) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return storeerr.ErrUnavailable
	}
	return f.MemoryStore.Heartbeat(ctx, r)
}

// TestHeartbeatLogsOncePerOutage: beats during an outage fail without a
// log line each; the outage is logged once, and its end once; the count
// of replicas alive follows the successful beats.
func TestHeartbeatLogsOncePerOutage(t *testing.T) {
	ctx := context.Background()
	store := &flakyStore{MemoryStore: NewMemoryStore()}
	svc, _ := New(store, Options{})
	var logs bytes.Buffer
	h := NewHeartbeat(svc, func() Replica { return Replica{ID: "me"} }, HeartbeatOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := h.Beat(ctx); err != nil || h.ReplicasAlive() != 1 {
		t.Fatalf("first beat: %v, alive %d", err, h.ReplicasAlive())
	}
	store.setDown(true)
	for range 5 {
		if err := h.Beat(ctx); !errors.Is(err, storeerr.ErrUnavailable) {
			t.Fatalf("beat while down: %v", err)
		}
	}
	store.setDown(false)
	if err := h.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if n := strings.Count(out, "fleet heartbeat failed"); n != 1 {
		t.Errorf("%d outage lines for one outage, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "fleet heartbeats resumed"); n != 1 {
		t.Errorf("%d lines for the end of the outage, want 1:\n%s", n, out)
	}
	if err := h.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := svc.List(ctx); len(v.Replicas) != 0 {
		t.Errorf("after Leave: %+v", v)
	}
}

// hangingStore's heartbeat blocks until its context ends.
type hangingStore struct{ *MemoryStore }

func (hangingStore) Heartbeat(ctx context.Context, _ Replica) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestBeatBoundedByItsPeriod: a store that hangs costs a beat its period,
// never more.
func TestBeatBoundedByItsPeriod(t *testing.T) {
	svc, _ := New(hangingStore{NewMemoryStore()}, Options{})
	h := NewHeartbeat(svc, func() Replica { return Replica{ID: "me"} }, HeartbeatOptions{Every: 50 * time.Millisecond})
	start := time.Now()
	if err := h.Beat(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("beat on a hanging store: %v", err)
	}
	// The store hangs for good: a beat that returns at all was bounded.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a beat on a hanging store took %v, want about its period", took)
	}
}
