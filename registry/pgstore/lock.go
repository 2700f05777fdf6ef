package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/registry"
	"ramanserve/registry/store"
)

// loadLockKey is the advisory lock key of the registry's exclusive
// operations: "rmnload" as an integer, a number no other user of the
// database is likely to pick.
const loadLockKey int64 = 0x726d6e6c6f6164

// Timings of the fleet's revision record.
const (
	// followerLive is how long after its last record a replica is still
	// waited for: its catch-ups record at least every 2 s (Watch's
	// fallback), so a replica silent for longer is down or cut off from
	// the database, and a load does not wait for it.
	followerLive = 6 * time.Second
	// awaitPoll is the pause between two reads of the revisions served
	// while a load waits for the fleet.
	awaitPoll = 2 * time.Millisecond
)

// Fleet is registry.Fleet on PostgreSQL, for the replica it names.
//
// The lock is a session advisory lock, held on a connection of its own
// for the whole load: if the holder dies, its session ends and
// PostgreSQL releases the lock, so a killed replica never leaves the
// fleet unable to load. The revisions served are rows of
// registry_followers; revisions come from a sequence, so "rev or later"
// is a comparison.
type Fleet struct {
	pool    *pgxpool.Pool
	replica string
}

// NewFleet returns the fleet's side of replica on pool's database.
func NewFleet(pool *pgxpool.Pool, replica string) *Fleet { return &Fleet{pool: pool, replica: replica} }

// TryLock implements registry.Fleet.
func (f *Fleet) TryLock(ctx context.Context) (func(), error) {
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		return nil, dbError("take the fleet's load lock", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, loadLockKey).Scan(&got); err != nil {
		conn.Release()
		return nil, dbError("take the fleet's load lock", err)
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

// Served implements registry.Fleet.
func (f *Fleet) Served(ctx context.Context, rev store.Revision) error {
	_, err := f.pool.Exec(ctx, `INSERT INTO registry_followers (replica_id, revision, seen_at) VALUES ($1, $2, now())
		ON CONFLICT (replica_id) DO UPDATE SET revision = excluded.revision, seen_at = now()`, f.replica, int64(rev))
	if err != nil {
		return dbError("record the revision served", err)
	}
	return nil
}

// AwaitServed implements registry.Fleet: it reads the replicas seen
// within followerLive that serve an older revision, until there are none
// or ctx ends.
func (f *Fleet) AwaitServed(ctx context.Context, rev store.Revision) ([]string, error) {
	for {
		behind, err := f.behind(ctx, rev)
		if err != nil || len(behind) == 0 {
			return behind, err
		}
		select {
		case <-ctx.Done():
			return behind, ctx.Err()
		case <-time.After(awaitPoll):
		}
	}
}

func (f *Fleet) behind(ctx context.Context, rev store.Revision) ([]string, error) {
	rows, err := f.pool.Query(ctx, `SELECT replica_id FROM registry_followers
		WHERE revision < $1 AND replica_id <> $2 AND seen_at > now() - make_interval(secs => $3)
		ORDER BY replica_id`, int64(rev), f.replica, followerLive.Seconds())
	if err != nil {
		return nil, dbError("read the revisions served", err)
	}
	var behind []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, dbError("read the revisions served", err)
		}
		behind = append(behind, id)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("read the revisions served", err)
	}
	return behind, nil
}

// Leave removes this replica's record, on a clean shutdown, so that no
// load waits for it.
func (f *Fleet) Leave(ctx context.Context) error {
	if _, err := f.pool.Exec(ctx, `DELETE FROM registry_followers WHERE replica_id = $1`, f.replica); err != nil {
		return dbError("leave the fleet", err)
	}
	return nil
}
