package pgjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"ramanserve/trainer/jobs"
)

var _ jobs.LeaseStore = (*Store)(nil)

// The lease of a job is its row's lease_owner and lease_until (the
// database's clock: replicas' clocks never decide who runs a job), and
// attempts counts its claims. A job is claimable while its status is
// queued or running and no live lease holds it. Every change of a lease
// locks the job's row, so claims, renewals, leased saves and updates of
// one job take turns.

// claimable is the condition a claim looks for.
const claimable = `status IN ('queued', 'running') AND (lease_until IS NULL OR lease_until < now())`

// Claim implements jobs.LeaseStore: one transaction locks the oldest
// claimable row that no other claim has locked (SKIP LOCKED, so racing
// claimers take different jobs instead of queueing on one), lets start
// change its record and writes it with the lease. Jobs are taken in the
// order their rows were last written: for a queued job, when it was
// accepted.
func (s *Store) claim(ctx context.Context, owner string, lease time.Duration, start func(*jobs.Job)) (*jobs.Job, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgjobs: claim: %w", err)
	}
	defer rollback(ctx, tx)
	var (
		id       string
		size     int64
		record   []byte
		attempts int
	)
	err = tx.QueryRow(ctx, `SELECT job_id, octet_length(record),
		CASE WHEN octet_length(record) <= $1 THEN record END, attempts
		FROM training_jobs WHERE `+claimable+`
		ORDER BY updated_at, job_id
		LIMIT 1 FOR UPDATE SKIP LOCKED`, maxRecordBytes).Scan(&id, &size, &record, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobs.ErrNothingToClaim
	}
	if err != nil {
		return nil, fmt.Errorf("pgjobs: claim: %w", err)
	}
	j, err := decodeRecord(id, size, record)
	if err != nil {
		// A record no replica can read would be claimed for ever: it is
		// set aside under a status no claim looks for.
		if _, err := tx.Exec(ctx, `UPDATE training_jobs SET status = 'unreadable' WHERE job_id = $1`, id); err != nil {
			return nil, fmt.Errorf("pgjobs: claim %s: %w", id, err)
		}
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("pgjobs: claim %s: commit: %w", id, err)
		}
		return nil, fmt.Errorf("pgjobs: claim: job %q set aside: %w", id, err)
	}
	j.Attempts = attempts + 1
	start(j)
	encoded, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("pgjobs: encode %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE training_jobs
		SET status = $2, record = $3, lease_owner = $4, lease_until = now() + $5 * interval '1 millisecond',
		    attempts = $6, updated_at = now()
		WHERE job_id = $1`, id, string(j.Status), encoded, owner, lease.Milliseconds(), j.Attempts); err != nil {
		return nil, fmt.Errorf("pgjobs: claim %s: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("pgjobs: claim %s: commit: %w", id, err)
	}
	return j, nil
}

// Hold implements jobs.LeaseStore.
func (s *Store) hold(ctx context.Context, j *jobs.Job, owner string, lease time.Duration) error {
	if err := checkID(j.ID); err != nil {
		return err
	}
	record, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("pgjobs: encode %s: %w", j.ID, err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO training_jobs (job_id, status, record, lease_owner, lease_until)
		VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')`,
		j.ID, string(j.Status), record, owner, lease.Milliseconds())
	if err != nil {
		return fmt.Errorf("pgjobs: hold %s: %w", j.ID, err)
	}
	return nil
}

// Renew implements jobs.LeaseStore. A lease that ran out is renewed too
// while no one claimed the job: the row lock orders the renewal and any
// claim, so the job still has one runner.
func (s *Store) renew(ctx context.Context, id, owner string, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE training_jobs SET lease_until = now() + $3 * interval '1 millisecond'
		WHERE job_id = $1 AND lease_owner = $2 AND status IN ('queued', 'running')`, id, owner, lease.Milliseconds())
	if err != nil {
		return fmt.Errorf("pgjobs: renew %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: job %s", jobs.ErrLeaseLost, id)
	}
	return nil
}

// SaveLeased implements jobs.LeaseStore.
func (s *Store) saveLeased(ctx context.Context, j *jobs.Job, owner string) error {
	record, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("pgjobs: encode %s: %w", j.ID, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE training_jobs
		SET status = $2, record = $3, updated_at = now(),
		    lease_owner = CASE WHEN $2 = 'running' THEN lease_owner END,
		    lease_until = CASE WHEN $2 = 'running' THEN lease_until END
		WHERE job_id = $1 AND lease_owner = $4 AND status IN ('queued', 'running')`,
		j.ID, string(j.Status), record, owner)
	if err != nil {
		return fmt.Errorf("pgjobs: save %s: %w", j.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: job %s", jobs.ErrLeaseLost, j.ID)
	}
	return nil
}

// Load implements jobs.LeaseStore.
func (s *Store) load(ctx context.Context, id string) (*jobs.Job, error) {
	var (
		size   int64
		record []byte
	)
	err := s.pool.QueryRow(ctx, `SELECT octet_length(record), CASE WHEN octet_length(record) <= $2 THEN record END
		FROM training_jobs WHERE job_id = $1`, id, maxRecordBytes).Scan(&size, &record)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", jobs.ErrJobNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("pgjobs: load %s: %w", id, err)
	}
	j, err := decodeRecord(id, size, record)
	if err != nil {
		return nil, fmt.Errorf("pgjobs: load %s: %w", id, err)
	}
	return j, nil
}

// Update implements jobs.LeaseStore.
func (s *Store) update(ctx context.Context, id string, change func(*jobs.Job) error) (*jobs.Job, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgjobs: update %s: %w", id, err)
	}
	defer rollback(ctx, tx)
	var (
		size   int64
		record []byte
	)
	err = tx.QueryRow(ctx, `SELECT octet_length(record), CASE WHEN octet_length(record) <= $2 THEN record END
		FROM training_jobs WHERE job_id = $1 FOR UPDATE`, id, maxRecordBytes).Scan(&size, &record)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", jobs.ErrJobNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("pgjobs: update %s: %w", id, err)
	}
	j, err := decodeRecord(id, size, record)
	if err != nil {
		return nil, fmt.Errorf("pgjobs: update %s: %w", id, err)
	}
	if err := change(j); err != nil {
		return nil, err
	}
	encoded, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("pgjobs: encode %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE training_jobs
		SET status = $2, record = $3, updated_at = now(),
		    lease_owner = CASE WHEN $2 IN ('queued', 'running') THEN lease_owner END,
		    lease_until = CASE WHEN $2 IN ('queued', 'running') THEN lease_until END
		WHERE job_id = $1`, id, string(j.Status), encoded); err != nil {
		return nil, fmt.Errorf("pgjobs: update %s: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("pgjobs: update %s: commit: %w", id, err)
	}
	return j, nil
}
