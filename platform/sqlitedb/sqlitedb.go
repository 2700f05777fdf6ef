// Package sqlitedb opens the server's embedded SQLite files (the
// prediction log, the lab results) the one way they are all opened: WAL
// mode, a stated synchronous level, a busy timeout, write transactions
// that take the write lock at BEGIN, and the pragmas checked after the
// open, since SQLite ignores a pragma it cannot apply instead of failing.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	// modernc.org/sqlite is SQLite translated to Go: no cgo, so the server
	// stays one static binary cross-compiled like the rest, and the race
	// detector and fuzzing see the whole store. It is the most used pure-Go
	// SQLite and tracks upstream SQLite releases. It is slower than the C
	// library; the stores hide that behind batching or rare writes. The
	// version is pinned in go.mod.
	_ "modernc.org/sqlite"
)

// Synchronous is SQLite's synchronous level in WAL mode.
type Synchronous int

const (
	// Normal appends a commit to the WAL without fsync; the WAL is
	// fsynced at checkpoints. A process crash loses nothing committed; an
	// OS crash or power loss may lose the commits since the last
	// checkpoint, and the file stays consistent.
	Normal Synchronous = 1
	// Full fsyncs the WAL at every commit: a commit survives power loss.
	Full Synchronous = 2
)

func (s Synchronous) String() string {
	switch s {
	case Normal:
		return "NORMAL"
	case Full:
		return "FULL"
	}
	return fmt.Sprintf("Synchronous(%d)", int(s))
}

// DefaultBusyTimeout is how long a write waits for another connection's
// (or process's) transaction before it fails, unless Options say.
const DefaultBusyTimeout = 5 * time.Second

// DefaultMaxOpenConns bounds the pool unless Options say.
const DefaultMaxOpenConns = 4

// Options say how to open a database. Zero values of the size pragmas
// leave SQLite's defaults.
type Options struct {
	// Synchronous is required: a store states its durability.
	Synchronous Synchronous
	// BusyTimeout: DefaultBusyTimeout when 0.
	BusyTimeout time.Duration
	// IncrementalVacuum sets auto_vacuum=INCREMENTAL. It takes effect
	// only on a new, empty file, and does nothing on an existing one.
	// (The driver applies auto_vacuum before any other pragma, which fixes
	// the page size: files keep SQLite's default of 4096 bytes.)
	IncrementalVacuum bool
	// JournalSizeLimit is the size in bytes the WAL is truncated back to
	// after a checkpoint.
	JournalSizeLimit int64
	// WALAutocheckpoint is the WAL size in pages that triggers a
	// checkpoint.
	WALAutocheckpoint int64
	// MaxOpenConns bounds the pool (DefaultMaxOpenConns when 0); idle
	// connections are kept, each with its pragmas applied.
	MaxOpenConns int
}

// Open opens, creating it if needed, the database file at path with opts'
// pragmas on every connection, and checks that WAL mode and the
// synchronous level took.
func Open(ctx context.Context, path string, opts Options) (*sql.DB, error) {
	if opts.Synchronous != Normal && opts.Synchronous != Full {
		return nil, fmt.Errorf("open %s: synchronous level %v is neither NORMAL nor FULL", path, opts.Synchronous)
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("the path %q contains ? or #, which SQLite's file name parsing would cut", path)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	conns := opts.MaxOpenConns
	if conns <= 0 {
		conns = DefaultMaxOpenConns
	}
	// The driver applies its shorthand keys in a fixed order (busy
	// timeout, auto_vacuum, the _pragma list sorted by name, journal mode,
	// synchronous), whatever their order here: auto_vacuum runs before
	// the switch to WAL, as it must.
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	if opts.IncrementalVacuum {
		q.Set("_auto_vacuum", "INCREMENTAL")
	}
	if opts.JournalSizeLimit != 0 {
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", opts.JournalSizeLimit))
	}
	if opts.WALAutocheckpoint != 0 {
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", opts.WALAutocheckpoint))
	}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", opts.Synchronous.String())
	// BEGIN takes the write lock: a transaction that reads then writes
	// never fails half-way on another writer's lock.
	q.Set("_txlock", "immediate")
	dsn := path + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	if err := checkWithin(ctx, db, path, opts.Synchronous, busy); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// checkWithin runs check, again while it fails with SQLITE_BUSY, for at
// most the busy timeout. The first connection to a new file switches it
// to WAL, which needs the file's exclusive lock; SQLite answers that
// switch SQLITE_BUSY at once, without its busy handler, while another
// process or pool opens the same new file. A connection that failed is
// not kept, so the next try opens a fresh one.
func checkWithin(ctx context.Context, db *sql.DB, path string, want Synchronous, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err := check(ctx, db, path, want)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (primary code 5).
func isBusy(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && coded.Code()&0xff == 5
}

// check verifies that WAL mode and the synchronous level took.
func check(ctx context.Context, db *sql.DB, path string, want Synchronous) error {
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if mode != "wal" {
		return fmt.Errorf("%s is in journal mode %q, not wal", path, mode)
	}
	var sync int
	if err := db.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if Synchronous(sync) != want {
		return fmt.Errorf("%s: synchronous is %d, not %v (%d)", path, sync, want, int(want))
	}
	return nil
}

// Close checkpoints the WAL into the database, truncating it, and closes
// db, so that a closed database is one file.
func Close(db *sql.DB) error {
	_, errCkpt := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	if errCkpt != nil {
		errCkpt = fmt.Errorf("checkpoint: %w", errCkpt)
	}
	return errors.Join(errCkpt, db.Close())
}
