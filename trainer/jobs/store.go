package jobs

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store keeps job records. The Manager writes a job's record at every
// change of its status or progress, and reads them all once, when it
// starts; records are never removed (a list cursor names a job, and must
// outlive a restart). Implementations are safe for concurrent use. The
// embedded one is package jobfiles; jobstoretest.RunStore is the contract
// every implementation passes.
type Store interface {
	// Save writes j's record whole, replacing any record with the same ID:
	// a reader, or a restart after a crash, finds the old record or the
	// new one, never a mixture. Save does not keep j.
	Save(ctx context.Context, j *Job) error
	// LoadAll returns every record, in no particular order. A record that
	// cannot be read is left out and reported in skipped, which never
	// fails the load: one damaged record must not stop the server.
	LoadAll(ctx context.Context) (records []*Job, skipped []error, err error)
}

// UploadSpool keeps the data sets of queued training jobs across a
// restart, as bytes by job id (the encoding is this package's, spool.go).
// Implementations are safe for concurrent use; jobstoretest.RunUploadSpool
// is their contract.
type UploadSpool interface {
	// Put stores what r yields under id, replacing what was stored under
	// it, whole or not at all: when r or the storage fails, or ctx ends,
	// Put returns the error and the stored bytes are those of before.
	Put(ctx context.Context, id string, r io.Reader) error
	// Open returns the bytes stored under id and their size, or an error
	// wrapping ErrNoUpload when there are none.
	Open(ctx context.Context, id string) (rc io.ReadCloser, size int64, err error)
	// Remove deletes what is stored under id; removing nothing is no error.
	Remove(ctx context.Context, id string) error
}

// ErrNoUpload means an UploadSpool holds nothing under an id.
var ErrNoUpload = errors.New("jobs: no saved data set")

// storeTimeout bounds a store call the Manager makes without a caller's
// context (a status change, a spool removal): a store that hangs delays
// the worker, never for ever.
const storeTimeout = 30 * time.Second

// storeContext is the context of such a call.
func storeContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}
