package sqlitedb_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"ramanserve/platform/sqlitedb"
)

// TestStatementsAnswerAsUnprepared: queries through the set answer what
// the database answers, from many goroutines at once, past the bound of
// kept statements too, and fail once the set is closed.
func TestStatementsAnswerAsUnprepared(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlitedb.Options{Synchronous: sqlitedb.Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := sqlitedb.NewStatements(db)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 300 texts: more than the set keeps.
			for i := range 300 {
				q := fmt.Sprintf("SELECT ? + %d", i%300)
				rows, err := st.QueryContext(ctx, q, g)
				if err != nil {
					t.Error(err)
					return
				}
				var got int
				for rows.Next() {
					if err := rows.Scan(&got); err != nil {
						t.Error(err)
					}
				}
				rows.Close()
				if got != g+i {
					t.Errorf("%s with %d: %d, want %d", q, g, got, g+i)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.QueryContext(ctx, "SELECT 1"); err == nil {
		t.Fatal("a query after Close succeeded")
	}
}
