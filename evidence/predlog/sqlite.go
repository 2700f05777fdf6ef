package predlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/platform/sqlitedb"
)

// DatabaseFileName is the log's file in its directory (with -wal and -shm
// beside it while open).
const DatabaseFileName = "predictions.db"

// Defaults of Options.
const (
	DefaultQueueSize      = 8192
	DefaultBatchMax       = 1024
	DefaultCommitInterval = 100 * time.Millisecond
	DefaultRetentionEvery = time.Second
	// DeleteChunk is the rows one retention transaction deletes, so that
	// the writer commits new records between chunks and never stalls long.
	DeleteChunk = 1000
	// MinMaxBytes is the smallest size bound Open accepts.
	MinMaxBytes = 4 << 20
)

// Options configure Open. Zero values take the defaults.
type Options struct {
	// QueueSize is the bound of the hot path's queue, in records.
	QueueSize int
	// BatchMax commits a batch as soon as it holds this many records
	// (under MaxBytes, also once it holds about MaxBytes/16; see Open).
	BatchMax int
	// CommitInterval is the longest a record waits in a partial batch:
	// a record Record accepted is committed within CommitInterval plus the
	// time of one commit, unless the process is killed first. After kill
	// -9 the log keeps every batch committed before the kill (see Open).
	CommitInterval time.Duration
	// Retention deletes records older than this (0 keeps them by age).
	Retention time.Duration
	// MaxBytes bounds the database files (0: no bound); see Open.
	MaxBytes int64
	// RetentionEvery is how often the writer checks age and size.
	RetentionEvery time.Duration
	// Logger receives write errors (slog.Default() when nil).
	Logger *slog.Logger
	// Now is the clock for age retention (time.Now when nil).
	Now func() time.Time
	// IdlePriority runs the writer on a thread of its own at idle CPU
	// priority (package idlecpu): it then commits only on CPU the rest of
	// the process leaves idle, and the queue drops (counted) while the
	// cores stay busy.
	IdlePriority bool

	// afterBatch, when set, is called on the writer goroutine after each
	// batch's commit and again after the retention it triggered: the
	// tests read the files' sizes there (export_test.go).
	afterBatch func()
}

