// Package pgjobs keeps the training jobs' records and the saved data sets
// of queued jobs in the PostgreSQL database a fleet of servers shares
// (tables training_jobs, training_job_uploads and
// training_job_upload_chunks; migration 00004_jobs.sql in platform/pgdb).
// It is the jobs.Store and jobs.UploadSpool of a server that runs with a
// store URL; the embedded one is package jobfiles.
//
// A job's record is the JSON of jobs.Job, the encoding jobfiles writes,
// so that records move between the two stores unchanged. A data set is
// stored in chunks of chunkSize bytes inside one transaction: it is
// written whole or not at all, and neither writing nor reading it ever
// holds more than a chunk in memory.
package pgjobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/trainer/jobs"
)

// maxRecordBytes bounds a job record LoadAll decodes, as jobfiles bounds
// it (see jobfiles.maxRecordBytes for the arithmetic): a larger record
// was not written by a server and is skipped without being fetched.
const maxRecordBytes = 16 << 20

// rollbackTimeout bounds the rollback of a transaction whose caller's
// context may already have ended.
const rollbackTimeout = 5 * time.Second

// Store keeps job records and saved data sets in the database of pool. It
// implements jobs.Store and jobs.UploadSpool and is safe for concurrent
// use, by this process and by the other replicas on the same database.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ jobs.Store       = (*Store)(nil)
	_ jobs.UploadSpool = (*Store)(nil)
)

// New returns the store on pool, whose schema pgdb.Open has brought up to
// date. The store does not own pool: closing it is the caller's.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// checkID refuses an id the database cannot key a row by (a text value
// holds valid UTF-8 without NUL) or that names no job (empty), with an
// error that says so rather than the database's encoding error.
func checkID(id string) error {
	if id == "" || !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		return fmt.Errorf("pgjobs: %q is not a job id", id)
	}
	return nil
}

// Save implements jobs.Store: one statement replaces the record whole.
// The lease columns are left as they are: they belong to the runner.
func (s *Store) save(ctx context.Context, j *jobs.Job) error {
	if err := checkID(j.ID); err != nil {
		return err
	}
	record, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("pgjobs: encode %s: %w", j.ID, err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO training_jobs (job_id, status, record)
		VALUES ($1, $2, $3)
		ON CONFLICT (job_id) DO UPDATE
		SET status = excluded.status, record = excluded.record, updated_at = now()`,
		j.ID, string(j.Status), record)
	if err != nil {
		return fmt.Errorf("pgjobs: save %s: %w", j.ID, err)
	}
	return nil
}

// LoadAll implements jobs.Store. A record it cannot take (over
// maxRecordBytes, not the JSON of a job, or a job whose id is not its
// row's) is skipped; the load fails only when the query does.
func (s *Store) loadAll(ctx context.Context) ([]*jobs.Job, []error, error) {
	// An oversized record is reported by its length and never fetched.
	rows, err := s.pool.Query(ctx, `SELECT job_id, octet_length(record),
		CASE WHEN octet_length(record) <= $1 THEN record END
		FROM training_jobs`, maxRecordBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("pgjobs: load: %w", err)
	}
	defer rows.Close()
	var (
		records []*jobs.Job
		skipped []error
	)
	for rows.Next() {
		var (
			id     string
			size   int64
			record []byte
		)
		if err := rows.Scan(&id, &size, &record); err != nil {
			return nil, nil, fmt.Errorf("pgjobs: load: %w", err)
		}
		j, err := decodeRecord(id, size, record)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("job %q: %w", id, err))
			continue
		}
		records = append(records, j)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("pgjobs: load: %w", err)
	}
	return records, skipped, nil
}

// decodeRecord decodes the record of row id, of size bytes (record is nil
// when it was too large to fetch).
func decodeRecord(id string, size int64, record []byte) (*jobs.Job, error) {
	if size > maxRecordBytes || record == nil {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit of a job record", size, maxRecordBytes)
	}
	var j jobs.Job
	if err := json.Unmarshal(record, &j); err != nil {
		return nil, err
	}
	if j.ID != id {
		return nil, fmt.Errorf("the record's job id %q is not its row's", j.ID)
	}
	return &j, nil
}

// rollback ends tx if it has not committed. It runs when the caller's
// context may have ended, so it has a bounded context of its own: a
// rollback that cannot be sent closes the connection, which the pool
// replaces, and the server aborts the transaction either way.
func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	// After a commit it is pgx.ErrTxClosed; any other error has closed
	// the connection, and with it the transaction: nothing is left to do.
	_ = tx.Rollback(ctx)
}
