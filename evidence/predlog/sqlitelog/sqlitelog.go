// Package sqlitelog is the prediction log's embedded store: one SQLite file
// (predictions.db) in a directory, with -wal and -shm beside it while open.
// It implements predlog.Store; OpenLog opens it under the log's queue and
// writer (predlog.New), which is how the server runs it.
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
// Size bound: the log (predlog.Options.MaxBytes) deletes the oldest
// records once the live pages exceed 5/8 of MaxBytes, down to 1/2; new
// records reuse the freed pages, so the file stops growing near 5/8.
// Compact (incremental vacuum; auto_vacuum is INCREMENTAL) gives free pages
// back to the file system, in small steps, when they are a quarter of the
// file or the file is over 3/4 of MaxBytes. The WAL is checkpointed every
// MaxBytes/8 and truncated back to that size. So the file stays under 5/8
// of MaxBytes plus one batch, the WAL under 1/8 plus one transaction (a
// batch, or a chunk of deletions: about 400 kB for predlog.DeleteChunk
// records), and both together under MaxBytes as long as one commit batch
// and one chunk are each smaller than MaxBytes/8. The log's writer cuts a
// batch at MaxBytes/16 by an estimate that counts spectra uncompressed (a
// record takes about 250 bytes without a spectrum, 5 kB with one), whatever
// predlog.Options.BatchMax; a chunk is under MaxBytes/8 from
// predlog.MinMaxBytes up. The split is the writer's target; the total is
// the bound. A reader holding a snapshot open delays checkpoints and lets
// the WAL grow past its share until it ends; the page queries are short for
// that reason.
package sqlitelog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"ramanserve/evidence/predlog"
	"ramanserve/platform/sqlitedb"
)

// DatabaseFileName is the log's file in its directory (with -wal and -shm
// beside it while open).
const DatabaseFileName = "predictions.db"

// Options configure Open. Zero values take the defaults.
type Options struct {
	// MaxBytes is the log's size bound (predlog.Options.MaxBytes), which
	// sizes the WAL and paces Compact; 0: no bound.
	MaxBytes int64
}

// Store is the prediction log in one SQLite file. It implements
// predlog.Store.
type Store struct {
	opts Options
	db   *sql.DB
	lock *os.File
	// stmts holds the readers' statements, each parsed once.
	stmts *sqlitedb.Statements

	// mu serialises the writes, which share one connection: WAL lets the
	// readers of the pool run beside it.
	mu     sync.Mutex
	conn   *sql.Conn
	insert *sql.Stmt
	codec  spectrumCodec
	axes   map[[sha256.Size]byte]int64 // digest -> axes.id, a cache of the table
	// axisBytes is the buffer an axis is hashed from.
	axisBytes []byte
	args      []any

	closeOnce sync.Once
	closeErr  error
}

var _ predlog.Store = (*Store)(nil)

// Open opens (creating if needed) the store in dir. A second Open of the
// same directory, in this process or another, fails with ErrLocked until
// the first is closed or its process dies.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	if opts.MaxBytes < 0 {
		return nil, errors.New("sqlitelog: the size bound must not be negative")
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
	s := &Store{opts: opts, db: db, lock: lock, stmts: sqlitedb.NewStatements(db), axes: make(map[[sha256.Size]byte]int64), args: make([]any, 21)}
	if s.conn, err = db.Conn(ctx); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("sqlitelog: writer connection: %w", err)
	}
	if s.insert, err = s.conn.PrepareContext(ctx, insertSQL); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("sqlitelog: prepare insert: %w", err)
	}
	return s, nil
}

// OpenLog opens the store in dir and the prediction log over it
// (predlog.New), with opts.MaxBytes as the store's bound too.
func OpenLog(ctx context.Context, dir string, opts predlog.Options) (*predlog.Writer, error) {
	s, err := Open(ctx, dir, Options{MaxBytes: opts.MaxBytes})
	if err != nil {
		return nil, err
	}
	l, err := predlog.New(ctx, s, opts)
	if err != nil {
		s.Close(ctx)
		return nil, err
	}
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
	// The writes hold one connection; the rest of the pool (sqlitedb's
	// default of 4) serve readers, which WAL lets run beside the writes.
	db, err := sqlitedb.Open(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("sqlitelog: %w", err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close checkpoints the WAL into the database, closes it and releases the
// directory. Calls after the first return its result.
func (s *Store) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closeErr = s.closeFiles()
	})
	return s.closeErr
}

// closeFiles closes what Open opened, in reverse.
func (s *Store) closeFiles() error {
	errs := []error{s.stmts.Close()}
	if s.insert != nil {
		errs = append(errs, s.insert.Close())
	}
	if s.conn != nil {
		errs = append(errs, s.conn.Close())
	}
	if err := sqlitedb.Close(s.db); err != nil {
		errs = append(errs, fmt.Errorf("sqlitelog: close: %w", err))
	}
	if err := s.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("sqlitelog: close: release the lock: %w", err))
	}
	return errors.Join(errs...)
}
