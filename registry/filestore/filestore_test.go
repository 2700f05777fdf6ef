package filestore_test

import (
	"testing"

	"ramanserve/registry"
	"ramanserve/registry/filestore"
	"ramanserve/registry/storetest"
)

func TestStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Opener{
		New: func(t *testing.T) registry.IndexStore {
			return open(t, t.TempDir())
		},
		Reopen: func(t *testing.T, s registry.IndexStore) registry.IndexStore {
			files := s.(*filestore.Store)
			if err := files.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return open(t, files.Dir())
		},
	})
}

func open(t *testing.T, dir string) *filestore.Store {
	t.Helper()
	s, err := filestore.Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
