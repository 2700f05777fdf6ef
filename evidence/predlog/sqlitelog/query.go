package sqlitelog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/unixnano"
)

// recordColumns are the columns scanRecord reads, in its order; the
// spectrum and its axis are joined only when asked for.
const recordColumns = `p.id, p.prediction_id, p.ts, p.model_version, p.role,
	p.epa, p.dha, p.dpa, p.epa_conf, p.dha_conf, p.dpa_conf,
	p.reduced_t2, p.reduced_q,
	p.batch_id, p.port, p.column_index, p.scan_seq, p.channel, p.integration_ms`

const spectrumColumns = `, p.spectrum, p.axis_id, a.data`

// contributionsColumn follows the others when a read asks for the
// stored contributions.
const contributionsColumn = `, p.contributions`

// Page implements predlog.Reader: the records f selects in (Time, ID) order.
func (s *Store) Page(ctx context.Context, f predlog.Filter) (predlog.Page, error) {
	maxLimit := predlog.MaxPageLimit
	if f.WithSpectra {
		maxLimit = predlog.MaxSpectraPageLimit
	}
	limit := f.Limit
	if limit <= 0 || limit > maxLimit {
		limit = maxLimit
	}
	var where []string
	var args []any
	if f.HasBatchID {
		where, args = append(where, `p.batch_id = ?`), append(args, f.BatchID)
	}
	if f.ModelVersion != "" {
		where, args = append(where, `p.model_version = ?`), append(args, f.ModelVersion)
	}
	if f.Role != 0 {
		where, args = append(where, `p.role = ?`), append(args, int64(f.Role))
	}
	if !f.Since.IsZero() {
		where, args = append(where, `p.ts >= ?`), append(args, unixnano.Of(f.Since))
	}
	if !f.Until.IsZero() {
		where, args = append(where, `p.ts < ?`), append(args, unixnano.Of(f.Until))
	}
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return predlog.Page{}, err
		}
		where, args = append(where, `(p.ts, p.id) > (?, ?)`), append(args, c.ts, c.id)
	}
	cols, join := recordColumns, ""
	if f.WithSpectra {
		cols += spectrumColumns
		join = ` LEFT JOIN axes a ON a.id = p.axis_id`
		where = append(where, `p.spectrum IS NOT NULL`)
	}
	if f.WithContributions {
		cols += contributionsColumn
	}
	q := `SELECT ` + cols + ` FROM predictions p` + join
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	// One row past the limit tells whether a next page exists.
	q += ` ORDER BY p.ts, p.id LIMIT ?`
	args = append(args, limit+1)
	var recs []predlog.Record
	err := s.scan(ctx, q, f.WithSpectra, f.WithContributions, func(rec *predlog.Record) { recs = append(recs, *rec) }, args...)
	if err != nil {
		return predlog.Page{}, err
	}
	var page predlog.Page
	if len(recs) > limit {
		recs = recs[:limit]
		last := recs[limit-1]
		page.Next = encodeCursor(cursor{ts: last.Time.UnixNano(), id: last.ID})
	}
	page.Records = recs
	return page, nil
}

// Nearest returns the active record of batchID closest to at within window.
// Of two equally close, the earlier wins.
func (s *Store) Nearest(ctx context.Context, batchID string, at time.Time, window time.Duration) (predlog.Record, bool, error) {
	if window < 0 {
		return predlog.Record{}, false, errors.New("sqlitelog: negative match window")
	}
	t, w := unixnano.Of(at), window.Nanoseconds()
	lo, hi := saturatingAdd(t, -w), saturatingAdd(t, w)
	const base = `SELECT ` + recordColumns + ` FROM predictions p WHERE p.batch_id = ? AND p.role = ? AND `
	before, err := s.query(ctx, base+`p.ts <= ? AND p.ts >= ? ORDER BY p.ts DESC, p.id DESC LIMIT 1`, false,
		batchID, int64(predlog.RoleActive), t, lo)
	if err != nil {
		return predlog.Record{}, false, err
	}
	after, err := s.query(ctx, base+`p.ts > ? AND p.ts <= ? ORDER BY p.ts, p.id LIMIT 1`, false,
		batchID, int64(predlog.RoleActive), t, hi)
	if err != nil {
		return predlog.Record{}, false, err
	}
	switch {
	case len(before) == 0 && len(after) == 0:
		return predlog.Record{}, false, nil
	case len(after) == 0:
		return before[0], true, nil
	case len(before) == 0:
		return after[0], true, nil
	}
	if t-before[0].Time.UnixNano() <= after[0].Time.UnixNano()-t {
		return before[0], true, nil
	}
	return after[0], true, nil
}

func saturatingAdd(a, b int64) int64 {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}

