package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/registry"
	"ramanserve/registry/store"
)

// loadLockKey is the advisory lock key of the registry's exclusive
// operations: "rmnload" as an integer, a number no other user of the
// database is likely to pick.
const loadLockKey int64 = 0x726d6e6c6f6164

// FleetLock is the registry's fleet lock on PostgreSQL: a session
// advisory lock, held on a connection of its own for the whole load. If
// the holder dies, its session ends and PostgreSQL releases the lock: a
// killed replica never leaves the fleet unable to load.
type FleetLock struct{ pool *pgxpool.Pool }

// NewFleetLock returns the lock over pool's database.
func NewFleetLock(pool *pgxpool.Pool) *FleetLock { return &FleetLock{pool: pool} }

// TryLock implements registry.FleetLock.
func (l *FleetLock) TryLock(ctx context.Context) (func(), error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: take the fleet's load lock: %w", store.ErrRegistry, err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, loadLockKey).Scan(&got); err != nil {
		conn.Release()
		return nil, fmt.Errorf("%w: take the fleet's load lock: %w", store.ErrRegistry, err)
	}
	if !got {
		conn.Release()
		return nil, fmt.Errorf("%w: another replica is loading", registry.ErrLoadInProgress)
	}
	return func() {
		// The unlock must not be skipped because the request's context
		// ended: a background context, bounded. If it fails the
		// connection is closed, which releases the lock too.
		ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, loadLockKey); err != nil {
			conn.Conn().Close(ctx)
		}
		conn.Release()
	}, nil
}
