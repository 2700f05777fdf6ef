package pgstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/platform/pgtest"
	"ramanserve/registry/pgstore"
	"ramanserve/registry/store"
	"ramanserve/registry/storetest"
)

// openedStores remembers which database and pool each store of the contract
// runs on, so that Reopen can restart it and Corrupt can reach behind it.
type openedStores struct {
	mu    sync.Mutex
	url   map[any]string
	pools map[any]*pgxpool.Pool
}

func (r *openedStores) open(t *testing.T, url string, newStore func(*pgxpool.Pool) any) any {
	pool := pgtest.Open(t, url)
	s := newStore(pool)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.url[s], r.pools[s] = url, pool
	return s
}

// reopen closes the pool of s and opens a store on a new one, as a
// restarted replica does.
func (r *openedStores) reopen(t *testing.T, s any, newStore func(*pgxpool.Pool) any) any {
	r.mu.Lock()
	url, pool := r.url[s], r.pools[s]
	r.mu.Unlock()
	pool.Close()
	return r.open(t, url, newStore)
}

func (r *openedStores) pool(s any) *pgxpool.Pool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pools[s]
}

// contractOptions use small chunks and a small memory bound, so that the
// contract's artifacts (up to 300 KiB) span many chunks and most are
// opened through a cache file.
func contractOptions(t *testing.T) pgstore.ArtifactOptions {
	return pgstore.ArtifactOptions{CacheDir: t.TempDir(), ChunkBytes: 16 << 10, MemoryBytes: 4 << 10}
}

func TestStoreContract(t *testing.T) {
	r := &openedStores{url: map[any]string{}, pools: map[any]*pgxpool.Pool{}}
	newIndex := func(pool *pgxpool.Pool) any { return pgstore.NewIndex(pool) }
	newArtifacts := func(t *testing.T) func(*pgxpool.Pool) any {
		opts := contractOptions(t)
		return func(pool *pgxpool.Pool) any { return pgstore.NewArtifacts(pool, opts) }
	}
	storetest.Run(t, storetest.Opener{
		New: func(t *testing.T) store.IndexStore {
			return r.open(t, pgtest.Database(t), newIndex).(store.IndexStore)
		},
		Reopen: func(t *testing.T, s store.IndexStore) store.IndexStore {
			return r.reopen(t, s, newIndex).(store.IndexStore)
		},
		NewArtifacts: func(t *testing.T) store.ArtifactStore {
			return r.open(t, pgtest.Database(t), newArtifacts(t)).(store.ArtifactStore)
		},
		ReopenArtifacts: func(t *testing.T, s store.ArtifactStore) store.ArtifactStore {
			return r.reopen(t, s, newArtifacts(t)).(store.ArtifactStore)
		},
		Corrupt: func(t *testing.T, s store.ArtifactStore, name string) {
			corrupt(t, r.pool(s), name)
		},
	})
}

// corrupt flips the middle byte of the artifact's first chunk with SQL,
// behind the store's back, as a hand edit does: same size, other content.
func corrupt(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	tag, err := pool.Exec(context.Background(), `UPDATE registry_artifact_chunks c
		SET data = set_byte(c.data, length(c.data) / 2, get_byte(c.data, length(c.data) / 2) # 255)
		FROM registry_artifacts a
		WHERE c.artifact_id = a.id AND a.name = $1 AND a.quarantined_at IS NULL AND c.seq = 0`, name)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("corrupt %s: %d chunks changed, %v", name, tag.RowsAffected(), err)
	}
}

// TestReplicasRacingOneBase: two replicas (two pools on one database)
// commit on the same revision at once, round after round; exactly one of
// them wins each round, and both then read the winner's index.
func TestReplicasRacingOneBase(t *testing.T) {
	url := pgtest.Database(t)
	replicas := []*pgstore.IndexStore{pgstore.NewIndex(pgtest.Open(t, url)), pgstore.NewIndex(pgtest.Open(t, url))}
	ctx := context.Background()
	ix, base, err := replicas[0].ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		revs := make([]store.Revision, len(replicas))
		errs := make([]error, len(replicas))
		nexts := make([]*store.Index, len(replicas))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, s := range replicas {
			nexts[i] = ix.Clone()
			v := "r" + strconv.Itoa(round) + "-replica" + strconv.Itoa(i)
			nexts[i].Models[v] = &store.Entry{Version: v, Status: store.StatusStaged, File: "models/" + v + ".npz"}
			wg.Go(func() {
				<-start
				revs[i], errs[i] = s.CommitIndex(ctx, base, nexts[i])
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: replicas %d and %d both committed on revision %d", round, winner, i, base)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d: replica %d: %v, want success or ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: neither replica committed on the current revision %d", round, base)
		}
		for i, s := range replicas {
			got, rev, err := s.ReadIndex(ctx)
			if err != nil || rev != revs[winner] || len(got.Models) != len(nexts[winner].Models) {
				t.Fatalf("round %d: replica %d reads revision %d with %d entries (%v); the winner committed %d with %d",
					round, i, rev, len(got.Models), err, revs[winner], len(nexts[winner].Models))
			}
		}
		ix, base = nexts[winner], revs[winner]
	}
}

