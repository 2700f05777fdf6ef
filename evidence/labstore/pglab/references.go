package pglab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/evidence/batches"
	"ramanserve/platform/pgdb"
	"ramanserve/platform/unixnano"
)

// References is the batches.ReferenceStore in the fleet's database
// (table reference_batches, migration 00009): every replica sees the
// same marks. Durability is the database's: a Mark that returned is
// committed.
type References struct {
	pool *pgxpool.Pool
}

var _ batches.ReferenceStore = (*References)(nil)

// NewReferences returns the store on pool, whose schema pgdb.Open has
// brought up to date. It does not own pool.
func NewReferences(pool *pgxpool.Pool) *References { return &References{pool: pool} }

// Mark implements batches.ReferenceStore. The table is locked against
// other marks for the transaction, so that marks at once, from any
// replica, count each other against the bound.
func (r *References) Mark(ctx context.Context, ref batches.Reference) (batches.Reference, bool, error) {
	out, created, err := r.mark(ctx, ref)
	return out, created, pgdb.Classify(err)
}

func (r *References) mark(ctx context.Context, ref batches.Reference) (batches.Reference, bool, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return batches.Reference{}, false, fmt.Errorf("pglab: mark: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		tx.Rollback(rctx)
	}()
	if _, err := tx.Exec(ctx, `LOCK TABLE reference_batches IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return batches.Reference{}, false, fmt.Errorf("pglab: mark: %w", err)
	}
	var (
		at int64
		by string
	)
	err = tx.QueryRow(ctx, `SELECT marked_at, marked_by FROM reference_batches WHERE batch_id = $1`, ref.BatchID).Scan(&at, &by)
	switch {
	case err == nil:
		return batches.Reference{BatchID: ref.BatchID, MarkedAt: time.Unix(0, at).UTC(), MarkedBy: by}, false, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return batches.Reference{}, false, fmt.Errorf("pglab: mark: %w", err)
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM reference_batches`).Scan(&n); err != nil {
		return batches.Reference{}, false, fmt.Errorf("pglab: mark: %w", err)
	}
	if n >= batches.MaxReferences {
		return batches.Reference{}, false, fmt.Errorf("%w (%d)", batches.ErrReferencesFull, batches.MaxReferences)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO reference_batches (batch_id, marked_at, marked_by) VALUES ($1, $2, $3)`,
		ref.BatchID, unixnano.Of(ref.MarkedAt), ref.MarkedBy); err != nil {
		return batches.Reference{}, false, fmt.Errorf("pglab: mark: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return batches.Reference{}, false, fmt.Errorf("pglab: mark: commit: %w", err)
	}
	return ref, true, nil
}

// Unmark implements batches.ReferenceStore.
func (r *References) Unmark(ctx context.Context, batchID string) (bool, error) {
	tag, err := r.pool.Exec(ctx, `DELETE FROM reference_batches WHERE batch_id = $1`, batchID)
	if err != nil {
		return false, fmt.Errorf("pglab: unmark: %w", pgdb.Classify(err))
	}
	return tag.RowsAffected() > 0, nil
}

// References implements batches.ReferenceStore.
func (r *References) References(ctx context.Context) ([]batches.Reference, error) {
	rows, err := r.pool.Query(ctx, `SELECT batch_id, marked_at, marked_by FROM reference_batches ORDER BY batch_id LIMIT $1`, batches.MaxReferences)
	if err != nil {
		return nil, fmt.Errorf("pglab: references: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	var out []batches.Reference
	for rows.Next() {
		var (
			ref batches.Reference
			at  int64
		)
		if err := rows.Scan(&ref.BatchID, &at, &ref.MarkedBy); err != nil {
			return nil, fmt.Errorf("pglab: references: %w", err)
		}
		ref.MarkedAt = time.Unix(0, at).UTC()
		out = append(out, ref)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pglab: references: %w", pgdb.Classify(err))
	}
	return out, nil
}
