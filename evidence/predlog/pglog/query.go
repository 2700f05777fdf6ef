package pglog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/pgdb"
	"ramanserve/platform/unixnano"
)

// recordColumns are what scanRecord reads, in its order; spectrumColumns
// follow them when a query asks for spectra (with the axes joined as a).
const (
	recordColumns = `p.id, p.prediction_id, p.ts, p.model_version, p.role,
	p.epa, p.dha, p.dpa, p.epa_conf, p.dha_conf, p.dpa_conf,
	p.reduced_t2, p.reduced_q,
	p.batch_id, p.port, p.column_index, p.scan_seq, p.channel, p.integration_ms`
	spectrumColumns = `, p.spectrum, p.axis_digest, a.data`
	// contributionsColumn follows the others in ByPrediction.
	contributionsColumn = `, p.contributions`
	// figureColumns are what scanFigures reads (ByPredictions): a
	// record's identity and concentrations, no more.
	figureColumns = `p.id, p.prediction_id, p.model_version, p.role, p.epa, p.dha, p.dpa`
)

// conditions gathers a query's WHERE terms and their numbered arguments.
type conditions struct {
	terms []string
	args  []any
}

// arg adds v as the next argument and returns its placeholder.
func (c *conditions) arg(v any) string {
	c.args = append(c.args, v)
	return "$" + strconv.Itoa(len(c.args))
}

func (c *conditions) add(term string) { c.terms = append(c.terms, term) }

func (c *conditions) where() string {
	if len(c.terms) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(c.terms, ` AND `)
}

// pageLimit is the records a page of f holds at most.
func pageLimit(f predlog.Filter) int {
	most := predlog.MaxPageLimit
	if f.WithSpectra {
		most = predlog.MaxSpectraPageLimit
	}
	if f.Limit <= 0 || f.Limit > most {
		return most
	}
	return f.Limit
}

// pageQuery is the query of one page of f, asking one row past limit to
// learn whether another page follows.
func pageQuery(f predlog.Filter, limit int) (string, []any, error) {
	var c conditions
	if f.HasBatchID {
		c.add(`p.batch_id = ` + c.arg(f.BatchID))
	}
	if f.ModelVersion != "" {
		c.add(`p.model_version = ` + c.arg(f.ModelVersion))
	}
	if f.Role != 0 {
		c.add(`p.role = ` + c.arg(int16(f.Role)))
	}
	if !f.Since.IsZero() {
		c.add(`p.ts >= ` + c.arg(unixnano.Of(f.Since)))
	}
	if !f.Until.IsZero() {
		c.add(`p.ts < ` + c.arg(unixnano.Of(f.Until)))
	}
	if f.Cursor != "" {
		after, err := parseCursor(f.Cursor)
		if err != nil {
			return "", nil, err
		}
		c.add(`(p.ts, p.id) > (` + c.arg(after.ts) + `, ` + c.arg(after.id) + `)`)
	}
	cols, join := recordColumns, ``
	if f.WithSpectra {
		cols += spectrumColumns
		join = ` LEFT JOIN predlog_axes a ON a.digest = p.axis_digest`
		c.add(`p.spectrum IS NOT NULL`)
	}
	if f.WithContributions {
		cols += contributionsColumn
	}
	q := `SELECT ` + cols + ` FROM predlog_records p` + join + c.where() +
		` ORDER BY p.ts, p.id LIMIT ` + c.arg(limit+1)
	return q, c.args, nil
}

// Page implements predlog.Reader: the records f selects in (Time, ID)
// order, after f.Cursor.
func (s *Store) Page(ctx context.Context, f predlog.Filter) (predlog.Page, error) {
	if err := s.usable(); err != nil {
		return predlog.Page{}, err
	}
	limit := pageLimit(f)
	q, args, err := pageQuery(f, limit)
	if err != nil {
		return predlog.Page{}, err
	}
	var recs []predlog.Record
	err = s.scan(ctx, f.WithSpectra, f.WithContributions, func(rec *predlog.Record) { recs = append(recs, *rec) }, q, args...)
	if err != nil {
		return predlog.Page{}, err
	}
	var page predlog.Page
	if len(recs) > limit {
		recs = recs[:limit]
		last := recs[limit-1]
		page.Next = cursor{ts: unixnano.Of(last.Time), id: last.ID}.String()
	}
	page.Records = recs
	return page, nil
}

