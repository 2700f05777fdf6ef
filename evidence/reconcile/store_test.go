package reconcile_test

import (
	"testing"

	"ramanserve/evidence/reconcile"
	"ramanserve/evidence/reconcile/labstoretest"
)

// TestMemoryStoreContract: the store in memory keeps the contract of the
// embedded one; its storage is the store itself.
func TestMemoryStoreContract(t *testing.T) {
	labstoretest.Run(t, func(t *testing.T) func(t *testing.T) reconcile.LabStore {
		s := &reconcile.MemoryStore{}
		return func(t *testing.T) reconcile.LabStore { return s }
	})
}
