// Package sqlschema migrates the schema of the server's SQLite files (the
// prediction log, the lab results): a table schema_version holds how many
// of a file's migrations have run, and each migration runs in its own
// transaction together with the version it reaches, so a crash leaves the
// file at one version or the next, never between.
package sqlschema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Migrate runs the migrations db has not had yet, in order. A file whose
// version is beyond len(migrations) (written by a newer server) is left
// untouched, and Migrate returns an error wrapping newer.
func Migrate(ctx context.Context, db *sql.DB, migrations []string, newer error) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	for {
		done, err := step(ctx, db, migrations, newer)
		if err != nil || done {
			return err
		}
	}
}

// step applies the next migration in one transaction, or reports done.
func step(ctx context.Context, db *sql.DB, migrations []string, newer error) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	var version int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return false, fmt.Errorf("migrate: %w", err)
		}
	case err != nil:
		return false, fmt.Errorf("read the schema version: %w", err)
	}
	if version > len(migrations) {
		return false, fmt.Errorf("%w (version %d, this server knows %d)", newer, version, len(migrations))
	}
	if version == len(migrations) {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("migrate to schema %d: %w", version+1, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, version+1); err != nil {
		return false, fmt.Errorf("migrate to schema %d: %w", version+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to schema %d: %w", version+1, err)
	}
	return false, nil
}