// nearestSQL is the active record of a batch just at or before a time and
// the one just after it, each within its bound, in one round trip.
const nearestSQL = `(SELECT ` + recordColumns + ` FROM predlog_records p
		WHERE p.batch_id = $1 AND p.role = $2 AND p.ts <= $3 AND p.ts >= $4
		ORDER BY p.ts DESC, p.id DESC LIMIT 1)
	UNION ALL
	(SELECT ` + recordColumns + ` FROM predlog_records p
		WHERE p.batch_id = $1 AND p.role = $2 AND p.ts > $3 AND p.ts <= $5
		ORDER BY p.ts, p.id LIMIT 1)`

// Nearest implements predlog.Reader. Of two records equally close, the
// earlier wins.
func (s *Store) Nearest(ctx context.Context, batchID string, at time.Time, window time.Duration) (predlog.Record, bool, error) {
	if err := s.usable(); err != nil {
		return predlog.Record{}, false, err
	}
	if window < 0 {
		return predlog.Record{}, false, errors.New("pglog: negative match window")
	}
	t, w := unixnano.Of(at), window.Nanoseconds()
	recs, err := s.query(ctx, false, nearestSQL, batchID, int16(predlog.RoleActive), t, saturatingSub(t, w), saturatingAdd(t, w))
	if err != nil || len(recs) == 0 {
		return predlog.Record{}, false, err
	}
	best := recs[0]
	for _, r := range recs[1:] {
		d, bestD := distance(r, t), distance(best, t)
		if d < bestD || (d == bestD && r.Time.Before(best.Time)) {
			best = r
		}
	}
	return best, true, nil
}

// distance is how far rec is from t (Unix ns), saturated.
func distance(rec predlog.Record, t int64) uint64 {
	ts := unixnano.Of(rec.Time)
	if ts >= t {
		return uint64(ts) - uint64(t)
	}
	return uint64(t) - uint64(ts)
}

// saturatingAdd is a+b for b >= 0, at most math.MaxInt64.
func saturatingAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// saturatingSub is a-b for b >= 0, at least math.MinInt64.
func saturatingSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// ByScanSeq implements predlog.Reader: of the active records of batchID
// with scanSeq, the latest appended.
func (s *Store) ByScanSeq(ctx context.Context, batchID string, scanSeq float64) (predlog.Record, bool, error) {
	if err := s.usable(); err != nil {
		return predlog.Record{}, false, err
	}
	recs, err := s.query(ctx, false, `SELECT `+recordColumns+` FROM predlog_records p
		WHERE p.batch_id = $1 AND p.scan_seq = $2 AND p.role = $3 ORDER BY p.id DESC LIMIT 1`,
		batchID, scanSeq, int16(predlog.RoleActive))
	if err != nil || len(recs) == 0 {
		return predlog.Record{}, false, err
	}
	return recs[0], true, nil
}

// Last implements predlog.Store: the record last in (Time, ID) order,
// read backwards along the (ts, id) index.
func (s *Store) Last(ctx context.Context) (predlog.Record, bool, error) {
	if err := s.usable(); err != nil {
		return predlog.Record{}, false, err
	}
	recs, err := s.query(ctx, false, `SELECT `+recordColumns+` FROM predlog_records p ORDER BY p.ts DESC, p.id DESC LIMIT 1`)
	if err != nil || len(recs) == 0 {
		return predlog.Record{}, false, err
	}
	return recs[0], true, nil
}

