package fleet

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is the Store of a process without a shared database (the
// embedded store): it holds the rows of this process alone, so GET /fleet
// answers the same way for one process as for a fleet. Its clock is the
// process's.
type MemoryStore struct {
	now func() time.Time // a test seam; time.Now

	mu   sync.Mutex
	rows map[string]Replica
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{now: time.Now, rows: make(map[string]Replica)}
}

// Heartbeat writes r's row.
func (m *MemoryStore) Heartbeat(_ context.Context, r Replica) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r.StartedAt = now
	if prev, ok := m.rows[r.ID]; ok {
		r.StartedAt = prev.StartedAt
	}
	r.LastHeartbeat, r.Silence = now, 0
	m.rows[r.ID] = r
	return nil
}

// List returns every row.
func (m *MemoryStore) List(context.Context) ([]Replica, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Replica, 0, len(m.rows))
	for _, r := range m.rows {
		r.Silence = now.Sub(r.LastHeartbeat)
		out = append(out, r)
	}
	return out, nil
}

// Remove deletes id's row.
func (m *MemoryStore) Remove(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.rows, id)
	return nil
}

// Prune deletes the rows silent for longer than silence.
func (m *MemoryStore) Prune(_ context.Context, silence time.Duration) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, r := range m.rows {
		if now.Sub(r.LastHeartbeat) > silence {
			delete(m.rows, id)
		}
	}
	return nil
}
