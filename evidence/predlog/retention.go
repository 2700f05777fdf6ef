package predlog

import (
	"context"
	"fmt"
	"ramanserve/platform/unixnano"
)

// Retention runs on the writer goroutine, between batches, so it never
// races an insert; each DELETE removes at most DeleteChunk rows in its own
// transaction, and one retention pass deletes at most maxChunksPerPass
// chunks before the writer goes back to its queue.
const maxChunksPerPass = 8

const (
	deleteOlderSQL = `DELETE FROM predictions WHERE id IN (
		SELECT id FROM predictions WHERE ts < ? ORDER BY ts LIMIT ?)`
	deleteOldestSQL = `DELETE FROM predictions WHERE id IN (
		SELECT id FROM predictions ORDER BY ts LIMIT ?)`
)

// dbSize is the database's page accounting.
type dbSize struct {
	pageSize, pages, free int64
}

func (s dbSize) fileBytes() int64 { return s.pages * s.pageSize }
func (s dbSize) liveBytes() int64 { return (s.pages - s.free) * s.pageSize }

func (w *writer) size(ctx context.Context) (dbSize, error) {
	var s dbSize
	if err := w.conn.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&s.pageSize); err != nil {
		return s, err
	}
	if err := w.conn.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&s.pages); err != nil {
		return s, err
	}
	if err := w.conn.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&s.free); err != nil {
		return s, err
	}
	return s, nil
}

func (w *writer) updateSize() {
	if s, err := w.size(context.Background()); err == nil {
		w.l.sizeBytes.Store(s.fileBytes())
	}
}

// retain applies the age and the size bound. justInserted is the size of
// the batch just committed (0 on a timer pass): while the database is over
// its bound, a pass deletes at least as many rows as the batch added, so
// retention keeps pace with any write rate.
func (w *writer) retain(justInserted int) {
	ctx := context.Background()
	if err := w.retainAge(ctx); err != nil {
		w.l.opts.Logger.Error("prediction log: age retention failed", "err", err)
	}
	if w.l.opts.MaxBytes > 0 {
		if err := w.retainSize(ctx, justInserted); err != nil {
			w.l.opts.Logger.Error("prediction log: size retention failed", "err", err)
		}
	}
	if err := w.vacuum(ctx); err != nil {
		w.l.opts.Logger.Error("prediction log: incremental vacuum failed", "err", err)
	}
	w.updateSize()
}

func (w *writer) retainAge(ctx context.Context) error {
	if w.l.opts.Retention <= 0 {
		return nil
	}
	cutoff := unixnano.Of(w.l.opts.Now().Add(-w.l.opts.Retention))
	for range maxChunksPerPass {
		n, err := w.deleteChunk(ctx, deleteOlderSQL, cutoff, DeleteChunk)
		if err != nil || n < DeleteChunk {
			return err
		}
	}
	return nil
}

// retainSize deletes the oldest records while the live pages exceed 5/8
// of MaxBytes, down to 1/2. The freed pages are reused by the next
// records, so the file itself stops growing near 5/8 of MaxBytes.
func (w *writer) retainSize(ctx context.Context, justInserted int) error {
	high, low := w.l.opts.MaxBytes*5/8, w.l.opts.MaxBytes/2
	s, err := w.size(ctx)
	if err != nil {
		return err
	}
	if s.liveBytes() <= high {
		return nil
	}
	chunks := max(maxChunksPerPass, 2*justInserted/DeleteChunk+1)
	for range chunks {
		if s.liveBytes() <= low {
			break
		}
		n, err := w.deleteChunk(ctx, deleteOldestSQL, DeleteChunk)
		if err != nil {
			return err
		}
		if s, err = w.size(ctx); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return nil
}

// vacuum gives free pages back to the file system, a step at a time, when
// they are a quarter of the file (after age retention or a lowered bound)
// or when the file is over 3/4 of MaxBytes. A step moves at most
// vacuumStep pages, each of which the WAL holds until the next
// checkpoint, so the steps are small under a size bound, and each is
// followed by a passive checkpoint (one that never waits for readers).
func (w *writer) vacuum(ctx context.Context) error {
	s, err := w.size(ctx)
	if err != nil || s.free == 0 {
		return err
	}
	over := w.l.opts.MaxBytes > 0 && s.fileBytes() > w.l.opts.MaxBytes*3/4
	if !over && s.free*4 < s.pages {
		return nil
	}
	step := int64(256)
	if w.l.opts.MaxBytes > 0 {
		step = max(16, min(step, w.l.opts.MaxBytes/32/s.pageSize))
	}
	if _, err := w.conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, min(step, s.free))); err != nil {
		return fmt.Errorf("incremental vacuum: %w", err)
	}
	if _, err := w.conn.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

func (w *writer) deleteChunk(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := w.conn.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	w.l.deleted.Add(uint64(n))
	return n, nil
}