// ByPrediction implements predlog.Reader, with the spectrum and the
// contributions as stored.
func (s *Store) ByPrediction(ctx context.Context, id predlog.PredictionID) ([]predlog.Record, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var recs []predlog.Record
	err := s.scan(ctx, true, true, func(rec *predlog.Record) { recs = append(recs, *rec) },
		`SELECT `+recordColumns+spectrumColumns+contributionsColumn+` FROM predlog_records p
		LEFT JOIN predlog_axes a ON a.digest = p.axis_digest
		WHERE p.prediction_id = $1 ORDER BY p.role, p.id`, pgtype.UUID{Bytes: id, Valid: true})
	return recs, err
}

// ByPredictions implements predlog.Reader in one statement: the ids as
// one uuid[] parameter, looked up in the prediction_id index, and the
// rows ordered by spectrum so that they can be handed on a spectrum at a
// time.
func (s *Store) ByPredictions(ctx context.Context, ids []predlog.PredictionID, use func(recs []predlog.Record) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	param := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		param[i] = pgtype.UUID{Bytes: id, Valid: true}
	}
	rows, err := s.pool.Query(ctx, `SELECT `+figureColumns+` FROM predlog_records p
		WHERE p.prediction_id = ANY($1) ORDER BY p.prediction_id, p.role, p.id`, param)
	if err != nil {
		return fmt.Errorf("pglog: query: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	groups := predlog.NewSpectrumGroups(use)
	for rows.Next() {
		var rec predlog.Record
		if err := scanFigures(rows, &rec); err != nil {
			return err
		}
		if err := groups.Add(&rec); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pglog: query: %w", pgdb.Classify(err))
	}
	return groups.Flush()
}

// scanFigures reads one row of figureColumns.
func scanFigures(rows pgx.Rows, rec *predlog.Record) error {
	var (
		pid  pgtype.UUID
		cols predlog.Columns
	)
	if err := rows.Scan(append([]any{&rec.ID, &pid, &rec.ModelVersion, &cols.Role}, cols.Concentrations()...)...); err != nil {
		return fmt.Errorf("pglog: read a record: %w", err)
	}
	rec.PredictionID = pid.Bytes
	cols.FillConcentrations(rec)
	return nil
}

// query runs q and reads its rows as records, with their spectra when
// withSpectra (the columns of spectrumColumns follow).
func (s *Store) query(ctx context.Context, withSpectra bool, q string, args ...any) ([]predlog.Record, error) {
	var recs []predlog.Record
	err := s.each(ctx, withSpectra, func(rec *predlog.Record) { recs = append(recs, *rec) }, q, args...)
	return recs, err
}

// each runs q and hands each record it reads to use, which must not keep
// the pointer: a large read need not hold its rows twice.
func (s *Store) each(ctx context.Context, withSpectra bool, use func(*predlog.Record), q string, args ...any) error {
	return s.scan(ctx, withSpectra, false, use, q, args...)
}

// scan is each, reading contributionsColumn last when withContributions.
func (s *Store) scan(ctx context.Context, withSpectra, withContributions bool, use func(*predlog.Record), q string, args ...any) error {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("pglog: query: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	var axes axisCache
	for rows.Next() {
		var rec predlog.Record
		if err := scanRecord(rows, &rec, withSpectra, withContributions, &axes); err != nil {
			return err
		}
		use(&rec)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("pglog: query: %w", pgdb.Classify(err))
	}
	return nil
}

// axisCache holds a page's decoded axes by digest: records on the same
// axis share its slice, decoded once.
type axisCache map[string][]float32

func (c *axisCache) get(digest, data []byte) ([]float32, error) {
	if w, ok := (*c)[string(digest)]; ok {
		return w, nil
	}
	w, err := decodeSpectrum(data)
	if err != nil {
		return nil, err
	}
	if *c == nil {
		*c = make(axisCache)
	}
	(*c)[string(digest)] = w
	return w, nil
}

// scanRecord reads one row of recordColumns, and of spectrumColumns when
// withSpectra.
func scanRecord(rows pgx.Rows, rec *predlog.Record, withSpectra, withContributions bool, axes *axisCache) error {
	var (
		pid                                   pgtype.UUID
		cols                                  predlog.Columns
		spectrum, digest, axis, contributions []byte
	)
	dest := append(append([]any{&rec.ID, &pid, &cols.Time, &rec.ModelVersion, &cols.Role}, cols.Figures()...), cols.Context()...)
	if withSpectra {
		dest = append(dest, &spectrum, &digest, &axis)
	}
	if withContributions {
		dest = append(dest, &contributions)
	}
	if err := rows.Scan(dest...); err != nil {
		return fmt.Errorf("pglog: read a record: %w", err)
	}
	rec.PredictionID = pid.Bytes
	cols.FillFigures(rec)
	cols.FillContext(rec)
	var err error
	if rec.Contributions, err = predlog.DecodeContributions(contributions); err != nil {
		return fmt.Errorf("pglog: record %d: %w", rec.ID, err)
	}
	if !withSpectra || spectrum == nil {
		return nil
	}
	return scanSpectrum(rec, spectrum, digest, axis, axes)
}

// scanSpectrum decodes a record's stored spectrum and its axis.
func scanSpectrum(rec *predlog.Record, spectrum, digest, axis []byte, axes *axisCache) error {
	var err error
	if rec.Spectrum, err = decodeSpectrum(spectrum); err != nil {
		return fmt.Errorf("pglog: record %d: %w", rec.ID, err)
	}
	if digest == nil || axis == nil {
		return nil
	}
	if rec.Wavenumbers, err = axes.get(digest, axis); err != nil {
		return fmt.Errorf("pglog: record %d: axis: %w", rec.ID, err)
	}
	return nil
}

// batchesSQL is one page of batches: the ids of the page (ones with an
// active record, after the cursor, one past the limit), then each one's
// figures per model version in one grouped pass. Ids and versions
// compare by their bytes (collation "C", whatever the database's
// locale), the order of the batch cursor and of the embedded store;
// migration 00009 indexes batch_id in that collation.
const batchesSQL = `SELECT p.batch_id, p.model_version,
		min(p.ts) FILTER (WHERE p.role = $1), max(p.ts) FILTER (WHERE p.role = $1), count(*) FILTER (WHERE p.role = $1)
	FROM predlog_records p
	WHERE p.batch_id IN (SELECT DISTINCT q.batch_id COLLATE "C" FROM predlog_records q
		WHERE q.batch_id COLLATE "C" > $2 AND q.role = $1 ORDER BY 1 LIMIT $3)
	GROUP BY p.batch_id, p.model_version
	ORDER BY p.batch_id COLLATE "C", p.model_version COLLATE "C"`

// Batches implements predlog.BatchLister.
func (s *Store) Batches(ctx context.Context, f predlog.BatchFilter) (predlog.BatchPage, error) {
	if err := s.usable(); err != nil {
		return predlog.BatchPage{}, err
	}
	limit := predlog.BatchPageLimit(f)
	after := ""
	if f.Cursor != "" {
		var err error
		if after, err = predlog.DecodeBatchCursor(f.Cursor); err != nil {
			return predlog.BatchPage{}, err
		}
	}
	rows, err := s.pool.Query(ctx, batchesSQL, int16(predlog.RoleActive), after, limit+1)
	if err != nil {
		return predlog.BatchPage{}, fmt.Errorf("pglog: batches: %w", pgdb.Classify(err))
	}
	defer rows.Close()
	var sums []predlog.BatchSummary
	for rows.Next() {
		var (
			r           predlog.BatchRow
			first, last pgtype.Int8
		)
		if err := rows.Scan(&r.BatchID, &r.ModelVersion, &first, &last, &r.Count); err != nil {
			return predlog.BatchPage{}, fmt.Errorf("pglog: batches: %w", err)
		}
		r.First, r.Last = first.Int64, last.Int64
		sums = predlog.AddBatchRow(sums, r)
	}
	if err := rows.Err(); err != nil {
		return predlog.BatchPage{}, fmt.Errorf("pglog: batches: %w", pgdb.Classify(err))
	}
	return predlog.FinishBatchPage(sums, limit), nil
}
