package labstore_test

import (
	"context"
	"testing"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/batches/referencetest"
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

func TestReferenceStoreContract(t *testing.T) {
	referencetest.Run(t, func(t *testing.T) func(t *testing.T) batches.ReferenceStore {
		dir := t.TempDir()
		return func(t *testing.T) batches.ReferenceStore {
			s, err := labstore.Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s.References()
		}
	})
}