// TestCommitNotifiesTheFleet: a commit announces its revision on
// pgstore.NotifyChannel, and a refused one announces nothing.
func TestCommitNotifiesTheFleet(t *testing.T) {
	url := pgtest.Database(t)
	s := pgstore.NewIndex(pgtest.Open(t, url))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "LISTEN "+pgstore.NotifyChannel); err != nil {
		t.Fatal(err)
	}
	rev, err := s.CommitIndex(ctx, 0, store.NewIndex())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitIndex(ctx, 0, store.NewIndex()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second commit on revision 0: %v, want ErrConflict", err)
	}
	n, err := listener.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Channel != pgstore.NotifyChannel || n.Payload != strconv.FormatUint(uint64(rev), 10) {
		t.Fatalf("notification %q on %q, want revision %d on %q", n.Payload, n.Channel, rev, pgstore.NotifyChannel)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if n, err := listener.WaitForNotification(short); err == nil {
		t.Fatalf("a refused commit notified %q", n.Payload)
	}
}

// TestIndexEditedByHandIsCorrupt: a row that would not pass
// Index.Validate is refused on read, never handed to the registry.
func TestIndexEditedByHandIsCorrupt(t *testing.T) {
	url := pgtest.Database(t)
	pool := pgtest.Open(t, url)
	s := pgstore.NewIndex(pool)
	if _, err := s.CommitIndex(context.Background(), 0, store.NewIndex()); err != nil {
		t.Fatal(err)
	}
	for _, models := range []string{`{"x": null}`, `{"x": {"version": "x", "status": "staged", "file": "../x.npz"}}`, `[]`} {
		if _, err := pool.Exec(context.Background(), `UPDATE registry_index SET models = $1`, models); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ReadIndex(context.Background()); !errors.Is(err, store.ErrIndexCorrupt) {
			t.Fatalf("read of models %s: %v, want ErrIndexCorrupt", models, err)
		}
	}
}

func content(n int) []byte {
	b := make([]byte, n)
	x := uint32(7)
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func fingerprint(b []byte) store.Fingerprint {
	h := sha256.Sum256(b)
	return store.Fingerprint{SizeBytes: int64(len(b)), SHA256: hex.EncodeToString(h[:])}
}

func countChunks(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM registry_artifact_chunks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestArtifactLargerThanAChunk: with the default options, an artifact of
// a few chunks is stored as that many rows and read back whole through a
// cache file, also after the cache directory is removed.
func TestArtifactLargerThanAChunk(t *testing.T) {
	pool := pgtest.Open(t, pgtest.Database(t))
	cacheDir := filepath.Join(t.TempDir(), "cache") // created on first use
	s := pgstore.NewArtifacts(pool, pgstore.ArtifactOptions{CacheDir: cacheDir})
	ctx := context.Background()
	model := content(2<<20 + 12345)
	size, sum, err := s.Put(ctx, "models/big.npz", func(w io.Writer) error {
		_, err := w.Write(model) // one write, larger than a chunk
		return err
	})
	if err != nil || fingerprint(model) != (store.Fingerprint{SizeBytes: size, SHA256: sum}) {
		t.Fatalf("Put: %d bytes, sha256 %s, %v", size, sum, err)
	}
	if n := countChunks(t, pool); n != 3 {
		t.Fatalf("%d bytes stored in %d chunks, want 3 of 1 MiB", len(model), n)
	}
	a, err := s.Open(ctx, "models/big.npz", fingerprint(model), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if left, _ := os.ReadDir(cacheDir); len(left) != 0 {
		t.Fatalf("the cache directory holds %d files while an artifact is open; its copy should be unlinked", len(left))
	}
	if err := os.RemoveAll(cacheDir); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.NewSectionReader(a, 0, a.Size()))
	if err != nil || !bytes.Equal(got, model) {
		t.Fatalf("read back %d bytes (%v), want the %d put", len(got), err, len(model))
	}
	again, err := s.Open(ctx, "models/big.npz", fingerprint(model), 0)
	if err != nil {
		t.Fatalf("Open after the cache directory was removed: %v", err)
	}
	again.Close()
}

// TestFailedPutLeavesNoChunks: a writer that fails after several chunks
// leaves no row behind, not even chunks no artifact names.
func TestFailedPutLeavesNoChunks(t *testing.T) {
	pool := pgtest.Open(t, pgtest.Database(t))
	s := pgstore.NewArtifacts(pool, pgstore.ArtifactOptions{ChunkBytes: 64 << 10})
	boom := errors.New("the writer failed")
	_, _, err := s.Put(context.Background(), "models/f.npz", func(w io.Writer) error {
		if _, err := w.Write(content(300 << 10)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Put: %v, want the writer's error", err)
	}
	if n := countChunks(t, pool); n != 0 {
		t.Fatalf("a failed Put left %d chunks", n)
	}
}
