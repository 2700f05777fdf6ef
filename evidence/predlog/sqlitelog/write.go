package sqlitelog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/unixnano"
)

const insertSQL = `INSERT INTO predictions (
	prediction_id, ts, model_version, role,
	epa, dha, dpa, epa_conf, dha_conf, dpa_conf,
	reduced_t2, reduced_q,
	batch_id, port, column_index, scan_seq, channel, integration_ms,
	axis_id, spectrum, contributions
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// maxAxesCached bounds the axis cache; past it the cache starts over (the
// table still deduplicates).
const maxAxesCached = 64

// Append implements predlog.Store: one transaction through the prepared
// insert, spectra compressed on the way.
func (s *Store) Append(ctx context.Context, recs []*predlog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.appendLocked(ctx, recs); err != nil {
		// An axis cached from the transaction that rolled back would
		// name a missing row.
		clear(s.axes)
		return err
	}
	return nil
}

func (s *Store) appendLocked(ctx context.Context, recs []*predlog.Record) error {
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, s.insert)
	for _, rec := range recs {
		if err := s.insertRecord(ctx, tx, stmt, rec); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (s *Store) insertRecord(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, rec *predlog.Record) error {
	a := s.args
	a[0] = rec.PredictionID[:]
	a[1] = unixnano.Of(rec.Time)
	a[2] = rec.ModelVersion
	a[3] = int64(rec.Role)
	for k := range 3 {
		a[4+k] = nullFloat(rec.Concentrations.Value[k], rec.Concentrations.Valid[k])
		a[7+k] = nullFloat(rec.Confidence.Value[k], rec.Confidence.Valid[k])
	}
	a[10] = nullFloat(rec.ReducedT2, rec.HasReducedT2)
	a[11] = nullFloat(rec.ReducedQ, rec.HasReducedQ)
	a[12] = nullString(rec.BatchID, rec.HasBatchID)
	a[13] = nullString(rec.Port, rec.HasPort)
	a[14] = nullFloat(rec.ColumnIndex, rec.HasColumnIndex)
	a[15] = nullFloat(rec.ScanSeq, rec.HasScanSeq)
	a[16] = nullFloat(rec.Channel, rec.HasChannel)
	a[17] = nullFloat(rec.IntegrationMS, rec.HasIntegrationMS)
	a[18], a[19], a[20] = nil, nil, nil
	if rec.Contributions != nil {
		a[20] = predlog.EncodeContributions(nil, rec.Contributions)
	}
	// A spectrum too long to store loses its spectrum, not its batch: the
	// prediction is still logged (the transport bounds spectra far below).
	if rec.Spectrum != nil && len(rec.Spectrum) <= MaxSpectrumPoints && len(rec.Wavenumbers) <= MaxSpectrumPoints {
		if rec.Wavenumbers != nil {
			id, err := s.axisID(ctx, tx, rec.Wavenumbers)
			if err != nil {
				return err
			}
			a[18] = id
		}
		blob, err := s.codec.encode(rec.Spectrum)
		if err != nil {
			return err
		}
		a[19] = blob
	}
	_, err := stmt.ExecContext(ctx, a...)
	return err
}

// axisID stores a spectrum's wavenumber axis once and returns its row. A
// rig sends the same axis with every scan, so the cache nearly always
// answers.
func (s *Store) axisID(ctx context.Context, tx *sql.Tx, axis []float32) (int64, error) {
	s.axisBytes = s.axisBytes[:0]
	for _, v := range axis {
		s.axisBytes = binary.LittleEndian.AppendUint32(s.axisBytes, math.Float32bits(v))
	}
	digest := sha256.Sum256(s.axisBytes)
	if id, ok := s.axes[digest]; ok {
		return id, nil
	}
	blob, err := s.codec.encode(axis)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO axes (digest, data) VALUES (?, ?)`, digest[:], blob); err != nil {
		return 0, err
	}
	var id int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM axes WHERE digest = ?`, digest[:]).Scan(&id); err != nil {
		return 0, err
	}
	if len(s.axes) >= maxAxesCached {
		clear(s.axes)
	}
	s.axes[digest] = id
	return id, nil
}

func nullFloat(v float64, ok bool) any {
	if !ok || math.IsNaN(v) {
		return nil
	}
	return v
}

func nullString(v string, ok bool) any {
	if !ok {
		return nil
	}
	return v
}

const (
	deleteOlderSQL = `DELETE FROM predictions WHERE id IN (
		SELECT id FROM predictions WHERE ts < ? ORDER BY ts, id LIMIT ?)`
	deleteOldestSQL = `DELETE FROM predictions WHERE id IN (
		SELECT id FROM predictions ORDER BY ts, id LIMIT ?)`
)

// DeleteOlderThan implements predlog.Store.
func (s *Store) DeleteOlderThan(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	return s.delete(ctx, deleteOlderSQL, unixnano.Of(cutoff), limit)
}

// DeleteOldest implements predlog.Store.
func (s *Store) DeleteOldest(ctx context.Context, limit int) (int64, error) {
	return s.delete(ctx, deleteOldestSQL, limit)
}

func (s *Store) delete(ctx context.Context, query string, args ...any) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.conn.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlitelog: delete: %w", err)
	}
	return res.RowsAffected()
}

// pages is the database's page accounting.
type pages struct {
	pageSize, pages, free int64
}

func (p pages) fileBytes() int64 { return p.pages * p.pageSize }
func (p pages) liveBytes() int64 { return (p.pages - p.free) * p.pageSize }

// pageCount reads the page accounting. Called with s.mu held.
func (s *Store) pageCount(ctx context.Context) (pages, error) {
	var p pages
	if err := s.conn.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&p.pageSize); err != nil {
		return p, err
	}
	if err := s.conn.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&p.pages); err != nil {
		return p, err
	}
	if err := s.conn.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&p.free); err != nil {
		return p, err
	}
	return p, nil
}

// Size implements predlog.Store: the database file's pages (page_count *
// page_size), and those not on the free list.
func (s *Store) Size(ctx context.Context) (predlog.Size, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pageCount(ctx)
	if err != nil {
		return predlog.Size{}, fmt.Errorf("sqlitelog: size: %w", err)
	}
	return predlog.Size{Bytes: p.fileBytes(), LiveBytes: p.liveBytes()}, nil
}

// Compact implements predlog.Store: it gives free pages back to the file
// system, a step at a time, when they are a quarter of the file (after
// age retention or a lowered bound) or when the file is over 3/4 of
// MaxBytes. A step moves at most 256 pages, each of which the WAL holds
// until the next checkpoint, so the steps are smaller under a size bound,
// and each is followed by a passive checkpoint (one that never waits for
// readers).
func (s *Store) Compact(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pageCount(ctx)
	if err != nil || p.free == 0 {
		return err
	}
	maxBytes := s.opts.MaxBytes
	over := maxBytes > 0 && p.fileBytes() > maxBytes*3/4
	if !over && p.free*4 < p.pages {
		return nil
	}
	step := int64(256)
	if maxBytes > 0 {
		step = max(16, min(step, maxBytes/32/p.pageSize))
	}
	if _, err := s.conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, min(step, p.free))); err != nil {
		return fmt.Errorf("sqlitelog: incremental vacuum: %w", err)
	}
	if _, err := s.conn.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return fmt.Errorf("sqlitelog: checkpoint: %w", err)
	}
	return nil
}
