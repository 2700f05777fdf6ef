package predlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrNewerSchema means the database was written by a newer server, whose
// schema this one does not know; it is left untouched.
var ErrNewerSchema = errors.New("predlog: the prediction log has a newer schema than this server knows")

// migrations[i] takes the schema from version i to i+1. Append only: a
// released migration is never edited.
//
// Times are Unix nanoseconds (UTC). Optional numbers and unknown analytes
// are NULL. The indexes serve the queries of the issue: ts for time ranges,
// age retention and the oldest-first trim; (batch_id, ts) for a batch's
// export and the nearest prediction to a lab sample; (batch_id, scan_seq)
// for a lab sample named by its scan; (model_version, ts) for a model's
// performance; prediction_id for the active + shadow + rescore records of
// one spectrum. Each index includes the rowid, the keyset tiebreaker.
var migrations = []string{
	`CREATE TABLE axes (
		id     INTEGER PRIMARY KEY,
		digest BLOB NOT NULL UNIQUE,
		data   BLOB NOT NULL
	);
	CREATE TABLE predictions (
		id             INTEGER PRIMARY KEY,
		prediction_id  BLOB    NOT NULL,
		ts             INTEGER NOT NULL,
		model_version  TEXT    NOT NULL,
		role           INTEGER NOT NULL,
		epa REAL, dha REAL, dpa REAL,
		epa_conf REAL, dha_conf REAL, dpa_conf REAL,
		reduced_t2     REAL,
		reduced_q      REAL,
		batch_id       TEXT,
		port           TEXT,
		column_index   REAL,
		scan_seq       REAL,
		channel        REAL,
		integration_ms REAL,
		axis_id        INTEGER,
		spectrum       BLOB
	);
	CREATE INDEX predictions_ts ON predictions (ts);
	CREATE INDEX predictions_batch_ts ON predictions (batch_id, ts);
	CREATE INDEX predictions_batch_seq ON predictions (batch_id, scan_seq);
	CREATE INDEX predictions_model_ts ON predictions (model_version, ts);
	CREATE INDEX predictions_prediction ON predictions (prediction_id);`,
}

// migrate brings the schema to len(migrations), each step in its own
// transaction together with the version it reaches.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("predlog: create schema_version: %w", err)
	}
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("predlog: migrate: %w", err)
		}
		done, err := migrateStep(ctx, tx)
		if err != nil {
			tx.Rollback()
			return err
		}
		if done {
			return tx.Rollback()
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("predlog: migrate: %w", err)
		}
	}
}

// migrateStep applies the next migration, or reports done.
func migrateStep(ctx context.Context, tx *sql.Tx) (done bool, err error) {
	var version int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return false, fmt.Errorf("predlog: migrate: %w", err)
		}
	case err != nil:
		return false, fmt.Errorf("predlog: read the schema version: %w", err)
	}
	if version > len(migrations) {
		return false, fmt.Errorf("%w (version %d, this server knows %d)", ErrNewerSchema, version, len(migrations))
	}
	if version == len(migrations) {
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
		return false, fmt.Errorf("predlog: migrate to schema %d: %w", version+1, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, version+1); err != nil {
		return false, fmt.Errorf("predlog: migrate to schema %d: %w", version+1, err)
	}
	return false, nil
}
