package storetest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"ramanserve/registry/store"
	"ramanserve/registry/storetest"
)

// memStore keeps the index and the artifacts in memory: the smallest
// store that meets the contract, run here so that the suite itself is
// checked against a second implementation. Reopen hands the same record
// to a new store value.
type memStore struct{ rec *record }

type record struct {
	mu  sync.Mutex
	ix  *store.Index
	rev store.Revision

	artifacts   map[string]*memArtifact
	sidecars    map[string][]byte
	quarantined []string
}

// memArtifact is one stored artifact. Its content is never changed in
// place (Corrupt replaces it), so a reader handed out keeps what it got.
type memArtifact struct {
	data    []byte
	storeAt time.Time
}

func newRecord() *record {
	return &record{ix: store.NewIndex(), artifacts: map[string]*memArtifact{}, sidecars: map[string][]byte{}}
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

func checkName(name string) error {
	if !store.ValidArtifactName(name) {
		return fmt.Errorf("%q is not an artifact name", name)
	}
	return nil
}

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func (s memStore) Put(ctx context.Context, name string, write func(io.Writer) error) (int64, string, error) {
	if err := checkName(name); err != nil {
		return 0, "", err
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return 0, "", err
	}
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if s.rec.artifacts[name] != nil {
		return 0, "", fmt.Errorf("%w: %s", store.ErrArtifactExists, name)
	}
	s.rec.artifacts[name] = &memArtifact{data: buf.Bytes(), storeAt: time.Now()}
	return int64(buf.Len()), hexSum(buf.Bytes()), nil
}

func (s memStore) PutSidecar(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	if !bytes.HasSuffix([]byte(name), []byte(".joblib")) || len(data) > store.MaxSidecarBytes {
		return fmt.Errorf("no sidecar of %d bytes for %s", len(data), name)
	}
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if s.rec.artifacts[name] != nil || s.rec.sidecars[name] != nil {
		return fmt.Errorf("%w: %s", store.ErrArtifactExists, name)
	}
	s.rec.sidecars[name] = slices.Clone(data)
	return nil
}

func (s memStore) Open(ctx context.Context, name string, want store.Fingerprint, maxBytes int64) (store.Artifact, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.rec.mu.Lock()
	a := s.rec.artifacts[name]
	s.rec.mu.Unlock()
	if a == nil {
		return nil, fmt.Errorf("%w: %s", store.ErrArtifactNotFound, name)
	}
	size, sum := int64(len(a.data)), hexSum(a.data)
	sizeRecorded := want.SizeBytes > 0 || want.SHA256 != ""
	switch {
	case sizeRecorded && size != want.SizeBytes:
		return nil, fmt.Errorf("%w: %s is %d bytes, recorded %d", store.ErrArtifactCorrupt, name, size, want.SizeBytes)
	case !sizeRecorded && size > maxBytes:
		return nil, fmt.Errorf("%w: %s is over %d bytes", store.ErrArtifactCorrupt, name, maxBytes)
	case want.SHA256 != "" && sum != want.SHA256:
		return nil, fmt.Errorf("%w: %s has sha256 %s, recorded %s", store.ErrArtifactCorrupt, name, sum, want.SHA256)
	}
	return memReader{Reader: bytes.NewReader(a.data), sum: sum}, nil
}

type memReader struct {
	*bytes.Reader
	sum string
}

func (r memReader) SHA256() string { return r.sum }
func (r memReader) Close() error   { return nil }

func (s memStore) ReadSidecar(ctx context.Context, name string) ([]byte, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	b, ok := s.rec.sidecars[name]
	if !ok {
		return nil, fmt.Errorf("%w: no sidecar for %s", store.ErrArtifactNotFound, name)
	}
	return slices.Clone(b), nil
}

func (s memStore) Delete(ctx context.Context, name string, want store.Fingerprint) error {
	if err := checkName(name); err != nil {
		return err
	}
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if a := s.rec.artifacts[name]; a != nil {
		if int64(len(a.data)) != want.SizeBytes || (want.SHA256 != "" && hexSum(a.data) != want.SHA256) {
			return fmt.Errorf("%w: %s", store.ErrArtifactChanged, name)
		}
	}
	delete(s.rec.artifacts, name)
	delete(s.rec.sidecars, name)
	return nil
}

func (s memStore) List(ctx context.Context) ([]store.ArtifactInfo, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	var out []store.ArtifactInfo
	for name, a := range s.rec.artifacts {
		out = append(out, store.ArtifactInfo{Name: name, Readable: true, ModTime: a.storeAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s memStore) Quarantine(ctx context.Context, name, reason string) (string, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if s.rec.artifacts[name] == nil {
		return "", fmt.Errorf("%w: %s", store.ErrArtifactNotFound, name)
	}
	where := fmt.Sprintf("quarantine/%d-%s", len(s.rec.quarantined)+1, name[len(store.ModelsDir)+1:])
	s.rec.quarantined = append(s.rec.quarantined, where)
	delete(s.rec.artifacts, name)
	delete(s.rec.sidecars, name)
	return where, nil
}

func (s memStore) Quarantined(ctx context.Context) ([]string, error) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return slices.Clone(s.rec.quarantined), nil
}

// corrupt flips a byte of the artifact, replacing its content.
func corrupt(t *testing.T, s store.ArtifactStore, name string) {
	rec := s.(memStore).rec
	rec.mu.Lock()
	defer rec.mu.Unlock()
	a := rec.artifacts[name]
	if a == nil || len(a.data) == 0 {
		t.Fatalf("corrupt: no content at %s", name)
	}
	data := slices.Clone(a.data)
	data[len(data)/2] ^= 0xff
	rec.artifacts[name] = &memArtifact{data: data, storeAt: a.storeAt}
}

func TestMemoryStoreMeetsTheContract(t *testing.T) {
	storetest.Run(t, storetest.Opener{
		New: func(*testing.T) store.IndexStore {
			return memStore{rec: newRecord()}
		},
		Reopen: func(_ *testing.T, s store.IndexStore) store.IndexStore {
			return memStore{rec: s.(memStore).rec}
		},
		NewArtifacts: func(*testing.T) store.ArtifactStore {
			return memStore{rec: newRecord()}
		},
		ReopenArtifacts: func(_ *testing.T, s store.ArtifactStore) store.ArtifactStore {
			return memStore{rec: s.(memStore).rec}
		},
		Corrupt: corrupt,
	})
}
