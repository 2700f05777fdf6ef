// Package labstore keeps the lab's HPLC results in a SQLite database
// beside the registry (lab-results.db): the reconcile.LabStore the server
// runs with.
//
// Lab results are typed in or exported by people, once, hours after the
// samples were drawn: unlike the prediction log, losing a committed post
// is not acceptable. The database therefore runs in WAL mode with
// synchronous=FULL: a post that Upsert reported stored has been fsynced
// and survives kill -9, an OS crash and power loss. Posts are rare and
// small (at most reconcile.MaxRecords results in one transaction), so the
// fsync per post costs nothing that matters.
//
// Everything is bounded: one Upsert stores at most reconcile.MaxRecords
// results, the database at most MaxResults, and Range returns at most
// MaxRange.
package labstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	// The SQLite driver, for its error codes (diskFull).
	"modernc.org/sqlite"

	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
	"ramanserve/platform/sqlitedb"
	"ramanserve/platform/unixnano"
)

// FileName is the store's database file in the registry directory (with
// -wal and -shm beside it while open).
const FileName = "lab-results.db"

const (
	// MaxResults bounds the results the store keeps (about 200 bytes
	// each): a client that posts new lab_sample_ids for ever gets
	// ErrFull instead of filling the disk.
	MaxResults = 1_000_000
	// MaxRange is the most results one Range returns, whatever limit it
	// is given: one more than a performance report may use.
	MaxRange = reconcile.MaxReportSamples + 1
)

// ErrFull means an Upsert found no room: it would take the store past
// MaxResults, or the disk is full. Nothing of it was stored.
var ErrFull = errors.New("labstore: the lab result store is full")

// ErrNewerSchema means the database was written by a newer server; it is
// left untouched.
var ErrNewerSchema = errors.New("labstore: the lab result store has a newer schema than this server knows")

// SQLite is a reconcile.LabStore in one SQLite file. It is safe for
// concurrent use, and for use by several processes at once: SQLite's own
// locking serialises their writes (see Open).
type SQLite struct {
	db         *sql.DB
	maxResults int64
}

var _ reconcile.LabStore = (*SQLite)(nil)

// WriteWait is how long a write waits for another connection's (or
// process's) transaction before it fails. The server takes two lab posts
// at once, and one post of 10,000 results commits with a full fsync: on
// a disk busy with other writers the second waits for seconds, which
// must not fail it.
const WriteWait = 30 * time.Second

// Open opens, creating it if needed, the store in dir and brings its
// schema up to date. A write waits up to WriteWait for another
// connection's (or process's) transaction before it fails.
func Open(ctx context.Context, dir string) (*SQLite, error) {
	return OpenWaiting(ctx, dir, WriteWait)
}

// OpenWaiting is Open with writes that wait up to wait for another
// transaction. SQLite's busy handler polls, and a writer that commits
// back to back can hold the lock through every poll: two processes that
// post at full rate need longer than WriteWait.
func OpenWaiting(ctx context.Context, dir string, wait time.Duration) (*SQLite, error) {
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, FileName), sqlitedb.Options{Synchronous: sqlitedb.Full, BusyTimeout: wait})
	if err != nil {
		return nil, fmt.Errorf("labstore: %w", err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return &SQLite{db: db, maxResults: MaxResults}, nil
}

// Close checkpoints the WAL into the database and closes it.
func (s *SQLite) Close() error {
	if err := sqlitedb.Close(s.db); err != nil {
		return fmt.Errorf("labstore: close: %w", err)
	}
	return nil
}

// Upsert implements reconcile.LabStore: one transaction, fsynced at
// commit; results later in the slice replace earlier ones with the same
// LabSampleID (and count as replacing them).
func (s *SQLite) Upsert(ctx context.Context, results []reconcile.LabResult) (replaced int, err error) {
	if len(results) > reconcile.MaxRecords {
		return 0, fmt.Errorf("labstore: %d results in one upsert, more than %d", len(results), reconcile.MaxRecords)
	}
	if len(results) == 0 {
		return 0, ctx.Err()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("labstore: upsert: %w", err)
	}
	defer tx.Rollback()
	replaced, err = upsertAll(ctx, tx, results)
	if err != nil {
		return 0, diskFull(err)
	}
	if err := s.checkCount(ctx, tx); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, diskFull(fmt.Errorf("labstore: upsert: commit: %w", err))
	}
	return replaced, nil
}

// upsertAll writes every result in tx and counts those that replaced a
// stored one.
func upsertAll(ctx context.Context, tx *sql.Tx, results []reconcile.LabResult) (int, error) {
	exists, err := tx.PrepareContext(ctx, `SELECT EXISTS (SELECT 1 FROM lab_results WHERE lab_sample_id = ?)`)
	if err != nil {
		return 0, fmt.Errorf("labstore: upsert: %w", err)
	}
	defer exists.Close()
	put, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO lab_results
		(lab_sample_id, batch_id, scan_seq, sampled_at, epa, dha, dpa, matched, prediction_id, spectrum_ts, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return 0, fmt.Errorf("labstore: upsert: %w", err)
	}
	defer put.Close()
	replaced := 0
	for i := range results {
		r := &results[i]
		var found bool
		if err := exists.QueryRowContext(ctx, r.LabSampleID).Scan(&found); err != nil {
			return 0, fmt.Errorf("labstore: upsert %q: %w", r.LabSampleID, err)
		}
		if found {
			replaced++
		}
		if _, err := put.ExecContext(ctx, row(r)...); err != nil {
			return 0, fmt.Errorf("labstore: upsert %q: %w", r.LabSampleID, err)
		}
	}
	return replaced, nil
}

