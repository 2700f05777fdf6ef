package storetest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"ramanserve/registry"
	"ramanserve/registry/store"
	"ramanserve/registry/storetest"
)

// memStore keeps the index in memory: the smallest store that meets the
// contract, run here so that the suite itself is checked against a second
// implementation. Reopen hands the same record to a new store value.
type memStore struct{ rec *record }

type record struct {
	mu  sync.Mutex
	ix  *store.Index
	rev store.Revision
}

func (s memStore) ReadIndex(ctx context.Context) (*store.Index, store.Revision, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return s.rec.ix.Clone(), s.rec.rev, nil
}

func (s memStore) CommitIndex(ctx context.Context, base store.Revision, next *store.Index) (store.Revision, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := next.Validate(); err != nil {
		return 0, err
	}
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if base != s.rec.rev {
		return 0, fmt.Errorf("%w: based on %d, at %d", store.ErrConflict, base, s.rec.rev)
	}
	s.rec.ix, s.rec.rev = next.Clone(), s.rec.rev+1
	return s.rec.rev, nil
}

func TestMemoryStoreMeetsTheContract(t *testing.T) {
	storetest.Run(t, storetest.Opener{
		New: func(*testing.T) registry.IndexStore {
			return memStore{rec: &record{ix: store.NewIndex()}}
		},
		Reopen: func(_ *testing.T, s registry.IndexStore) registry.IndexStore {
			return memStore{rec: s.(memStore).rec}
		},
	})
}
