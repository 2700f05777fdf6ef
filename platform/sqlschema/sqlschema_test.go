package sqlschema_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"ramanserve/platform/sqlitedb"
	"ramanserve/platform/sqlschema"
)

var errNewer = errors.New("test: newer schema")

// The DDL of the test schema's two versions, as the loop before goose ran
// them.
const (
	v1DDL = `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE applied (migration INTEGER NOT NULL);`
	// v2 only adds a row: a data migration, which nothing would stop from
	// running twice but the version check in its transaction.
	v2DDL = `INSERT INTO applied (migration) VALUES (2);`
)

// migrations is the test schema's first n migrations in goose's format.
func migrations(n int) fstest.MapFS {
	all := []struct{ name, up string }{
		{"00001_notes.sql", v1DDL},
		{"00002_applied.sql", v2DDL},
	}
	fsys := fstest.MapFS{}
	for _, m := range all[:n] {
		fsys[m.name] = &fstest.MapFile{Data: []byte("-- +goose Up\n" + m.up + "\n")}
	}
	return fsys
}

func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(context.Background(), path, sqlitedb.Options{Synchronous: sqlitedb.Full})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func closeDB(t *testing.T, db *sql.DB) {
	t.Helper()
	if err := sqlitedb.Close(db); err != nil {
		t.Fatal(err)
	}
}

func migrate(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	if err := sqlschema.Migrate(context.Background(), db, migrations(n), errNewer); err != nil {
		t.Fatalf("migrate to %d: %v", n, err)
	}
}

// gooseVersions lists the versions goose's table records, in order.
func gooseVersions(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	rows, err := db.Query(`SELECT version_id FROM goose_db_version ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func queryInt(t *testing.T, db *sql.DB, query string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// checkAtVersion2 checks a file migrated to the test schema's newest
// version: goose has 0, 1, 2 once each, schema_version mirrors it, and
// the data migration ran once.
func checkAtVersion2(t *testing.T, db *sql.DB) {
	t.Helper()
	if got := gooseVersions(t, db); !slices.Equal(got, []int64{0, 1, 2}) {
		t.Errorf("goose versions %v, want [0 1 2]", got)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM schema_version`); got != 1 {
		t.Errorf("schema_version has %d rows, want 1", got)
	}
	if got := queryInt(t, db, `SELECT version FROM schema_version`); got != 2 {
		t.Errorf("schema_version %d, want 2 (the mirror of goose's)", got)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM applied`); got != 1 {
		t.Errorf("the data migration ran %d times", got)
	}
}

func TestFreshFileGetsAllMigrations(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "x.db"))
	migrate(t, db, 2)
	checkAtVersion2(t, db)
	// Again: nothing to do.
	migrate(t, db, 2)
	checkAtVersion2(t, db)
}

func TestMigratesStepByStep(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "x.db"))
	migrate(t, db, 1)
	if got := queryInt(t, db, `SELECT version FROM schema_version`); got != 1 {
		t.Fatalf("schema_version %d after one migration", got)
	}
	migrate(t, db, 2)
	checkAtVersion2(t, db)
}

// writeLegacyFile makes a file as the migration loop before goose left it
// at version: the tables of the migrations up to version, and
// schema_version. Version 0 is the file of a loop that crashed after
// creating schema_version, before its first migration.
func writeLegacyFile(t *testing.T, path string, version int) {
	t.Helper()
	db := openDB(t, path)
	stmts := []string{`CREATE TABLE schema_version (version INTEGER NOT NULL)`}
	if version >= 1 {
		stmts = append(stmts, v1DDL,
			`INSERT INTO notes (body) VALUES ('kept 1'), ('kept 2')`,
			fmt.Sprintf(`INSERT INTO schema_version (version) VALUES (%d)`, version))
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	closeDB(t, db)
}

func TestAdoptsLegacyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	writeLegacyFile(t, path, 1)
	db := openDB(t, path)
	// Migration 1 would fail on the table notes had goose run it.
	migrate(t, db, 2)
	checkAtVersion2(t, db)
	if got := queryInt(t, db, `SELECT count(*) FROM notes`); got != 2 {
		t.Fatalf("%d notes after adoption, want the 2 written before", got)
	}
}

func TestAdoptsLegacyFileAtItsNewestVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	writeLegacyFile(t, path, 1)
	db := openDB(t, path)
	migrate(t, db, 1)
	if got := gooseVersions(t, db); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("goose versions %v, want [0 1]", got)
	}
	if got := queryInt(t, db, `SELECT version FROM schema_version`); got != 1 {
		t.Fatalf("schema_version %d, want 1", got)
	}
}

func TestAdoptsLegacyFileAtVersion0(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	writeLegacyFile(t, path, 0)
	db := openDB(t, path)
	migrate(t, db, 2)
	checkAtVersion2(t, db)
}

// fileBytes reads the database file, which sqlitedb.Close leaves whole
// (WAL checkpointed).
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkRefusedUnchanged checks that a build knowing only the first
// migration refuses the file at path with errNewer and leaves its bytes.
func checkRefusedUnchanged(t *testing.T, path string) {
	t.Helper()
	before := fileBytes(t, path)
	db := openDB(t, path)
	err := sqlschema.Migrate(context.Background(), db, migrations(1), errNewer)
	if !errors.Is(err, errNewer) {
		t.Fatalf("migrate with one migration: %v, want errNewer", err)
	}
	t.Log(err)
	closeDB(t, db)
	if !bytes.Equal(before, fileBytes(t, path)) {
		t.Fatal("the refused file changed")
	}
}

func TestNewerGooseVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db := openDB(t, path)
	migrate(t, db, 2)
	closeDB(t, db)
	checkRefusedUnchanged(t, path)
}

func TestNewerLegacyVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	writeLegacyFile(t, path, 2)
	checkRefusedUnchanged(t, path)
	db := openDB(t, path)
	if got := queryInt(t, db, `SELECT count(*) FROM sqlite_master WHERE name = 'goose_db_version'`); got != 0 {
		t.Fatal("the refused legacy file was adopted")
	}
}

// TestConcurrentFirstOpens: connections (as processes would, each its own
// pool) migrate one file at once; the migrations run once.
func TestConcurrentFirstOpens(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			if legacy {
				writeLegacyFile(t, path, 1)
			}
			const openers = 8
			dbs := make([]*sql.DB, openers)
			for i := range dbs {
				dbs[i] = openDB(t, path)
			}
			errs := make([]error, openers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, db := range dbs {
				wg.Go(func() {
					<-start
					errs[i] = sqlschema.Migrate(context.Background(), db, migrations(2), errNewer)
				})
			}
			close(start)
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			checkAtVersion2(t, dbs[0])
		})
	}
}

func TestVersionsMustCountFrom1(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "x.db"))
	fsys := fstest.MapFS{"00002_gap.sql": {Data: []byte("-- +goose Up\n" + v1DDL + "\n")}}
	if err := sqlschema.Migrate(context.Background(), db, fsys, errNewer); err == nil {
		t.Fatal("a migration set starting at version 2 was taken")
	}
}
