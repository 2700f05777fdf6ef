// Package pglab keeps the lab's HPLC results in the PostgreSQL database a
// fleet of servers shares (table lab_results, migration 00005_lab.sql in
// platform/pgdb): the reconcile.LabStore of a server that runs with a
// store URL. The embedded one is package labstore, whose bounds and
// errors this one shares, so that the server answers the same whichever
// store it runs with: an Upsert over labstore.MaxResults stored results
// fails with labstore.ErrFull (507), and Range returns at most
// labstore.MaxRange results.
//
// One Upsert is one transaction and one statement, however many results
// it carries: the results travel as one array per column and are merged
// with INSERT ... ON CONFLICT, in lab_sample_id order so that concurrent
// posts that share ids lock their rows in the same order and never
// deadlock.
package pglab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/evidence/labstore"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
	"ramanserve/platform/unixnano"
)

// The table has one column per analyte (epa, dha, dpa): this fails to
// compile if the analytes change without the schema.
var _ [3]struct{} = [inference.NumAnalytes]struct{}{}

// rollbackTimeout bounds the rollback of a transaction whose caller's
// context may already have ended.
const rollbackTimeout = 5 * time.Second

// Store is a reconcile.LabStore in the database of its pool. It is safe
// for concurrent use, by this process and by the other replicas on the
// same database.
type Store struct {
	pool       *pgxpool.Pool
	maxResults int64
}

var _ reconcile.LabStore = (*Store)(nil)

// New returns the store on pool, whose schema pgdb.Open has brought up to
// date. The store does not own pool: closing it is the caller's.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, maxResults: labstore.MaxResults}
}

// upsertSQL merges one post. $1..$11 are the columns of its results, one
// array each, in lab_sample_id order; it returns how many rows it
// replaced and how many it added (xmax is 0 on a row this statement
// inserted, and its own transaction id on one it updated).
const upsertSQL = `
WITH incoming AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[],
		$5::float8[], $6::float8[], $7::float8[],
		$8::bool[], $9::uuid[], $10::bigint[], $11::text[]) WITH ORDINALITY
	AS t(lab_sample_id, batch_id, scan_seq, sampled_at, epa, dha, dpa,
		matched, prediction_id, spectrum_unix_ns, reason, n)
), written AS (
	INSERT INTO lab_results (lab_sample_id, batch_id, scan_seq, sampled_at, epa, dha, dpa,
		matched, prediction_id, spectrum_unix_ns, reason)
	SELECT lab_sample_id, batch_id, scan_seq, sampled_at, epa, dha, dpa,
		matched, prediction_id, spectrum_unix_ns, reason
	FROM incoming ORDER BY n
	ON CONFLICT (lab_sample_id) DO UPDATE SET
		batch_id = excluded.batch_id, scan_seq = excluded.scan_seq, sampled_at = excluded.sampled_at,
		epa = excluded.epa, dha = excluded.dha, dpa = excluded.dpa,
		matched = excluded.matched, prediction_id = excluded.prediction_id,
		spectrum_unix_ns = excluded.spectrum_unix_ns, reason = excluded.reason, updated_at = now()
	RETURNING xmax = 0 AS inserted
)
SELECT count(*) FILTER (WHERE NOT inserted), count(*) FILTER (WHERE inserted) FROM written`

// Upsert implements reconcile.LabStore: one transaction, one statement.
// Results later in the slice replace earlier ones with the same
// LabSampleID, and count as replacing them, as in the embedded store.
func (s *Store) upsert(ctx context.Context, results []reconcile.LabResult) (int, error) {
	if len(results) > reconcile.MaxRecords {
		return 0, fmt.Errorf("pglab: %d results in one upsert, more than %d", len(results), reconcile.MaxRecords)
	}
	if len(results) == 0 {
		return 0, ctx.Err()
	}
	latest, superseded := lastOfEachID(results)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("pglab: upsert: %w", err)
	}
	defer rollback(ctx, tx)
	var replaced, inserted int
	if err := tx.QueryRow(ctx, upsertSQL, columnsOf(latest)...).Scan(&replaced, &inserted); err != nil {
		return 0, diskFull(fmt.Errorf("pglab: upsert: %w", err))
	}
	if inserted > 0 {
		if err := s.checkCount(ctx, tx); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, diskFull(fmt.Errorf("pglab: upsert: commit: %w", err))
	}
	return replaced + superseded, nil
}

// lastOfEachID is the last result of each LabSampleID in results, sorted
// by LabSampleID (one statement may not update a row twice), and how many
// earlier ones they supersede.
func lastOfEachID(results []reconcile.LabResult) (latest []*reconcile.LabResult, superseded int) {
	index := make(map[string]int, len(results))
	for i := range results {
		if k, seen := index[results[i].LabSampleID]; seen {
			latest[k] = &results[i]
			superseded++
			continue
		}
		index[results[i].LabSampleID] = len(latest)
		latest = append(latest, &results[i])
	}
	slices.SortFunc(latest, func(a, b *reconcile.LabResult) int { return cmp.Compare(a.LabSampleID, b.LabSampleID) })
	return latest, superseded
}

