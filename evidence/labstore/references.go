package labstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/platform/unixnano"
)

// References is the batches.ReferenceStore in the lab store's database:
// reference marks are curated evidence, fsynced at commit like the lab's
// results (they survive kill -9 and power loss once Mark returned).
type References struct {
	db *sql.DB
}

var _ batches.ReferenceStore = (*References)(nil)

// References returns the reference store on s's database; closing s
// closes it.
func (s *SQLite) References() *References { return &References{db: s.db} }

// Mark implements batches.ReferenceStore in one immediate transaction,
// so that two marks at once (from two processes too) count each other.
func (r *References) Mark(ctx context.Context, ref batches.Reference) (batches.Reference, bool, error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return batches.Reference{}, false, fmt.Errorf("labstore: mark: %w", err)
	}
	defer conn.Close()
	// BEGIN IMMEDIATE takes the write lock before the count is read.
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return batches.Reference{}, false, fmt.Errorf("labstore: mark: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	var (
		at int64
		by string
	)
	err = conn.QueryRowContext(ctx, `SELECT marked_at, marked_by FROM reference_batches WHERE batch_id = ?`, ref.BatchID).Scan(&at, &by)
	switch {
	case err == nil:
		return batches.Reference{BatchID: ref.BatchID, MarkedAt: time.Unix(0, at).UTC(), MarkedBy: by}, false, nil
	case err != sql.ErrNoRows:
		return batches.Reference{}, false, fmt.Errorf("labstore: mark: %w", err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM reference_batches`).Scan(&n); err != nil {
		return batches.Reference{}, false, fmt.Errorf("labstore: mark: %w", err)
	}
	if n >= batches.MaxReferences {
		return batches.Reference{}, false, fmt.Errorf("%w (%d)", batches.ErrReferencesFull, batches.MaxReferences)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO reference_batches (batch_id, marked_at, marked_by) VALUES (?, ?, ?)`,
		ref.BatchID, unixnano.Of(ref.MarkedAt), ref.MarkedBy); err != nil {
		return batches.Reference{}, false, diskFull(fmt.Errorf("labstore: mark: %w", err))
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return batches.Reference{}, false, diskFull(fmt.Errorf("labstore: mark: commit: %w", err))
	}
	committed = true
	return ref, true, nil
}

// Unmark implements batches.ReferenceStore.
func (r *References) Unmark(ctx context.Context, batchID string) (bool, error) {
	res, err := r.db.ExecContext(ctx, `DELETE FROM reference_batches WHERE batch_id = ?`, batchID)
	if err != nil {
		return false, fmt.Errorf("labstore: unmark: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("labstore: unmark: %w", err)
	}
	return n > 0, nil
}

// References implements batches.ReferenceStore.
func (r *References) References(ctx context.Context) ([]batches.Reference, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT batch_id, marked_at, marked_by FROM reference_batches ORDER BY batch_id LIMIT ?`, batches.MaxReferences)
	if err != nil {
		return nil, fmt.Errorf("labstore: references: %w", err)
	}
	defer rows.Close()
	var out []batches.Reference
	for rows.Next() {
		var (
			ref batches.Reference
			at  int64
		)
		if err := rows.Scan(&ref.BatchID, &at, &ref.MarkedBy); err != nil {
			return nil, fmt.Errorf("labstore: references: %w", err)
		}
		ref.MarkedAt = time.Unix(0, at).UTC()
		out = append(out, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("labstore: references: %w", err)
	}
	return out, nil
}