// ByScanSeq returns the latest active record of batchID with scanSeq.
func (s *Store) ByScanSeq(ctx context.Context, batchID string, scanSeq float64) (predlog.Record, bool, error) {
	recs, err := s.query(ctx, `SELECT `+recordColumns+` FROM predictions p
		WHERE p.batch_id = ? AND p.scan_seq = ? AND p.role = ? ORDER BY p.id DESC LIMIT 1`, false,
		batchID, scanSeq, int64(predlog.RoleActive))
	if err != nil || len(recs) == 0 {
		return predlog.Record{}, false, err
	}
	return recs[0], true, nil
}

// Last implements predlog.Store: the record last in (Time, ID) order,
// read backwards along the ts index (which holds the rowid).
func (s *Store) Last(ctx context.Context) (predlog.Record, bool, error) {
	recs, err := s.query(ctx, `SELECT `+recordColumns+` FROM predictions p ORDER BY p.ts DESC, p.id DESC LIMIT 1`, false)
	if err != nil || len(recs) == 0 {
		return predlog.Record{}, false, err
	}
	return recs[0], true, nil
}

// ByPrediction returns every record of one spectrum, with its spectrum
// and contributions as stored.
func (s *Store) ByPrediction(ctx context.Context, id predlog.PredictionID) ([]predlog.Record, error) {
	var recs []predlog.Record
	err := s.scan(ctx, `SELECT `+recordColumns+spectrumColumns+contributionsColumn+` FROM predictions p
		LEFT JOIN axes a ON a.id = p.axis_id
		WHERE p.prediction_id = ? ORDER BY p.role, p.id`, true, true,
		func(rec *predlog.Record) { recs = append(recs, *rec) }, id[:])
	return recs, err
}

// ByPredictions implements predlog.Reader in one statement. The ids
// travel as one blob of 16 bytes each (a single parameter, however many:
// SQLite bounds a statement's parameters), sorted and without repeats,
// which a recursive CTE cuts back into ids. The statement is a join
// driven by that list, not an IN (subquery): SQLite walks the ids in
// order and looks each up in the prediction_id index, where IN would
// first build a temporary index of all of them (about a third of the
// statement's time at 45,000 ids). The rows of one id come together, in
// the index's rowid order, so no ORDER BY is needed for the groups, and
// a row names its spectrum by the id's place in the list (an integer
// costs the driver less than a blob).
func (s *Store) ByPredictions(ctx context.Context, ids []predlog.PredictionID, use func(recs []predlog.Record) error) error {
	if len(ids) == 0 {
		return nil
	}
	sorted, packed := packSortedIDs(ids)
	const q = `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < ?2)
		SELECT k.i, p.id, p.model_version, p.role, p.epa, p.dha, p.dpa
		FROM k CROSS JOIN predictions p ON p.prediction_id = substr(?1, k.i * 16 + 1, 16)`
	rows, err := s.stmts.QueryContext(ctx, q, packed, len(sorted))
	if err != nil {
		return fmt.Errorf("sqlitelog: query: %w", err)
	}
	defer rows.Close()
	groups := predlog.NewSpectrumGroups(use)
	var (
		rec   predlog.Record
		place int64
		cols  predlog.Columns
	)
	// One set of destinations for every row: a slice and its pointers
	// built per row were a fifth of the read's allocations.
	dest := append([]any{&place, &rec.ID, &rec.ModelVersion, &cols.Role}, cols.Concentrations()...)
	for rows.Next() {
		rec = predlog.Record{}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("sqlitelog: read a record: %w", err)
		}
		if place < 0 || place >= int64(len(sorted)) {
			return fmt.Errorf("sqlitelog: record %d read for id number %d of %d", rec.ID, place, len(sorted))
		}
		rec.PredictionID = sorted[place]
		cols.FillConcentrations(&rec)
		if err := groups.Add(&rec); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlitelog: query: %w", err)
	}
	return groups.Flush()
}

// packSortedIDs sorts ids in byte order without repeats and lays them
// end to end, 16 bytes each. Sorted, the lookups walk the index in
// order; without repeats, each spectrum's rows are read once and come
// together.
func packSortedIDs(ids []predlog.PredictionID) (sorted []predlog.PredictionID, packed []byte) {
	sorted = slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b predlog.PredictionID) int { return bytes.Compare(a[:], b[:]) })
	sorted = slices.Compact(sorted)
	packed = make([]byte, 0, len(sorted)*len(predlog.PredictionID{}))
	for _, id := range sorted {
		packed = append(packed, id[:]...)
	}
	return sorted, packed
}

// query runs q and returns the records it reads (with spectra when
// withSpectra, the columns of spectrumColumns following).
func (s *Store) query(ctx context.Context, q string, withSpectra bool, args ...any) ([]predlog.Record, error) {
	var recs []predlog.Record
	err := s.each(ctx, q, withSpectra, func(rec *predlog.Record) { recs = append(recs, *rec) }, args...)
	return recs, err
}

// each runs q and hands each record it reads to use, which must not keep
// the pointer: a large read need not hold its rows twice.
func (s *Store) each(ctx context.Context, q string, withSpectra bool, use func(*predlog.Record), args ...any) error {
	return s.scan(ctx, q, withSpectra, false, use, args...)
}

