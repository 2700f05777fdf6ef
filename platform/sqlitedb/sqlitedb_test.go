package sqlitedb_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"ramanserve/platform/sqlitedb"
)

func TestOpenAppliesAndChecksThePragmas(t *testing.T) {
	ctx := context.Background()
	for _, level := range []sqlitedb.Synchronous{sqlitedb.Normal, sqlitedb.Full} {
		t.Run(level.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			db, err := sqlitedb.Open(ctx, path, sqlitedb.Options{Synchronous: level, IncrementalVacuum: true, JournalSizeLimit: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `CREATE TABLE t (x)`); err != nil {
				t.Fatal(err)
			}
			for pragma, want := range map[string]int64{"synchronous": int64(level), "page_size": 4096, "auto_vacuum": 2, "journal_size_limit": 1 << 20, "busy_timeout": 5000} {
				var got int64
				if err := db.QueryRowContext(ctx, `PRAGMA `+pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s = %d, want %d", pragma, got, want)
				}
			}
			if err := sqlitedb.Close(db); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(path + "-wal"); err == nil && st.Size() != 0 {
				t.Errorf("the WAL holds %d bytes after Close; a closed database is one file", st.Size())
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, c := range map[string]struct {
		path string
		opts sqlitedb.Options
	}{
		"no synchronous level": {filepath.Join(dir, "a.db"), sqlitedb.Options{}},
		"a ? in the path":      {filepath.Join(dir, "a?b.db"), sqlitedb.Options{Synchronous: sqlitedb.Full}},
		"a # in the path":      {filepath.Join(dir, "a#b.db"), sqlitedb.Options{Synchronous: sqlitedb.Full}},
		"a missing folder":     {filepath.Join(dir, "none", "a.db"), sqlitedb.Options{Synchronous: sqlitedb.Full}},
	} {
		if db, err := sqlitedb.Open(ctx, c.path, c.opts); err == nil {
			db.Close()
			t.Errorf("%s: opened", name)
		}
	}
}
