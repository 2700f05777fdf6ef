// Package sqlschema migrates the schema of the server's SQLite files (the
// prediction log, the lab results) with goose: each store embeds its
// migrations as goose .sql files, and Migrate applies those a file has
// not had yet, each in its own transaction together with the version row
// it adds, so a crash leaves the file at one version or the next.
//
// Migrate adds to goose's provider, the same way for every store:
//
//   - adoption of files written before goose (versions.go): their version
//     is the one row of the table schema_version, which Migrate carries
//     into goose's table once;
//   - the legacy mirror (versions.go): schema_version keeps following
//     goose's version, so that a server from before goose still refuses a
//     file migrated beyond what it knows;
//   - exactly-once migration when processes open one file at once (see
//     Migrate);
//   - the refusal of a file whose schema is newer than this build's
//     migrations, before anything in it changes.
package sqlschema

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// Migrate brings db's schema up to the newest migration in migrations
// (goose .sql files at its root, named NNNNN_name.sql, numbered 1, 2,
// 3... as the versions of schema_version were). A file whose version is
// beyond them (written by a newer server) is left untouched, and Migrate
// returns an error wrapping newer.
//
// Processes (or pools) that open one file at once migrate it once. Goose
// v3.29 has no lock for SQLite, and the file lock SQLite itself offers
// (locking_mode EXCLUSIVE) deadlocks waiters that each keep a read lock.
// Instead every write is checked inside its own write transaction, which
// SQLite serialises: goose's table is created (or adopted) by whichever
// opener comes first, and each migration's transaction refuses to record
// a version already recorded, so the migration of an opener that lost
// the race rolls back whole, its effects with it. That opener then finds
// the version applied and carries on from there. db should begin its
// transactions IMMEDIATE, as package sqlitedb's do, so that an opener
// waits for another's write lock (up to the busy timeout) rather than
// fails on a snapshot another wrote past.
func Migrate(ctx context.Context, db *sql.DB, migrations fs.FS, newer error) error {
	target, err := checkMigrations(migrations)
	if err != nil {
		return err
	}
	store, err := newVersionStore()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectCustom, db, migrations,
		goose.WithStore(store),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("load the migrations: %w", err)
	}
	if err := initVersionTable(ctx, db, store, target, newer); err != nil {
		return err
	}
	if err := refuseNewer(ctx, db, store, target, newer); err != nil {
		return err
	}
	return upOnce(ctx, p, db, store, target)
}

// checkMigrations checks that the migrations are numbered 1, 2, 3...
// (the numbers schema_version counted, which adoption takes as goose
// versions) and that each runs in a transaction (which is what makes it
// run once), and returns the newest version.
func checkMigrations(migrations fs.FS) (newest int64, err error) {
	names, err := fs.Glob(migrations, "*.sql")
	if err != nil {
		return 0, err
	}
	for i, name := range names {
		version, err := goose.NumericComponent(name)
		if err != nil {
			return 0, fmt.Errorf("the migration %s: %w", name, err)
		}
		if version != int64(i+1) {
			return 0, fmt.Errorf("the migration %s has version %d, not %d: versions count 1, 2, 3... with no gap", name, version, i+1)
		}
		text, err := fs.ReadFile(migrations, name)
		if err != nil {
			return 0, err
		}
		if bytes.Contains(text, []byte("+goose NO TRANSACTION")) {
			return 0, fmt.Errorf("the migration %s runs outside a transaction, which could run it twice", name)
		}
	}
	return int64(len(names)), nil
}

// refuseNewer returns an error wrapping newer when db's schema is beyond
// target. It only reads: the check comes before anything is written,
// which leaves a newer server's file as it was.
func refuseNewer(ctx context.Context, db *sql.DB, store versionStore, target int64, newer error) error {
	current, err := store.fileVersion(ctx, db)
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if current > target {
		return NewerError(newer, current, target)
	}
	return nil
}

// upOnce applies the pending migrations. A migration another opener
// applied meanwhile fails here (its transaction rolled back): upOnce then
// starts over from the versions now recorded. Each start over follows a
// migration applied by someone, so there are at most target of them.
func upOnce(ctx context.Context, p *goose.Provider, db *sql.DB, store versionStore, target int64) error {
	for attempt := int64(0); ; attempt++ {
		_, err := p.Up(ctx)
		if err == nil {
			return nil
		}
		if attempt < target {
			appliedMeanwhile, checkErr := appliedByAnother(ctx, db, store, err)
			if checkErr != nil {
				return errors.Join(fmt.Errorf("migrate the schema: %w", err), checkErr)
			}
			if appliedMeanwhile {
				continue
			}
		}
		return fmt.Errorf("migrate the schema: %w", err)
	}
}

// appliedByAnother reports whether the migration whose failure err
// reports is now recorded as applied: another opener applied it.
func appliedByAnother(ctx context.Context, db *sql.DB, store versionStore, err error) (bool, error) {
	var partial *goose.PartialError
	if !errors.As(err, &partial) {
		return false, nil
	}
	return store.applied(ctx, db, partial.Failed.Source.Version)
}

// NewerError is the refusal of a schema at version current by a build
// whose newest migration is target: it wraps newer, the store's own
// sentinel, and tells the operator what to do. The PostgreSQL store
// (package pgdb) refuses with it too, so that every store says it alike.
func NewerError(newer error, current, target int64) error {
	return fmt.Errorf("%w (schema version %d, this server knows up to %d): upgrade the server", newer, current, target)
}
