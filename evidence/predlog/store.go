package predlog

import (
	"context"
	"errors"
	"time"
)

// Store is where the log keeps its records. The log's writer (New) owns
// the queue, the batching, the drop counts and the retention policy; a
// Store only stores, deletes and answers queries. The embedded one is
// package sqlitelog; predlogtest.Run is the contract every implementation
// passes. Implementations are safe for concurrent use (the log writes from
// one goroutine, and reads from any).
type Store interface {
	Reader
	BatchLister
	// Append stores recs in one transaction: all of them or none. The
	// store gives each its ID, increasing in the order of recs and of
	// earlier Appends. Records keep their Time as given; a store need not
	// keep a spectrum it cannot (too long), but keeps the record. Append
	// does not keep recs past its return.
	Append(ctx context.Context, recs []*Record) error
	// DeleteOlderThan deletes at most limit of the oldest records whose
	// Time is before cutoff, and returns how many it deleted.
	DeleteOlderThan(ctx context.Context, cutoff time.Time, limit int) (int64, error)
	// DeleteOldest deletes the limit oldest records (by Time, then ID),
	// and returns how many it deleted.
	DeleteOldest(ctx context.Context, limit int) (int64, error)
	// Size reports the storage the store takes now.
	Size(ctx context.Context) (Size, error)
	// Last returns the record last in (Time, ID) order, the order of
	// Page; found is false when the store holds none. A copy into this
	// store (ramanserve store copy) resumes after it: Page reads only
	// forward, and without Last finding where a previous run stopped
	// would mean reading the whole log.
	Last(ctx context.Context) (rec Record, found bool, err error)
	// Compact gives space freed by deletions back to the file system, a
	// bounded step at a time; the log calls it after each retention
	// pass. A store that needs no such step does nothing.
	Compact(ctx context.Context) error
	// Close releases the store; calls after it fail.
	Close(ctx context.Context) error
}

// Size is the storage a Store takes: Bytes in all, and LiveBytes of it
// holding records (the rest is free space the store reuses or Compact
// gives back).
type Size struct {
	Bytes     int64
	LiveBytes int64
}

// ErrBadCursor means a page cursor was not one this log handed out.
var ErrBadCursor = errors.New("invalid cursor: pass the next_cursor of the previous page as it was given, or none for the first page")
