package sqlschema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// legacyTable is where servers from before goose kept a file's version:
// one row, the number of migrations run. Their migration loop refuses a
// file whose version is beyond its migrations, and runs those after it.
const legacyTable = "schema_version"

// versionTable is goose's own table of applied versions; its default
// name, so that the goose command reads a file as it is.
const versionTable = goose.DefaultTablename

// errAppliedMeanwhile means a migration's version was recorded by another
// opener while this one ran the migration; its transaction rolls back.
var errAppliedMeanwhile = errors.New("another process applied the migration meanwhile")

// versionStore is goose's SQLite store of applied versions with two
// additions, both written in the transaction of the version row goose
// adds or removes:
//
//   - Insert refuses a version already recorded, which makes a migration
//     run once when openers race (see Migrate);
//   - schema_version is kept equal to goose's newest version.
//
// Why keep schema_version at all: a server from before goose reads only
// it. Were it dropped, such a server would take the file for a new one
// and fail on its first CREATE TABLE with a message about a table that
// exists; were it left at the version adopted, that server would run
// against a schema it does not know once this one migrated further. Kept
// equal, the older server runs on a file whose schema it knows and
// refuses, with its own "newer schema" error, one migrated beyond it, so
// rolling a release back is safe either way.
type versionStore struct{ database.Store }

func newVersionStore() (versionStore, error) {
	s, err := database.NewStore(database.DialectSQLite3, versionTable)
	if err != nil {
		return versionStore{}, err
	}
	return versionStore{s}, nil
}

// Insert records version as applied, unless it already is, and mirrors
// the newest version into schema_version.
func (s versionStore) Insert(ctx context.Context, db database.DBTxConn, req database.InsertRequest) error {
	applied, err := s.applied(ctx, db, req.Version)
	if err != nil {
		return err
	}
	if applied {
		return fmt.Errorf("version %d: %w", req.Version, errAppliedMeanwhile)
	}
	if err := s.Store.Insert(ctx, db, req); err != nil {
		return err
	}
	return s.mirror(ctx, db)
}

// Delete records version as rolled back, and mirrors the newest version
// left into schema_version. (The server never migrates down; goose's
// tools might.)
func (s versionStore) Delete(ctx context.Context, db database.DBTxConn, version int64) error {
	if err := s.Store.Delete(ctx, db, version); err != nil {
		return err
	}
	return s.mirror(ctx, db)
}

// TableExists tells goose whether its table exists; without it goose
// probes by querying the table and reading the failure.
func (s versionStore) TableExists(ctx context.Context, db database.DBTxConn) (bool, error) {
	return tableExists(ctx, db, s.Tablename())
}

// applied reports whether version is recorded as applied.
func (s versionStore) applied(ctx context.Context, db database.DBTxConn, version int64) (bool, error) {
	m, err := s.GetMigration(ctx, db, version)
	switch {
	case errors.Is(err, database.ErrVersionNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return m.IsApplied, nil
}

// mirror sets schema_version, creating it on a new file, to goose's
// newest applied version.
func (s versionStore) mirror(ctx context.Context, db database.DBTxConn) error {
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS ` + legacyTable + ` (version INTEGER NOT NULL)`,
		`DELETE FROM ` + legacyTable,
		`INSERT INTO ` + legacyTable + ` (version) SELECT COALESCE(MAX(version_id), 0) FROM ` + s.Tablename(),
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("mirror the version into %s: %w", legacyTable, err)
		}
	}
	return nil
}

// fileVersion is the schema version of the file: the higher of goose's
// newest version and schema_version (0 for a new file). Both count, so
// that a file is refused whichever record says it is newer.
func (s versionStore) fileVersion(ctx context.Context, db database.DBTxConn) (int64, error) {
	var version int64
	hasGoose, err := tableExists(ctx, db, s.Tablename())
	if err != nil {
		return 0, err
	}
	if hasGoose {
		version, err = s.GetLatestVersion(ctx, db)
		if err != nil && !errors.Is(err, database.ErrVersionNotFound) {
			return 0, err
		}
	}
	legacy, err := legacyVersion(ctx, db)
	return max(version, legacy), err
}

// initVersionTable creates goose's table on a file that lacks it, in one
// write transaction, before goose runs:
//
//   - on a file written before goose (it has schema_version), with
//     versions 0 to schema_version's recorded as applied (adoption), so
//     that goose then applies only the migrations after them; one whose
//     schema_version is beyond target is refused and left as it is;
//   - on a new file, with version 0 (and schema_version 0), as goose
//     would.
//
// Openers racing on one file are serialised by the transaction: the
// first creates the table, the others find it. (Left to goose, the
// others would fail to create it and retry after a second.)
func initVersionTable(ctx context.Context, db *sql.DB, store versionStore, target int64, newer error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create the version table: %w", err)
	}
	defer tx.Rollback()
	hasGoose, err := tableExists(ctx, tx, store.Tablename())
	if err != nil || hasGoose {
		return err
	}
	version, err := legacyVersion(ctx, tx)
	if err != nil {
		return err
	}
	if version > target {
		return NewerError(newer, version, target)
	}
	if err := recordApplied(ctx, tx, store, version); err != nil {
		return fmt.Errorf("create the version table at version %d: %w", version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create the version table at version %d: %w", version, err)
	}
	return nil
}

// recordApplied creates goose's table with versions 0 to version
// recorded as applied, and schema_version saying version.
func recordApplied(ctx context.Context, tx *sql.Tx, store versionStore, version int64) error {
	if err := store.CreateVersionTable(ctx, tx); err != nil {
		return err
	}
	for v := range version + 1 {
		if err := store.Store.Insert(ctx, tx, database.InsertRequest{Version: v}); err != nil {
			return err
		}
	}
	return store.mirror(ctx, tx)
}

// legacyVersion reads schema_version: 0 when the table is absent or empty
// (the old loop created the table, then wrote version 0 with the first
// migration).
func legacyVersion(ctx context.Context, db database.DBTxConn) (int64, error) {
	exists, err := tableExists(ctx, db, legacyTable)
	if err != nil || !exists {
		return 0, err
	}
	var version int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+legacyTable).Scan(&version); err != nil {
		return 0, fmt.Errorf("read %s: %w", legacyTable, err)
	}
	return version, nil
}

// tableExists reports whether the file has a table named name.
func tableExists(ctx context.Context, db database.DBTxConn, name string) (bool, error) {
	var exists bool
	err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, name).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("look for the table %s: %w", name, err)
	}
	return exists, nil
}
