package pgjobs

import (
	"context"

	"fmt"

	"github.com/jackc/pgx/v5"

	"ramanserve/platform/pgdb"
	"ramanserve/trainer/jobs"
)

var _ jobs.KeyStore = (*Store)(nil)

// ClaimKey implements jobs.KeyStore: one statement inserts the record, or
// replaces one older than the TTL; the primary key decides between
// replicas claiming one key at once. Expired records, and beyond the
// bound the oldest, are deleted in the same transaction.
func (s *Store) ClaimKey(ctx context.Context, rec jobs.KeyRecord, limits jobs.KeyLimits) (jobs.KeyRecord, bool, error) {
	if err := checkID(rec.Key); err != nil {
		return jobs.KeyRecord{}, false, err
	}
	cutoff := rec.CreatedAt.Add(-limits.TTL)
	var (
		held    jobs.KeyRecord
		claimed bool
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, job_id, created_at)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (key) DO UPDATE
			SET request_hash = excluded.request_hash, job_id = excluded.job_id, created_at = excluded.created_at
			WHERE idempotency_keys.created_at <= $5`,
			rec.Key, rec.RequestHash, rec.JobID, rec.CreatedAt, cutoff)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return tx.QueryRow(ctx, `SELECT key, request_hash, job_id, created_at FROM idempotency_keys WHERE key = $1`, rec.Key).
				Scan(&held.Key, &held.RequestHash, &held.JobID, &held.CreatedAt)
		}
		held, claimed = rec, true
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at <= $1`, cutoff); err != nil {
			return err
		}
		if limits.Max > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE key IN (
				SELECT key FROM idempotency_keys ORDER BY created_at DESC, key DESC OFFSET $1)`, limits.Max); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return jobs.KeyRecord{}, false, fmt.Errorf("pgjobs: claim idempotency key: %w", pgdb.Classify(err))
	}
	return held, claimed, nil
}

// ForgetKey implements jobs.KeyStore.
func (s *Store) ForgetKey(ctx context.Context, key, jobID string) error {
	if err := checkID(key); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE key = $1 AND job_id = $2`, key, jobID); err != nil {
		return fmt.Errorf("pgjobs: forget idempotency key: %w", pgdb.Classify(err))
	}
	return nil
}