func (o Options) withDefaults() Options {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchMax <= 0 {
		o.BatchMax = DefaultBatchMax
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = DefaultCommitInterval
	}
	if o.RetentionEvery <= 0 {
		o.RetentionEvery = DefaultRetentionEvery
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// SQLite is the prediction log in one SQLite file. It implements Log.
type SQLite struct {
	opts  Options
	db    *sql.DB
	lock  *os.File
	queue chan *Record
	// background is RecordWait's queue, apart from the hot path's so that
	// a re-scoring job never takes the room live predictions need.
	background chan *Record

	closing atomic.Bool
	stop    chan struct{} // closed by Close: drain the queue, then exit
	abandon chan struct{} // closed when Close's ctx ends: exit after the current transaction
	done    chan struct{} // closed by the writer when it has exited
	once    sync.Once

	committed   atomic.Uint64
	lastCommit  atomic.Int64 // unixnano.Of of the latest commit; 0 before the first
	dropped     atomic.Uint64
	writeFailed atomic.Uint64
	deleted     atomic.Uint64
	sizeBytes   atomic.Int64
}

var _ Log = (*SQLite)(nil)

// Open opens (creating if needed) the prediction log in dir and starts its
// writer. A second Open of the same directory, in this process or another,
// fails with ErrLocked until the first is closed or its process dies.
//
// Durability: the database runs in WAL mode with synchronous=NORMAL. A
// commit appends the batch to the WAL with write(2) and returns; the WAL is
// fsynced at checkpoints. A process crash (kill -9, panic, OOM kill)
// therefore loses nothing that was committed, because the data is in the
// kernel's page cache and reaches the file anyway; only an OS crash or power
// loss may lose the last batches committed since the previous checkpoint,
// and even then the database is consistent (never corrupt). FULL would fsync
// every commit, ten fsyncs a second at the default interval, for a
// guarantee against power loss that the log, unlike the registry, does not
// need.
//
// Size bound: with MaxBytes set, the writer deletes the oldest records, in
// transactions of DeleteChunk rows, once the live pages exceed 5/8 of
// MaxBytes, down to 1/2, after any batch that took them over; new records
// reuse the freed pages, so the file stops growing near 5/8. Incremental
// vacuum (auto_vacuum is INCREMENTAL) gives free pages back to the file
// system, in small steps, when they are a quarter of the file or the file
// is over 3/4 of MaxBytes. The WAL is checkpointed every MaxBytes/8 and
// truncated back to that size. So the file stays under 5/8 of MaxBytes plus
// one batch, the WAL under 1/8 plus one transaction (a batch, or a chunk of
// deletions: about 400 kB for 1000 records), and both together under
// MaxBytes as long as one commit batch and one chunk are each smaller than
// MaxBytes/8. The writer cuts a batch at MaxBytes/16 by an estimate that
// counts spectra uncompressed (a record takes about 250 bytes without a
// spectrum, 5 kB with one), whatever BatchMax; a chunk is under MaxBytes/8
// from MinMaxBytes up. The split is the writer's target; the total is the
// bound.
// A reader holding a snapshot open delays checkpoints and lets the WAL grow
// past its share until it ends; the page queries are short for that
// reason.
func Open(ctx context.Context, dir string, opts Options) (*SQLite, error) {
	opts = opts.withDefaults()
	if opts.MaxBytes != 0 && opts.MaxBytes < MinMaxBytes {
		return nil, fmt.Errorf("predlog: a size bound of %d bytes is below the minimum of %d", opts.MaxBytes, MinMaxBytes)
	}
	if opts.Retention < 0 || opts.MaxBytes < 0 {
		return nil, errors.New("predlog: retention and size bound must not be negative")
	}
	if strings.ContainsAny(dir, "?#") {
		return nil, fmt.Errorf("predlog: the directory %q contains ? or #, which SQLite's file name parsing would cut", dir)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, filepath.Join(dir, DatabaseFileName), opts.MaxBytes)
	if err != nil {
		lock.Close()
		return nil, err
	}
	l := &SQLite{
		opts:       opts,
		db:         db,
		lock:       lock,
		queue:      make(chan *Record, opts.QueueSize),
		background: make(chan *Record, opts.BatchMax),
		stop:       make(chan struct{}),
		abandon:    make(chan struct{}),
		done:       make(chan struct{}),
	}
	w, err := newWriter(ctx, l)
	if err != nil {
		db.Close()
		lock.Close()
		return nil, err
	}
	go w.run()
	return l, nil
}

// openDB opens the database (package sqlitedb) and brings its schema up to
// date. auto_vacuum takes effect on a new file only; an existing file
// keeps the mode it was created with. Pages are SQLite's default 4096
// bytes.
func openDB(ctx context.Context, path string, maxBytes int64) (*sql.DB, error) {
	// The WAL is checkpointed every 1000 pages (4 MiB), SQLite's default;
	// under a size bound, every MaxBytes/8, and truncated back to that
	// after each checkpoint.
	opts := sqlitedb.Options{Synchronous: sqlitedb.Normal, IncrementalVacuum: true}
	if maxBytes > 0 {
		opts.JournalSizeLimit = maxBytes / 8
		opts.WALAutocheckpoint = opts.JournalSizeLimit / 4096
	}
	// The writer holds one connection; the rest of the pool (sqlitedb's
	// default of 4) serve readers, which WAL lets run beside the writer.
	db, err := sqlitedb.Open(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("predlog: %w", err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Record hands rec to the writer without blocking. It never allocates.
func (l *SQLite) Record(rec *Record) bool {
	if rec == nil {
		return false
	}
	if l.closing.Load() {
		l.dropped.Add(1)
		return false
	}
	select {
	case l.queue <- rec:
		return true
	default:
		l.dropped.Add(1)
		return false
	}
}

// Dropped counts the records Record refused.
func (l *SQLite) Dropped() uint64 { return l.dropped.Load() }

// Stats returns the log's counters.
func (l *SQLite) Stats() Stats {
	return Stats{
		Queued:       len(l.queue),
		QueueCap:     cap(l.queue),
		Committed:    l.committed.Load(),
		LastCommitAt: lastCommitAt(l.lastCommit.Load()),
		Dropped:      l.dropped.Load(),
		WriteFailed:  l.writeFailed.Load(),
		Deleted:      l.deleted.Load(),
		SizeBytes:    l.sizeBytes.Load(),
	}
}

// Close stops accepting records, lets the writer commit what is queued,
// checkpoints the WAL and releases the directory. When ctx ends first the
// writer stops after its current transaction and the records still queued
// are counted as dropped.
func (l *SQLite) Close(ctx context.Context) error {
	var err error
	l.once.Do(func() {
		l.closing.Store(true)
		close(l.stop)
		select {
		case <-l.done:
		case <-ctx.Done():
			err = fmt.Errorf("predlog: close: %w", ctx.Err())
			close(l.abandon)
			<-l.done
		}
		// A Record that passed the closing check just before Close may
		// have queued after the writer's last drain: count it.
		for range len(l.queue) {
			<-l.queue
			l.dropped.Add(1)
		}
		for range len(l.background) {
			<-l.background
			l.dropped.Add(1)
		}
		if cerr := sqlitedb.Close(l.db); cerr != nil && err == nil {
			err = fmt.Errorf("predlog: close: %w", cerr)
		}
		if cerr := l.lock.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("predlog: close: release the lock: %w", cerr)
		}
	})
	return err
}

// lastCommitAt is Stats.LastCommitAt of a stored Unix time in ns.
func lastCommitAt(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
