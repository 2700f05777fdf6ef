package predlog

import (
	"context"
	"errors"
)

// ErrClosed is RecordWait's error once the log is closing.
var ErrClosed = errors.New("predlog: the prediction log is closing")

// RecordWait hands rec to the writer like Record, but waits for room
// instead of dropping: it is for background work (a re-scoring job) that
// must not lose records and may be slowed down, never for the hot path.
// Its queue (BatchMax records) is apart from Record's, so background
// records never take the room live predictions need; the writer commits
// both in the same batches. A record it returns an error for was not queued, and is not
// counted as dropped: the caller knows and says so. It fails with ctx's
// error when ctx ends first, and with ErrClosed once Close began.
func (l *Writer) RecordWait(ctx context.Context, rec *Record) error {
	if rec == nil {
		return errors.New("predlog: nil record")
	}
	// Checked first: a select with both cases ready picks either.
	if l.closing.Load() {
		return ErrClosed
	}
	select {
	case l.background <- rec:
		return nil
	case <-l.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}
