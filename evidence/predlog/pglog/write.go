package pglog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/pgdb"
	"ramanserve/platform/unixnano"
)

// recordsTable and copyColumns are what Append copies, in the order of
// copyRow's values; id comes from the identity.
var (
	recordsTable = pgx.Identifier{"predlog_records"}
	copyColumns  = []string{
		"prediction_id", "ts", "model_version", "role",
		"epa", "dha", "dpa", "epa_conf", "dha_conf", "dpa_conf",
		"reduced_t2", "reduced_q",
		"batch_id", "port", "column_index", "scan_seq", "channel", "integration_ms",
		"axis_digest", "spectrum", "replica", "footprint", "contributions",
	}
)

// insertAxesSQL stores the axes a batch needs and the table lacks. The
// digests go in sorted, so two replicas meeting the same new axes lock
// them in the same order and never deadlock.
const insertAxesSQL = `INSERT INTO predlog_axes (digest, data)
	SELECT digest, data FROM unnest($1::bytea[], $2::bytea[]) AS a(digest, data)
	ORDER BY digest
	ON CONFLICT (digest) DO NOTHING`

// addUsageSQL counts an appended batch in predlog_usage. It runs last in
// Append's transaction, so the one row that every replica's appends
// update is locked only for the commit.
const addUsageSQL = `UPDATE predlog_usage SET records = records + $1, bytes = bytes + $2`

// Append implements predlog.Store: the batch is encoded first, then
// written in one transaction: the new axes, one COPY of the records (the
// identity numbers them in the order of recs), and the usage count.
func (s *Store) Append(ctx context.Context, recs []*predlog.Record) error {
	if err := s.usable(); err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	b := s.encodeBatch(recs)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(b.axes) > 0 {
			digests, data := b.axisArrays()
			if _, err := tx.Exec(ctx, insertAxesSQL, digests, data); err != nil {
				return fmt.Errorf("store axes: %w", err)
			}
		}
		if _, err := tx.CopyFrom(ctx, recordsTable, copyColumns, pgx.CopyFromRows(b.rows)); err != nil {
			return fmt.Errorf("copy records: %w", err)
		}
		if _, err := tx.Exec(ctx, addUsageSQL, len(b.rows), b.footprint); err != nil {
			return fmt.Errorf("count the records: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pglog: append %d records: %w", len(recs), pgdb.Classify(err))
	}
	return nil
}

// batch is a batch of records encoded for COPY.
type batch struct {
	rows [][]any
	// axes are the distinct axes of the batch, by digest.
	axes map[[sha256.Size]byte][]byte
	// footprint is the sum of the rows' footprints.
	footprint int64

	// lastAxis and lastDigest spare hashing the axis of every record: a
	// rig sends the same one with every scan.
	lastAxis   []float32
	lastDigest []byte
}

// encodeBatch turns recs into COPY rows. Nothing in them refers to recs.
func (s *Store) encodeBatch(recs []*predlog.Record) *batch {
	b := &batch{rows: make([][]any, 0, len(recs)), axes: make(map[[sha256.Size]byte][]byte)}
	for _, rec := range recs {
		b.add(rec, s.opts.Replica)
	}
	return b
}

