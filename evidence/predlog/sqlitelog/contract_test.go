package sqlitelog_test

import (
	"context"
	"testing"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/evidence/predlog/sqlitelog"
)

func TestStoreContract(t *testing.T) {
	predlogtest.Run(t, func(t *testing.T) func(t *testing.T) predlog.Store {
		dir := t.TempDir()
		return func(t *testing.T) predlog.Store {
			s, err := sqlitelog.Open(context.Background(), dir, sqlitelog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