// checkCount refuses a transaction that took the store past MaxResults.
func (s *SQLite) checkCount(ctx context.Context, tx *sql.Tx) error {
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM lab_results`).Scan(&n); err != nil {
		return fmt.Errorf("labstore: upsert: count: %w", err)
	}
	if n > s.maxResults {
		return fmt.Errorf("%w (%d results, at most %d)", ErrFull, n, s.maxResults)
	}
	return nil
}

// sqliteFull is SQLite's primary result code SQLITE_FULL: a write found
// the disk full (the VFS reports ENOSPC so).
const sqliteFull = 13

// diskFull marks err with ErrFull when SQLite reports the disk full, so
// that the client learns it is the server's storage (507), not a bug.
func diskFull(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqliteFull {
		return fmt.Errorf("%w: %w", ErrFull, err)
	}
	return err
}

// row is r's column values in the order of the INSERT.
func row(r *reconcile.LabResult) []any {
	var scanSeq, sampledAt, predictionID, spectrumTS any
	if r.HasScanSeq {
		scanSeq = r.ScanSeq
	}
	if !r.SampledAt.IsZero() {
		// Text keeps the zone the lab wrote and any year RFC 3339 allows.
		sampledAt = r.SampledAt.Format(time.RFC3339Nano)
	}
	if r.Matched {
		predictionID = r.PredictionID[:]
		spectrumTS = unixnano.Of(r.SpectrumTime)
	}
	lab := make([]any, inference.NumAnalytes)
	for k := range lab {
		if r.Lab.Valid[k] {
			lab[k] = r.Lab.Value[k]
		}
	}
	return []any{r.LabSampleID, r.BatchID, scanSeq, sampledAt, lab[0], lab[1], lab[2],
		r.Matched, predictionID, spectrumTS, string(r.Reason)}
}

// Range implements reconcile.LabStore. limit is capped at MaxRange.
func (s *SQLite) Range(ctx context.Context, since, until time.Time, limit int) ([]reconcile.LabResult, error) {
	limit = min(limit, MaxRange)
	if limit <= 0 {
		return nil, ctx.Err()
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		lo = unixnano.Of(since)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT lab_sample_id, batch_id, scan_seq, sampled_at, epa, dha, dpa, prediction_id, spectrum_ts
		FROM lab_results
		WHERE matched = 1 AND spectrum_ts >= ? AND (? OR spectrum_ts < ?)
		ORDER BY spectrum_ts, lab_sample_id
		LIMIT ?`, lo, until.IsZero(), untilNano(until, hi), limit)
	if err != nil {
		return nil, fmt.Errorf("labstore: range: %w", err)
	}
	defer rows.Close()
	var out []reconcile.LabResult
	row := newMatchedRow()
	for rows.Next() {
		r, err := row.scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("labstore: range: %w", err)
	}
	return out, nil
}

// untilNano is until in Unix nanoseconds, or open when until is zero.
func untilNano(until time.Time, open int64) int64 {
	if until.IsZero() {
		return open
	}
	return unixnano.Of(until)
}

// matchedRow holds the destinations of one row of Range's query, built
// once and reused for every row: destinations made per row escaped to
// the heap, most of a 45,000-row read's allocations.
type matchedRow struct {
	r            reconcile.LabResult
	scanSeq      sql.NullInt64
	sampledAt    sql.NullString
	lab          [inference.NumAnalytes]sql.NullFloat64
	predictionID sql.RawBytes
	spectrumTS   int64
	dest         []any
}

func newMatchedRow() *matchedRow {
	m := &matchedRow{}
	m.dest = []any{&m.r.LabSampleID, &m.r.BatchID, &m.scanSeq, &m.sampledAt, &m.lab[0], &m.lab[1], &m.lab[2], &m.predictionID, &m.spectrumTS}
	return m
}

// scan reads the next row of Range's query.
func (m *matchedRow) scan(rows *sql.Rows) (reconcile.LabResult, error) {
	m.r = reconcile.LabResult{}
	if err := rows.Scan(m.dest...); err != nil {
		return reconcile.LabResult{}, fmt.Errorf("labstore: range: %w", err)
	}
	r := m.r
	r.ScanSeq, r.HasScanSeq = m.scanSeq.Int64, m.scanSeq.Valid
	if m.sampledAt.Valid {
		t, err := time.Parse(time.RFC3339Nano, m.sampledAt.String)
		if err != nil {
			return r, fmt.Errorf("labstore: range: %q: sampled_at: %w", r.LabSampleID, err)
		}
		r.SampledAt = t
	}
	for k := range m.lab {
		r.Lab.Value[k], r.Lab.Valid[k] = m.lab[k].Float64, m.lab[k].Valid
	}
	if len(m.predictionID) != len(r.PredictionID) {
		return r, fmt.Errorf("labstore: range: %q: a prediction id of %d bytes", r.LabSampleID, len(m.predictionID))
	}
	copy(r.PredictionID[:], m.predictionID)
	r.Matched = true
	r.SpectrumTime = time.Unix(0, m.spectrumTS).UTC()
	return r, nil
}