// columnsOf is the arguments of upsertSQL: results as one array per
// column, a nil element or an invalid UUID being NULL.
func columnsOf(results []*reconcile.LabResult) []any {
	n := len(results)
	var (
		ids, batches, reasons = make([]string, n), make([]string, n), make([]string, n)
		scanSeqs, spectra     = make([]*int64, n), make([]*int64, n)
		sampledAt             = make([]*string, n)
		lab                   [inference.NumAnalytes][]*float64
		matched               = make([]bool, n)
		predictionIDs         = make([]pgtype.UUID, n)
	)
	for k := range lab {
		lab[k] = make([]*float64, n)
	}
	for i, r := range results {
		ids[i], batches[i], reasons[i], matched[i] = r.LabSampleID, r.BatchID, string(r.Reason), r.Matched
		if r.HasScanSeq {
			scanSeqs[i] = &r.ScanSeq
		}
		if !r.SampledAt.IsZero() {
			text := r.SampledAt.Format(time.RFC3339Nano)
			sampledAt[i] = &text
		}
		for k := range lab {
			if r.Lab.Valid[k] {
				lab[k][i] = &r.Lab.Value[k]
			}
		}
		if r.Matched {
			ns := unixnano.Of(r.SpectrumTime)
			spectra[i] = &ns
			predictionIDs[i] = pgtype.UUID{Bytes: r.PredictionID, Valid: true}
		}
	}
	return []any{ids, batches, scanSeqs, sampledAt, lab[0], lab[1], lab[2], matched, predictionIDs, spectra, reasons}
}

// checkCount refuses a transaction that took the store past maxResults.
// Posts on other connections that have not committed are not counted: the
// bound can be passed by what concurrent posts add, at most
// reconcile.MaxRecords each, which is what it is for (to stop a client
// filling the disk, not to count exactly).
func (s *Store) checkCount(ctx context.Context, tx pgx.Tx) error {
	var n int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM lab_results`).Scan(&n); err != nil {
		return fmt.Errorf("pglab: upsert: count: %w", err)
	}
	if n > s.maxResults {
		return fmt.Errorf("pglab: %w (%d results, at most %d)", labstore.ErrFull, n, s.maxResults)
	}
	return nil
}

// sqlStateDiskFull is PostgreSQL's disk_full.
const sqlStateDiskFull = "53100"

// diskFull marks err with labstore.ErrFull when the database reports its
// disk full, so that the client learns it is the server's storage (507),
// not a bug.
func diskFull(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == sqlStateDiskFull {
		return fmt.Errorf("%w: %w", labstore.ErrFull, err)
	}
	return err
}

// rollback ends tx if it has not committed, with a bounded context of its
// own: the caller's may have ended.
func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	// After a commit it is pgx.ErrTxClosed; any other error has closed
	// the connection, and with it the transaction: nothing is left to do.
	_ = tx.Rollback(ctx)
}

// rangeSQL is Range's query: $1 the lowest spectrum time, $2 whether the
// range is open above, $3 the time it ends before, $4 the limit.
const rangeSQL = `SELECT lab_sample_id, batch_id, scan_seq, sampled_at, epa, dha, dpa, prediction_id, spectrum_unix_ns
	FROM lab_results
	WHERE matched AND spectrum_unix_ns >= $1 AND ($2 OR spectrum_unix_ns < $3)
	ORDER BY spectrum_unix_ns, lab_sample_id
	LIMIT $4`

// Range implements reconcile.LabStore. limit is capped at
// labstore.MaxRange.
func (s *Store) rangeOf(ctx context.Context, since, until time.Time, limit int) ([]reconcile.LabResult, error) {
	limit = min(limit, labstore.MaxRange)
	if limit <= 0 {
		return nil, ctx.Err()
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	if !since.IsZero() {
		lo = unixnano.Of(since)
	}
	if !until.IsZero() {
		hi = unixnano.Of(until)
	}
	rows, err := s.pool.Query(ctx, rangeSQL, lo, until.IsZero(), hi, limit)
	if err != nil {
		return nil, fmt.Errorf("pglab: range: %w", err)
	}
	defer rows.Close()
	var out []reconcile.LabResult
	for rows.Next() {
		r, err := scanMatched(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pglab: range: %w", err)
	}
	return out, nil
}

// scanMatched reads one row of rangeSQL.
func scanMatched(rows pgx.Rows) (reconcile.LabResult, error) {
	var (
		r            reconcile.LabResult
		scanSeq      *int64
		sampledAt    *string
		lab          [inference.NumAnalytes]*float64
		predictionID pgtype.UUID
		spectrumNs   int64
	)
	if err := rows.Scan(&r.LabSampleID, &r.BatchID, &scanSeq, &sampledAt, &lab[0], &lab[1], &lab[2], &predictionID, &spectrumNs); err != nil {
		return r, fmt.Errorf("pglab: range: %w", err)
	}
	if scanSeq != nil {
		r.ScanSeq, r.HasScanSeq = *scanSeq, true
	}
	if sampledAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *sampledAt)
		if err != nil {
			return r, fmt.Errorf("pglab: range: %q: sampled_at: %w", r.LabSampleID, err)
		}
		r.SampledAt = t
	}
	for k, v := range lab {
		if v != nil {
			r.Lab.Value[k], r.Lab.Valid[k] = *v, true
		}
	}
	r.Matched, r.PredictionID = true, predictionID.Bytes
	r.SpectrumTime = time.Unix(0, spectrumNs).UTC()
	return r, nil
}
