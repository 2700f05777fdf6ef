// Package pgfleet is the fleet's membership store on PostgreSQL: it
// implements fleet.Store over the table fleet_replicas of migration
// 00001_fleet.sql (package platform/pgdb applies it), one row per
// replica, upserted by replica_id.
//
// Every time it writes or compares is the database's (now()): the
// replicas' clocks may disagree, the database's is the one they share, so
// a replica whose clock runs ahead is not taken for alive, nor one whose
// clock lags for gone.
//
// Ownership: the Store does not own the pool it is given (it is shared
// with the fleet's other stores); whoever opened the pool closes it.
package pgfleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/platform/pgdb"
	"ramanserve/service/fleet"
)

// Store is the membership in PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
}

var _ fleet.Store = (*Store)(nil)

// New returns the store over pool, whose schema must be migrated
// (pgdb.Open with Migrate, or ramanserve migrate).
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgfleet: no database pool")
	}
	return &Store{pool: pool}, nil
}

// addresses is the addresses column: where a replica can be reached.
type addresses struct {
	HTTP string `json:"http"`
	ZMQ  string `json:"zmq"`
}

// heartbeatSQL writes a replica's row. started_at takes its default
// (now()) on the first heartbeat and is never changed after.
const heartbeatSQL = `INSERT INTO fleet_replicas
		(replica_id, host, addresses, version_served, shadow_version, ready, heartbeat_at)
	VALUES ($1, $2, $3, $4, $5, $6, now())
	ON CONFLICT (replica_id) DO UPDATE SET
		host = EXCLUDED.host, addresses = EXCLUDED.addresses,
		version_served = EXCLUDED.version_served, shadow_version = EXCLUDED.shadow_version,
		ready = EXCLUDED.ready, heartbeat_at = now()`

// Heartbeat writes r's row, stamped with the database's clock.
func (s *Store) Heartbeat(ctx context.Context, r fleet.Replica) error {
	addr := addresses{HTTP: r.HTTPAddress, ZMQ: r.ZMQEndpoint} // pgx encodes it as JSON
	if _, err := s.pool.Exec(ctx, heartbeatSQL, r.ID, r.Host, addr, r.VersionServed, r.ShadowVersion, r.Ready); err != nil {
		return fmt.Errorf("pgfleet: heartbeat: %w", pgdb.Classify(err))
	}
	return nil
}

// listSQL reads every row, with its silence measured by the database.
const listSQL = `SELECT replica_id, host, addresses, version_served, shadow_version, ready,
		started_at, heartbeat_at, extract(epoch FROM now() - heartbeat_at)::float8
	FROM fleet_replicas`

// List returns every row.
func (s *Store) List(ctx context.Context) ([]fleet.Replica, error) {
	rows, err := s.pool.Query(ctx, listSQL)
	if err != nil {
		return nil, fmt.Errorf("pgfleet: list: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	var out []fleet.Replica
	for rows.Next() {
		var (
			r       fleet.Replica
			addr    addresses
			silence float64
		)
		if err := rows.Scan(&r.ID, &r.Host, &addr, &r.VersionServed, &r.ShadowVersion, &r.Ready,
			&r.StartedAt, &r.LastHeartbeat, &silence); err != nil {
			return nil, fmt.Errorf("pgfleet: list: %w", pgdb.Classify(err))
		}
		r.HTTPAddress, r.ZMQEndpoint = addr.HTTP, addr.ZMQ
		r.Silence = secondsToDuration(silence)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgfleet: list: %w", pgdb.Classify(err))
	}
	return out, nil
}

// secondsToDuration converts the database's seconds; a heartbeat stamped
// by a transaction that began after the listing's own reads as 0, not as
// a negative silence.
func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Max(s, 0) * float64(time.Second))
}

// Remove deletes id's row.
func (s *Store) Remove(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM fleet_replicas WHERE replica_id = $1`, id); err != nil {
		return fmt.Errorf("pgfleet: remove: %w", pgdb.Classify(err))
	}
	return nil
}

// Prune deletes the rows silent for longer than silence.
func (s *Store) Prune(ctx context.Context, silence time.Duration) error {
	const pruneSQL = `DELETE FROM fleet_replicas WHERE heartbeat_at < now() - make_interval(secs => $1)`
	if _, err := s.pool.Exec(ctx, pruneSQL, silence.Seconds()); err != nil {
		return fmt.Errorf("pgfleet: prune: %w", pgdb.Classify(err))
	}
	return nil
}
