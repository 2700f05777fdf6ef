package predlog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"ramanserve/platform/idlecpu"
	"ramanserve/platform/unixnano"
	"time"
)

// writer is the goroutine that owns the writing connection: it commits
// queued records in batches and runs retention between batches.
type writer struct {
	l      *SQLite
	conn   *sql.Conn
	insert *sql.Stmt
	codec  spectrumCodec
	axes   map[[sha256.Size]byte]int64 // digest -> axes.id, a cache of the table
	// axisBytes is the buffer an axis is hashed from.
	axisBytes []byte
	batch     []*Record
	// batchBytes is recordBytes summed over the batch.
	batchBytes int64
	args       []any

	lastRetention time.Time
	// lastFailureLog and failedSinceLog rate-limit the error log of failed
	// batches: a full disk would otherwise log ten lines a second.
	lastFailureLog time.Time
	failedSinceLog int
}

// failureLogEvery is the least time between two logged batch failures.
const failureLogEvery = time.Minute

const insertSQL = `INSERT INTO predictions (
	prediction_id, ts, model_version, role,
	epa, dha, dpa, epa_conf, dha_conf, dpa_conf,
	reduced_t2, reduced_q,
	batch_id, port, column_index, scan_seq, channel, integration_ms,
	axis_id, spectrum
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// maxAxesCached bounds the writer's axis cache; past it the cache starts
// over (the table still deduplicates).
const maxAxesCached = 64

func newWriter(ctx context.Context, l *SQLite) (*writer, error) {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("predlog: writer connection: %w", err)
	}
	insert, err := conn.PrepareContext(ctx, insertSQL)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("predlog: prepare insert: %w", err)
	}
	return &writer{
		l:      l,
		conn:   conn,
		insert: insert,
		axes:   make(map[[sha256.Size]byte]int64),
		batch:  make([]*Record, 0, l.opts.BatchMax),
		args:   make([]any, 20),
	}, nil
}

// maxPoll is the longest the writer leaves queued records untaken: a
// full batch commits within it.
const maxPoll = 10 * time.Millisecond

// run is the writer's loop. It takes the queued records every poll (a
// tenth of the commit interval, at most maxPoll), commits when the batch
// is full and at every tick of the commit interval, and checks retention
// every RetentionEvery. It polls rather than wait on the queue: a
// receiver waiting on the channel would make every Record on the hot path
// wake this goroutine (a scheduler hand-off, often a futex call, per
// prediction); polled, Record is a buffered send that wakes no one.
func (w *writer) run() {
	if w.l.opts.IdlePriority {
		if err := idlecpu.Enter(); err != nil {
			w.l.opts.Logger.Warn("prediction log: the writer runs at normal priority", "err", err)
		}
	}
	defer close(w.l.done)
	defer w.conn.Close()
	defer w.insert.Close()
	ticker := time.NewTicker(w.l.opts.CommitInterval)
	defer ticker.Stop()
	poll := time.NewTicker(min(max(w.l.opts.CommitInterval/10, time.Millisecond), maxPoll))
	defer poll.Stop()
	w.lastRetention = time.Now()
	w.updateSize()
	for {
		select {
		case <-poll.C:
			w.take()
		case <-ticker.C:
			w.take()
			w.flush()
			if time.Since(w.lastRetention) >= w.l.opts.RetentionEvery {
				w.lastRetention = time.Now()
				w.retain(0)
			}
		case <-w.l.stop:
			w.drain()
			return
		}
	}
}

// take moves the records queued now, the hot path's and RecordWait's,
// into the batch, committing each time it fills.
func (w *writer) take() {
	for range len(w.l.queue) {
		w.add(<-w.l.queue)
	}
	for range len(w.l.background) {
		w.add(<-w.l.background)
	}
}

// add puts rec in the batch, committing a full batch: BatchMax records
// or, under a size bound, batchBytesShare of it.
func (w *writer) add(rec *Record) {
	w.batch = append(w.batch, rec)
	w.batchBytes += recordBytes(rec)
	if len(w.batch) >= w.l.opts.BatchMax || (w.l.opts.MaxBytes > 0 && w.batchBytes >= w.l.opts.MaxBytes/batchBytesShare) {
		w.flush()
	}
}

// batchBytesShare: under a size bound a batch holds at most 1/16 of it by
// recordBytes. The bound's accounting (see Open) leaves one transaction
// an eighth; the estimate leaves the other half for the pages and index
// entries a batch adds beyond its records' bytes. Without it, a batch of
// BatchMax spectra (about 5 MB) would pass the smallest bound on its own.
const batchBytesShare = 16

// recordBytes overestimates what rec adds to the database: its fixed
// fields, its strings, and its spectrum uncompressed.
func recordBytes(rec *Record) int64 {
	return 256 + int64(len(rec.ModelVersion)+len(rec.BatchID)+len(rec.Port)+4*len(rec.Spectrum))
}

// drain commits everything queued when Close was called, unless Close's
// ctx ends first.
func (w *writer) drain() {
	for {
		select {
		case <-w.l.abandon:
			w.l.dropped.Add(uint64(len(w.batch)))
			w.batch, w.batchBytes = w.batch[:0], 0
			return
		case rec := <-w.l.queue:
			w.add(rec)
		case rec := <-w.l.background:
			w.add(rec)
		default:
			w.flush()
			return
		}
	}
}

// flush commits the batch in one transaction. A failed batch (full disk,
// I/O error) is rolled back, logged and counted, and the writer goes on:
// the hot path never learns of it but through Stats.
func (w *writer) flush() {
	n := len(w.batch)
	if n == 0 {
		return
	}
	err := w.commit()
	clear(w.batch)
	w.batch, w.batchBytes = w.batch[:0], 0
	if err != nil {
		clear(w.axes)
		w.l.writeFailed.Add(uint64(n))
		w.logFailure(n, err)
		return
	}
	w.l.committed.Add(uint64(n))
	w.l.lastCommit.Store(unixnano.Of(w.l.opts.Now()))
	w.afterBatch()
	if w.l.opts.MaxBytes > 0 {
		w.retain(n)
		w.afterBatch()
	}
}

func (w *writer) afterBatch() {
	if f := w.l.opts.afterBatch; f != nil {
		f()
	}
}

// logFailure logs a failed batch, at most once per failureLogEvery with the
// records lost since the last line.
func (w *writer) logFailure(n int, err error) {
	w.failedSinceLog += n
	if time.Since(w.lastFailureLog) < failureLogEvery {
		return
	}
	w.l.opts.Logger.Error("prediction log: batches failed to commit; their records are lost",
		"records", w.failedSinceLog, "err", err)
	w.lastFailureLog, w.failedSinceLog = time.Now(), 0
}

func (w *writer) commit() error {
	ctx := context.Background()
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt := tx.StmtContext(ctx, w.insert)
	for _, rec := range w.batch {
		if err := w.insertRecord(ctx, tx, stmt, rec); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (w *writer) insertRecord(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, rec *Record) error {
	a := w.args
	at := rec.Time
	if at.IsZero() {
		at = w.l.opts.Now() // the zero time has no Unix nanoseconds
	}
	a[0] = rec.PredictionID[:]
	a[1] = unixnano.Of(at)
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
	a[18], a[19] = nil, nil
	// A spectrum too long to store loses its spectrum, not its batch: the
	// prediction is still logged (the transport bounds spectra far below).
	if rec.Spectrum != nil && len(rec.Spectrum) <= MaxSpectrumPoints && len(rec.Wavenumbers) <= MaxSpectrumPoints {
		if rec.Wavenumbers != nil {
			id, err := w.axisID(ctx, tx, rec.Wavenumbers)
			if err != nil {
				return err
			}
			a[18] = id
		}
		blob, err := w.codec.encode(rec.Spectrum)
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
// answers. An axis cached from a transaction that later rolled back would
// name a missing row, so a failed batch clears the cache (see flush).
func (w *writer) axisID(ctx context.Context, tx *sql.Tx, axis []float32) (int64, error) {
	w.axisBytes = w.axisBytes[:0]
	for _, v := range axis {
		w.axisBytes = binary.LittleEndian.AppendUint32(w.axisBytes, math.Float32bits(v))
	}
	digest := sha256.Sum256(w.axisBytes)
	if id, ok := w.axes[digest]; ok {
		return id, nil
	}
	blob, err := w.codec.encode(axis)
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
	if len(w.axes) >= maxAxesCached {
		clear(w.axes)
	}
	w.axes[digest] = id
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