// scan is each, reading the contributions column last when
// withContributions.
func (s *Store) scan(ctx context.Context, q string, withSpectra, withContributions bool, use func(*predlog.Record), args ...any) error {
	rows, err := s.stmts.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("sqlitelog: query: %w", err)
	}
	defer rows.Close()
	var axes map[int64][]float32 // decoded once per query
	if withSpectra {
		axes = make(map[int64][]float32)
	}
	for rows.Next() {
		var rec predlog.Record
		if err := scanRecord(rows, &rec, axes, withContributions); err != nil {
			return err
		}
		use(&rec)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlitelog: query: %w", err)
	}
	return nil
}

// fill sets rec's prediction id and figures from the columns read.
func fill(rec *predlog.Record, pid []byte, cols *predlog.Columns) error {
	id, err := uuid.FromBytes(pid)
	if err != nil {
		return fmt.Errorf("sqlitelog: record %d has a malformed prediction id", rec.ID)
	}
	rec.PredictionID = id
	cols.FillFigures(rec)
	return nil
}

// scanRecord reads one row of recordColumns, and of spectrumColumns when
// axes (the page's decoded axes by id) is not nil.
func scanRecord(rows *sql.Rows, rec *predlog.Record, axes map[int64][]float32, withContributions bool) error {
	var (
		pid                           []byte
		cols                          predlog.Columns
		spectrum, axis, contributions []byte
		axisID                        sql.NullInt64
	)
	dest := append(append([]any{&rec.ID, &pid, &cols.Time, &rec.ModelVersion, &cols.Role}, cols.Figures()...), cols.Context()...)
	if axes != nil {
		dest = append(dest, &spectrum, &axisID, &axis)
	}
	if withContributions {
		dest = append(dest, &contributions)
	}
	if err := rows.Scan(dest...); err != nil {
		return fmt.Errorf("sqlitelog: read a record: %w", err)
	}
	if err := fill(rec, pid, &cols); err != nil {
		return err
	}
	cols.FillContext(rec)
	var err error
	if rec.Contributions, err = predlog.DecodeContributions(contributions); err != nil {
		return fmt.Errorf("sqlitelog: record %d: %w", rec.ID, err)
	}
	if axes == nil || spectrum == nil {
		return nil
	}
	if rec.Spectrum, err = decodeSpectrum(spectrum); err != nil {
		return fmt.Errorf("record %d: %w", rec.ID, err)
	}
	if !axisID.Valid || axis == nil {
		return nil
	}
	if w, ok := axes[axisID.Int64]; ok {
		rec.Wavenumbers = w
		return nil
	}
	if rec.Wavenumbers, err = decodeSpectrum(axis); err != nil {
		return fmt.Errorf("record %d: axis: %w", rec.ID, err)
	}
	axes[axisID.Int64] = rec.Wavenumbers
	return nil
}

// batchesSQL is one page of batches: the ids of the page (ones with an
// active record, after the cursor, one past the limit), found along the
// (batch_id, ts) index, then each one's figures per model version in one
// grouped pass over the same index. SQLite compares text by its bytes,
// the order of the batch cursor.
const batchesSQL = `SELECT p.batch_id, p.model_version,
		min(CASE WHEN p.role = ?1 THEN p.ts END), max(CASE WHEN p.role = ?1 THEN p.ts END), sum(p.role = ?1)
	FROM predictions p
	WHERE p.batch_id IN (SELECT DISTINCT q.batch_id FROM predictions q
		WHERE q.batch_id > ?2 AND q.role = ?1 ORDER BY q.batch_id LIMIT ?3)
	GROUP BY p.batch_id, p.model_version
	ORDER BY p.batch_id, p.model_version`

// Batches implements predlog.BatchLister.
func (s *Store) Batches(ctx context.Context, f predlog.BatchFilter) (predlog.BatchPage, error) {
	limit := predlog.BatchPageLimit(f)
	after := ""
	if f.Cursor != "" {
		var err error
		if after, err = predlog.DecodeBatchCursor(f.Cursor); err != nil {
			return predlog.BatchPage{}, err
		}
	}
	rows, err := s.stmts.QueryContext(ctx, batchesSQL, int64(predlog.RoleActive), after, limit+1)
	if err != nil {
		return predlog.BatchPage{}, fmt.Errorf("sqlitelog: batches: %w", err)
	}
	defer rows.Close()
	var sums []predlog.BatchSummary
	for rows.Next() {
		var (
			r           predlog.BatchRow
			first, last sql.NullInt64
		)
		if err := rows.Scan(&r.BatchID, &r.ModelVersion, &first, &last, &r.Count); err != nil {
			return predlog.BatchPage{}, fmt.Errorf("sqlitelog: batches: %w", err)
		}
		r.First, r.Last = first.Int64, last.Int64
		sums = predlog.AddBatchRow(sums, r)
	}
	if err := rows.Err(); err != nil {
		return predlog.BatchPage{}, fmt.Errorf("sqlitelog: batches: %w", err)
	}
	return predlog.FinishBatchPage(sums, limit), nil
}
