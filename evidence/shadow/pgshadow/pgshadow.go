// Package pgshadow is the fleet's shadow board (shadow.Board) in
// PostgreSQL: one row per replica with its latest comparison, so that
// every replica can merge the others' into its own.
package pgshadow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/evidence/shadow"
	"ramanserve/platform/pgdb"
)

// liveWithin is how recent a replica's post must be to count: posts come
// every second, so a replica silent for longer is gone (its figures then
// leave the fleet's comparison, as they would with its process).
const liveWithin = 10 * time.Second

// Board is shadow.Board on the shadow_comparisons table, for one replica.
type Board struct {
	pool    *pgxpool.Pool
	replica string
}

// New returns the board of replica on pool's database (migrated by
// pgdb.Open). It does not own the pool.
func New(pool *pgxpool.Pool, replica string) *Board { return &Board{pool: pool, replica: replica} }

var _ shadow.Board = (*Board)(nil)

// Post implements shadow.Board; a replica without a shadow removes its row.
func (b *Board) Post(ctx context.Context, s shadow.Status) error {
	if s.Version == "" {
		return b.Leave(ctx)
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("pgshadow: encode: %w", err)
	}
	_, err = b.pool.Exec(ctx, `INSERT INTO shadow_comparisons (replica_id, version, comparison, posted_at) VALUES ($1, $2, $3, now())
		ON CONFLICT (replica_id) DO UPDATE SET version = excluded.version, comparison = excluded.comparison, posted_at = now()`,
		b.replica, s.Version, doc)
	if err != nil {
		return fmt.Errorf("pgshadow: post: %w", pgdb.Classify(err))
	}
	return nil
}

// Others implements shadow.Board.
func (b *Board) Others(ctx context.Context) ([]shadow.Status, error) {
	rows, err := b.pool.Query(ctx, `SELECT comparison FROM shadow_comparisons
		WHERE replica_id <> $1 AND posted_at > now() - make_interval(secs => $2) ORDER BY replica_id`, b.replica, liveWithin.Seconds())
	if err != nil {
		return nil, fmt.Errorf("pgshadow: read: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	var out []shadow.Status
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("pgshadow: read: %w", pgdb.Classify(err))
		}
		var s shadow.Status
		if err := json.Unmarshal(doc, &s); err != nil {
			continue // a row this build cannot read is another build's: left out
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgshadow: read: %w", pgdb.Classify(err))
	}
	return out, nil
}

// Leave implements shadow.Board.
func (b *Board) Leave(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, `DELETE FROM shadow_comparisons WHERE replica_id = $1`, b.replica); err != nil {
		return fmt.Errorf("pgshadow: leave: %w", pgdb.Classify(err))
	}
	return nil
}
