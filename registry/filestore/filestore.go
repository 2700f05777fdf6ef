// Package filestore keeps the model registry's record in a directory:
// the embedded store.IndexStore and store.ArtifactStore of a single
// server.
//
// index.json holds the whole index and is replaced atomically (temp file,
// fsync, rename, fsync of the directory) on every commit. The directory
// is held by one process at a time through an exclusive flock on
// .ramanserve.lock, taken by Open before anything is read: with a single
// writer, the store's revision is a counter it keeps in memory, and a
// compare-and-swap is a comparison with it under the store's mutex
// followed by the atomic write. The artifacts are the files in models/
// (see artifacts.go).
package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"ramanserve/platform/atomicfile"
	"ramanserve/registry/store"
)

// Store is the file store of one registry directory. It is safe for
// concurrent use.
type Store struct {
	dir string

	mu   sync.Mutex     // serializes commits and guards rev and lock
	rev  store.Revision // the revision of index.json as this store last read or wrote it
	lock *dirLock       // nil once closed

	// publishMu makes "no file at the name" and the rename that puts one
	// there a single step for the artifact writers and the quarantine.
	publishMu sync.Mutex
}

var (
	_ store.IndexStore    = (*Store)(nil)
	_ store.ArtifactStore = (*Store)(nil)
)

// Open creates dir if needed and takes its exclusive lock without waiting:
// while another process (or another Open in this one) holds it, Open fails
// with ErrLocked, naming the holder's PID, having changed nothing. Open
// reads nothing else; a corrupt index is reported by ReadIndex. Close
// releases the lock.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("registry path %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create registry folder: %w", err)
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: abs, lock: lock}
	// A recorded index (even one that cannot be read) is a first
	// revision; nothing recorded is revision 0.
	if _, state, _ := readIndex(abs); state == indexOK {
		s.rev = 1
	}
	return s, nil
}

// Dir is the registry directory (absolute).
func (s *Store) Dir() string { return s.dir }

// Close releases the directory's lock; it is safe to call twice. The
// store must not be used afterwards.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.lock.release()
	s.lock = nil
	return err
}

var errClosed = errors.New("the registry store is closed")

// ReadIndex reads index.json. A missing or empty file is an empty index;
// one that cannot be trusted is store.ErrIndexCorrupt (and ErrNewerFormat
// when a newer server wrote it), and the file is left as it is.
func (s *Store) ReadIndex(ctx context.Context) (*store.Index, store.Revision, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return nil, 0, errClosed
	}
	ix, _, err := readIndex(s.dir)
	if err != nil {
		return nil, 0, err
	}
	return ix, s.rev, nil
}

// CommitIndex writes next as index.json when base is the current
// revision (see store.IndexStore).
func (s *Store) CommitIndex(ctx context.Context, base store.Revision, next *store.Index) (store.Revision, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := validate(next); err != nil {
		return 0, err
	}
	b, err := encodeIndex(next)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.lock == nil:
		return 0, errClosed
	case base != s.rev:
		return 0, fmt.Errorf("%w: the commit is based on revision %d, the index is at %d", store.ErrConflict, base, s.rev)
	}
	full := filepath.Join(s.dir, IndexFile)
	if err := atomicfile.WriteFile(full, b); err != nil {
		// A failed directory fsync comes after the rename: the new index
		// may be in place though not durable. Then base is no longer the
		// index on disk, and a commit based on it must conflict.
		if now, rerr := os.ReadFile(full); rerr == nil && bytes.Equal(now, b) {
			s.rev++
		}
		return 0, err
	}
	s.rev++
	return s.rev, nil
}

// SetAsideCorruptIndex renames an index.json that ReadIndex refuses as
// corrupt to a free index.json.corrupt-<time>, keeping every byte of it
// for the operator, and returns the new name. The store is then empty,
// at a new revision. An index written by a newer server is never set
// aside (ErrNewerFormat), nor one that reads correctly.
func (s *Store) SetAsideCorruptIndex(now time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return "", errClosed
	}
	_, _, err := readIndex(s.dir)
	switch {
	case err == nil:
		return "", fmt.Errorf("%s is not corrupt; it stays", IndexFile)
	case errors.Is(err, ErrNewerFormat):
		return "", err
	case !errors.Is(err, store.ErrIndexCorrupt):
		return "", err
	}
	base := IndexFile + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	name := base
	for i := 2; exists(filepath.Join(s.dir, name)); i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(filepath.Join(s.dir, IndexFile), filepath.Join(s.dir, name)); err != nil {
		return "", fmt.Errorf("%w: set the corrupt index aside: %w", store.ErrRegistry, err)
	}
	s.rev++
	return name, atomicfile.SyncDir(s.dir)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