func (b *batch) add(rec *predlog.Record, replica string) {
	var digest, spectrum []byte
	if storable(rec.Spectrum, rec.Wavenumbers) {
		spectrum = encodeSpectrum(rec.Spectrum)
		if rec.Wavenumbers != nil {
			digest = b.axisDigest(rec.Wavenumbers)
		}
	}
	var contributions []byte
	if rec.Contributions != nil {
		contributions = predlog.EncodeContributions(nil, rec.Contributions)
	}
	footprint := footprint(rec, replica, spectrum, digest, contributions)
	b.footprint += int64(footprint)
	row := []any{
		pgtype.UUID{Bytes: rec.PredictionID, Valid: true},
		unixnano.Of(rec.Time),
		rec.ModelVersion,
		int16(rec.Role),
		nullFloat(rec.Concentrations.Value[0], rec.Concentrations.Valid[0]),
		nullFloat(rec.Concentrations.Value[1], rec.Concentrations.Valid[1]),
		nullFloat(rec.Concentrations.Value[2], rec.Concentrations.Valid[2]),
		nullFloat(rec.Confidence.Value[0], rec.Confidence.Valid[0]),
		nullFloat(rec.Confidence.Value[1], rec.Confidence.Valid[1]),
		nullFloat(rec.Confidence.Value[2], rec.Confidence.Valid[2]),
		nullFloat(rec.ReducedT2, rec.HasReducedT2),
		nullFloat(rec.ReducedQ, rec.HasReducedQ),
		nullText(rec.BatchID, rec.HasBatchID),
		nullText(rec.Port, rec.HasPort),
		nullFloat(rec.ColumnIndex, rec.HasColumnIndex),
		nullFloat(rec.ScanSeq, rec.HasScanSeq),
		nullFloat(rec.Channel, rec.HasChannel),
		nullFloat(rec.IntegrationMS, rec.HasIntegrationMS),
		nullBytes(digest),
		nullBytes(spectrum),
		replica,
		footprint,
		nullBytes(contributions),
	}
	b.rows = append(b.rows, row)
}

// axisDigest returns the key of axis in predlog_axes, noting the axis
// for the batch's insert.
func (b *batch) axisDigest(axis []float32) []byte {
	if b.lastDigest != nil && slices.Equal(axis, b.lastAxis) {
		return b.lastDigest
	}
	data := encodeSpectrum(axis)
	sum := sha256.Sum256(data)
	b.axes[sum] = data
	b.lastAxis, b.lastDigest = slices.Clone(axis), sum[:]
	return b.lastDigest
}

// axisArrays are the batch's axes as the two arrays of insertAxesSQL,
// sorted by digest.
func (b *batch) axisArrays() (digests, data [][]byte) {
	digests = make([][]byte, 0, len(b.axes))
	for d := range b.axes {
		digests = append(digests, bytes.Clone(d[:]))
	}
	slices.SortFunc(digests, bytes.Compare)
	data = make([][]byte, len(digests))
	for i, d := range digests {
		data[i] = b.axes[[sha256.Size]byte(d)]
	}
	return digests, data
}

// The parts of a record's footprint, in bytes: the heap tuple's header
// and line pointer; the fixed-width columns when all are set (id, ts,
// prediction_id, role, twelve doubles, footprint); the five index
// entries' headers and line pointers; and their fixed-width keys (ts and
// id in four indexes, the prediction id in one). A text or bytea adds its
// length and a header of 1 byte (4 past 126 bytes); batch_id is in two
// indexes and model_version in one besides the heap.
const (
	tupleOverhead    = 24 + 4
	fixedColumns     = 8 + 8 + 16 + 2 + 12*8 + 4
	indexOverhead    = 5 * (8 + 4)
	fixedIndexKeys   = 4*16 + 16
	recordFixedBytes = tupleOverhead + fixedColumns + indexOverhead + fixedIndexKeys
)

// footprint estimates the bytes one stored record takes, for Size. A long
// spectrum counts its length before PostgreSQL compresses it, so the
// estimate errs on the large side there.
func footprint(rec *predlog.Record, replica string, spectrum, axisDigest, contributions []byte) int32 {
	n := recordFixedBytes +
		2*varlenaBytes(len(rec.ModelVersion)) +
		3*varlenaBytes(len(rec.BatchID)) +
		varlenaBytes(len(rec.Port)) +
		varlenaBytes(len(replica)) +
		varlenaBytes(len(axisDigest)) +
		varlenaBytes(len(spectrum)) +
		varlenaBytes(len(contributions))
	return int32(min(n, math.MaxInt32))
}

func varlenaBytes(n int) int {
	if n <= 126 {
		return 1 + n
	}
	return 4 + n
}

// nullFloat is v, or NULL when it is absent or NaN (which the readers
// treat as unknown).
func nullFloat(v float64, ok bool) any {
	if !ok || math.IsNaN(v) {
		return nil
	}
	return v
}

func nullText(v string, ok bool) any {
	if !ok {
		return nil
	}
	return v
}

func nullBytes(v []byte) any {
	if v == nil {
		return nil
	}
	return v
}
