package labstore_test

import (
	"context"
	"testing"

	"ramanserve/evidence/labstore"
	"ramanserve/evidence/reconcile"
	"ramanserve/evidence/reconcile/labstoretest"
)

func TestStoreContract(t *testing.T) {
	labstoretest.Run(t, func(t *testing.T) func(t *testing.T) reconcile.LabStore {
		dir := t.TempDir()
		return func(t *testing.T) reconcile.LabStore {
			s, err := labstore.Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	})
}
