package predlog

import "context"

// Retention runs on the writer goroutine, between batches, so it never
// races an append; each deletion removes at most DeleteChunk records in its
// own transaction, and one retention pass deletes at most maxChunksPerPass
// chunks before the writer goes back to its queue.
const maxChunksPerPass = 8

func (w *writer) updateSize(ctx context.Context) {
	if s, err := w.l.store.Size(ctx); err == nil {
		w.l.sizeBytes.Store(s.Bytes)
	}
}

// retain applies the age and the size bound, then lets the store compact.
// justInserted is the size of the batch just committed (0 on a timer
// pass): while the store is over its bound, a pass deletes at least as
// many records as the batch added, so retention keeps pace with any write
// rate.
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
	if err := w.l.store.Compact(ctx); err != nil {
		w.l.opts.Logger.Error("prediction log: compaction failed", "err", err)
	}
	w.updateSize(ctx)
}

func (w *writer) retainAge(ctx context.Context) error {
	if w.l.opts.Retention <= 0 {
		return nil
	}
	cutoff := w.l.opts.Now().Add(-w.l.opts.Retention)
	for range maxChunksPerPass {
		n, err := w.l.store.DeleteOlderThan(ctx, cutoff, DeleteChunk)
		w.l.deleted.Add(uint64(n))
		if err != nil || n < DeleteChunk {
			return err
		}
	}
	return nil
}

// retainSize deletes the oldest records while the bytes holding records
// exceed 5/8 of MaxBytes, down to 1/2. The freed space is reused by the
// next records, so the store itself stops growing near 5/8 of MaxBytes.
func (w *writer) retainSize(ctx context.Context, justInserted int) error {
	high, low := w.l.opts.MaxBytes*5/8, w.l.opts.MaxBytes/2
	s, err := w.l.store.Size(ctx)
	if err != nil {
		return err
	}
	if s.LiveBytes <= high {
		return nil
	}
	chunks := max(maxChunksPerPass, 2*justInserted/DeleteChunk+1)
	for range chunks {
		if s.LiveBytes <= low {
			break
		}
		n, err := w.l.store.DeleteOldest(ctx, DeleteChunk)
		w.l.deleted.Add(uint64(n))
		if err != nil {
			return err
		}
		if s, err = w.l.store.Size(ctx); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return nil
}
