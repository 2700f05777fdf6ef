package pglog

import (
	"context"
	"fmt"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/pgdb"
	"ramanserve/platform/unixnano"
)

// deleteSQL deletes the records that oldest (a query of their ids, with
// its arguments from $1) selects, subtracts their footprints from
// predlog_usage in the same statement, and returns how many it deleted.
// The usage row is locked last and only when something was deleted, as
// Append locks it last too: the two never wait on each other in a cycle.
// Two replicas trimming at once pick the same oldest rows; the second
// waits for the first and then finds them gone, deleting fewer.
func deleteSQL(oldest string) string {
	return `WITH gone AS (
		DELETE FROM predlog_records WHERE id IN (` + oldest + `)
		RETURNING footprint
	), counted AS (
		UPDATE predlog_usage SET
			records = records - (SELECT count(*) FROM gone),
			bytes = bytes - (SELECT coalesce(sum(footprint), 0) FROM gone)
		WHERE EXISTS (SELECT FROM gone)
	)
	SELECT count(*) FROM gone`
}

var (
	deleteOlderSQL  = deleteSQL(`SELECT id FROM predlog_records WHERE ts < $1 ORDER BY ts, id LIMIT $2`)
	deleteOldestSQL = deleteSQL(`SELECT id FROM predlog_records ORDER BY ts, id LIMIT $1`)
)

// DeleteOlderThan implements predlog.Store.
func (s *Store) DeleteOlderThan(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	return s.delete(ctx, deleteOlderSQL, unixnano.Of(cutoff), max(limit, 0))
}

// DeleteOldest implements predlog.Store.
func (s *Store) DeleteOldest(ctx context.Context, limit int) (int64, error) {
	return s.delete(ctx, deleteOldestSQL, max(limit, 0))
}

func (s *Store) delete(ctx context.Context, query string, args ...any) (int64, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	var n int64
	if err := s.pool.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("pglog: delete: %w", pgdb.Classify(err))
	}
	return n, nil
}

// sizeSQL reads the log's tables' sizes (heap, TOAST and indexes) and
// the footprints of the records stored (see the package comment).
const sizeSQL = `SELECT
	pg_total_relation_size('predlog_records') + pg_total_relation_size('predlog_axes') + pg_total_relation_size('predlog_usage'),
	(SELECT bytes FROM predlog_usage) + pg_total_relation_size('predlog_axes')`

// Size implements predlog.Store: Bytes are the tables' relation sizes,
// LiveBytes the records' footprints and the axes, at most Bytes.
func (s *Store) Size(ctx context.Context) (predlog.Size, error) {
	if err := s.usable(); err != nil {
		return predlog.Size{}, err
	}
	var size predlog.Size
	if err := s.pool.QueryRow(ctx, sizeSQL).Scan(&size.Bytes, &size.LiveBytes); err != nil {
		return predlog.Size{}, fmt.Errorf("pglog: size: %w", pgdb.Classify(err))
	}
	size.LiveBytes = max(0, min(size.LiveBytes, size.Bytes))
	return size, nil
}

// Compact implements predlog.Store, doing nothing: autovacuum makes the
// space of deleted records reusable (see the package comment).
func (s *Store) Compact(context.Context) error {
	return s.usable()
}
