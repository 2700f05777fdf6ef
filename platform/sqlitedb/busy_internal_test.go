package sqlitedb

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestIsBusyOnALockedFile: a write refused by another connection's
// exclusive lock is recognised as SQLITE_BUSY (the code Open retries on).
func TestIsBusyOnALockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := Open(context.Background(), path, Options{Synchronous: Full})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, _ := db.Conn(context.Background())
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	other, _ := sql.Open("sqlite", path+"?_busy_timeout=0")
	defer other.Close()
	_, err = other.Exec(`CREATE TABLE t (x)`)
	if !isBusy(err) {
		t.Fatalf("%v is not busy", err)
	}
}
