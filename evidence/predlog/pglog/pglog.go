// Package pglog is the prediction log's store on PostgreSQL, the one a
// fleet of replicas shares: it implements predlog.Store over the tables of
// migration 00003_predlog.sql (package platform/pgdb applies it), and
// passes predlogtest's contract. Each replica runs its own predlog.Writer
// over its own Store; they all write into the same tables.
//
// Ownership: the Store does not own the pool it is given (it is shared
// with the fleet's other stores); Close only ends the Store, and whoever
// opened the pool closes it after.
//
// IDs come from one sequence without a cache, so they are unique across
// replicas and increase in the order of each replica's Appends. Across
// replicas a record may commit after another with a higher ID: a page
// cursor taken between the two commits skips the earlier-ID record if it
// shares the cursor's timestamp or is older. Pages are meant for records
// that are no longer being written (past the commit interval).
//
// Durability is the database's: an Append that returned is committed.
//
// Size: Bytes is pg_total_relation_size of the log's tables (heap, TOAST
// and indexes). LiveBytes is the sum of each stored record's footprint,
// an estimate of its heap tuple, its index entries and its stored
// spectrum, kept in the one row of predlog_usage by every Append and
// deletion, plus the axes table, and never more than Bytes. The relation
// sizes alone would not do: PostgreSQL keeps the space of deleted rows for
// reuse, so they never fall after a retention pass, and the writer would
// go on deleting. The estimate ignores page fill and the dead rows waiting
// for autovacuum, so Bytes runs ahead of it by those.
//
// Compact does nothing: autovacuum makes the space of deleted rows
// reusable (the migration lowers its threshold on the records table), and
// a VACUUM from every replica after every retention pass would repeat its
// work and stall each writer for as long as it takes. Until autovacuum
// comes by (it looks every autovacuum_naptime, a minute by default), new
// rows take new pages, so under a size bound Bytes may pass the bound by
// about a minute of writes; LiveBytes, which retention follows, does not.
// The file system gets space back only through VACUUM FULL, which locks
// the table, an operator's decision.
package pglog

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/evidence/predlog"
)

// ErrClosed is the error of every call after Close.
var ErrClosed = errors.New("pglog: the prediction log store is closed")

// Options configure New.
type Options struct {
	// Replica names the replica that records through this store (the
	// fleet's replica id); it is stored with each record. Empty is allowed
	// for a single server.
	Replica string
}

// Store is the prediction log in PostgreSQL. It implements predlog.Store
// and is safe for concurrent use: every call takes a connection of the
// pool for its own time.
type Store struct {
	pool   *pgxpool.Pool
	opts   Options
	closed atomic.Bool
}

var _ predlog.Store = (*Store)(nil)

// New returns the store over pool, whose schema must be migrated
// (pgdb.Open with Migrate, or ramanserve migrate). The store does not own
// pool: Close leaves it open.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pglog: no database pool")
	}
	return &Store{pool: pool, opts: opts}, nil
}

// Close ends the store: later calls fail with ErrClosed. It leaves the
// pool open, and calls already running finish on it.
func (s *Store) Close(context.Context) error {
	s.closed.Store(true)
	return nil
}

// usable fails once the store is closed.
func (s *Store) usable() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}
