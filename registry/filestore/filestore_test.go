package filestore_test

import (
	"os"
	"path/filepath"
	"testing"

	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
	"ramanserve/registry/storetest"
)

func TestStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Opener{
		New: func(t *testing.T) store.IndexStore {
			return open(t, t.TempDir())
		},
		Reopen: func(t *testing.T, s store.IndexStore) store.IndexStore {
			return reopen(t, s.(*filestore.Store))
		},
		NewArtifacts: func(t *testing.T) store.ArtifactStore {
			return open(t, t.TempDir())
		},
		ReopenArtifacts: func(t *testing.T, s store.ArtifactStore) store.ArtifactStore {
			return reopen(t, s.(*filestore.Store))
		},
		Corrupt: corrupt,
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

func reopen(t *testing.T, s *filestore.Store) *filestore.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return open(t, s.Dir())
}

// corrupt flips a byte of the artifact's file in place, as a failing disk
// does: same file, same size, other content.
func corrupt(t *testing.T, s store.ArtifactStore, name string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(s.(*filestore.Store).Dir(), filepath.FromSlash(name)), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("corrupt: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		t.Fatalf("corrupt: no content at %s (%v)", name, err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, st.Size()/2); err != nil {
		t.Fatal(err)
	}
}
