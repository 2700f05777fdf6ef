package labstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations[i] takes the schema from version i to i+1. Append only: a
// released migration is never edited.
//
// One row per lab_sample_id. Times of spectra are Unix nanoseconds (UTC),
// as in the prediction log; sampled_at is RFC 3339 text as the lab gave
// it (it is kept, never queried). Absent values are NULL. The partial
// index serves Range: matched results by spectrum time, then id.
var migrations = []string{
	`CREATE TABLE lab_results (
		lab_sample_id TEXT    NOT NULL PRIMARY KEY,
		batch_id      TEXT    NOT NULL,
		scan_seq      INTEGER,
		sampled_at    TEXT,
		epa REAL, dha REAL, dpa REAL,
		matched       INTEGER NOT NULL,
		prediction_id BLOB,
		spectrum_ts   INTEGER,
		reason        TEXT    NOT NULL,
		CHECK (matched IN (0, 1)),
		CHECK (matched = 0 OR (prediction_id IS NOT NULL AND spectrum_ts IS NOT NULL))
	);
	CREATE INDEX lab_results_spectrum ON lab_results (spectrum_ts, lab_sample_id) WHERE matched = 1;`,
}

// migrate brings the schema to len(migrations), each step in its own
// transaction together with the version it reaches.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("labstore: create schema_version: %w", err)
	}
	for {
		done, err := migrateStep(ctx, db)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration in one transaction, or reports
// done.
func migrateStep(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("labstore: migrate: %w", err)
	}
	defer tx.Rollback()
	var version int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return false, fmt.Errorf("labstore: migrate: %w", err)
		}
	case err != nil:
		return false, fmt.Errorf("labstore: read the schema version: %w", err)
	}
	if version > len(migrations) {
		return false, fmt.Errorf("%w (version %d, this server knows %d)", ErrNewerSchema, version, len(migrations))
	}
	if version == len(migrations) {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("labstore: migrate to schema %d: %w", version+1, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, version+1); err != nil {
		return false, fmt.Errorf("labstore: migrate to schema %d: %w", version+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("labstore: migrate to schema %d: %w", version+1, err)
	}
	return false, nil
}
