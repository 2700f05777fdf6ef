package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"ramanserve/registry/store"
)

// artifactTests are the subtests of store.ArtifactStore's guarantees.
var artifactTests = []struct {
	name string
	run  func(t *testing.T, o Opener)
}{
	{"ArtifactPutOpenRoundTrip", testArtifactRoundTrip},
	{"ArtifactPutNeverReplaces", testPutNeverReplaces},
	{"ArtifactFailedPutStoresNothing", testFailedPut},
	{"ArtifactInvalidNameIsRefused", testInvalidArtifactName},
	{"ArtifactChecksumMismatchIsCorruption", testChecksumMismatch},
	{"ArtifactSizeMismatchIsCorruption", testSizeMismatch},
	{"ArtifactOpenedSurvivesDelete", testOpenedSurvivesDelete},
	{"ArtifactDeleteOfUnknownName", testDeleteUnknown},
	{"ArtifactDeleteRefusedWhenChanged", testDeleteRefusedWhenChanged},
	{"ArtifactDeleteRemovesSidecar", testDeleteRemovesSidecar},
	{"ArtifactQuarantineSetsAside", testQuarantine},
	{"ArtifactReopenPreservesArtifacts", testReopenArtifacts},
	{"ArtifactConcurrentPuts", testConcurrentPuts},
}

// content is n bytes that differ with seed, larger than any copy
// buffer for n above 32 KiB, so a store that loses or reorders a chunk
// fails the round trip.
func content(seed byte, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func fingerprintOf(b []byte) store.Fingerprint {
	return store.Fingerprint{SizeBytes: int64(len(b)), SHA256: sum(b)}
}

func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		// Two writes, so a store that keeps only the last one fails.
		half := len(b) / 2
		if _, err := w.Write(b[:half]); err != nil {
			return err
		}
		_, err := w.Write(b[half:])
		return err
	}
}

func put(t *testing.T, s store.ArtifactStore, name string, b []byte) {
	t.Helper()
	size, got, err := s.Put(context.Background(), name, writeBytes(b))
	if err != nil {
		t.Fatalf("Put %s: %v", name, err)
	}
	if size != int64(len(b)) || got != sum(b) {
		t.Fatalf("Put %s returned size %d, sha256 %s; the content is %d bytes, sha256 %s", name, size, got, len(b), sum(b))
	}
}

// readArtifact opens name with want and returns all its content.
func readArtifact(t *testing.T, s store.ArtifactStore, name string, want store.Fingerprint) []byte {
	t.Helper()
	a, err := s.Open(context.Background(), name, want, 0)
	if err != nil {
		t.Fatalf("Open %s: %v", name, err)
	}
	defer a.Close()
	if a.Size() != want.SizeBytes || a.SHA256() != want.SHA256 {
		t.Fatalf("Open %s reports size %d, sha256 %s; want %d, %s", name, a.Size(), a.SHA256(), want.SizeBytes, want.SHA256)
	}
	b, err := io.ReadAll(io.NewSectionReader(a, 0, a.Size()))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return b
}

func names(t *testing.T, s store.ArtifactStore) []string {
	t.Helper()
	infos, err := s.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var out []string
	for _, a := range infos {
		out = append(out, a.Name)
	}
	return out
}

func wantNotFound(t *testing.T, s store.ArtifactStore, name string) {
	t.Helper()
	if a, err := s.Open(context.Background(), name, store.Fingerprint{}, 1<<30); !errors.Is(err, store.ErrArtifactNotFound) {
		if a != nil {
			a.Close()
		}
		t.Fatalf("Open %s: %v, want ErrArtifactNotFound", name, err)
	}
	if slices.Contains(names(t, s), name) {
		t.Fatalf("List names %s, which has no artifact", name)
	}
}

func testArtifactRoundTrip(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	if got := names(t, s); len(got) != 0 {
		t.Fatalf("a new store lists %v", got)
	}
	model := content(1, 300<<10)
	put(t, s, "models/a.npz", model)
	got := readArtifact(t, s, "models/a.npz", fingerprintOf(model))
	if !bytes.Equal(got, model) {
		t.Fatal("the content read back differs from the content put")
	}
	// At an offset, as an .npz reader reads its central directory.
	a, err := s.Open(context.Background(), "models/a.npz", fingerprintOf(model), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tail := make([]byte, 100)
	if n, err := a.ReadAt(tail, int64(len(model)-100)); n != 100 || (err != nil && err != io.EOF) || !bytes.Equal(tail, model[len(model)-100:]) {
		t.Fatalf("ReadAt the last 100 bytes: %d bytes, %v", n, err)
	}

	joblib, side := content(2, 1000), []byte(`{"target":"DHA"}`)
	if err := s.PutSidecar(context.Background(), "models/b.joblib", side); err != nil {
		t.Fatalf("PutSidecar: %v", err)
	}
	put(t, s, "models/b.joblib", joblib)
	if b, err := s.ReadSidecar(context.Background(), "models/b.joblib"); err != nil || !bytes.Equal(b, side) {
		t.Fatalf("ReadSidecar: %q, %v; want %q", b, err, side)
	}
	if _, err := s.ReadSidecar(context.Background(), "models/a.npz"); !errors.Is(err, store.ErrArtifactNotFound) {
		t.Fatalf("ReadSidecar of an artifact without one: %v, want ErrArtifactNotFound", err)
	}
	// An empty artifact is an artifact too.
	put(t, s, "models/empty.joblib", nil)
	if got := readArtifact(t, s, "models/empty.joblib", fingerprintOf(nil)); len(got) != 0 {
		t.Fatalf("the empty artifact reads %d bytes", len(got))
	}

	infos, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 3 || infos[0].Name != "models/a.npz" || infos[1].Name != "models/b.joblib" || infos[2].Name != "models/empty.joblib" {
		t.Fatalf("List = %+v, want models/a.npz, models/b.joblib, models/empty.joblib in that order", infos)
	}
	for _, info := range infos {
		if !info.Readable || info.ModTime.IsZero() {
			t.Fatalf("List: %+v, want readable with a modification time", info)
		}
	}
	wantNotFound(t, s, "models/none.npz")
	// Without a recorded size, the limit applies.
	if a, err := s.Open(context.Background(), "models/a.npz", store.Fingerprint{}, int64(len(model))); err != nil {
		t.Fatalf("Open without a fingerprint, at the limit: %v", err)
	} else {
		if a.SHA256() != sum(model) || a.Size() != int64(len(model)) {
			t.Fatalf("Open without a fingerprint reports %d bytes, sha256 %s", a.Size(), a.SHA256())
		}
		a.Close()
	}
	if _, err := s.Open(context.Background(), "models/a.npz", store.Fingerprint{}, int64(len(model))-1); !errors.Is(err, store.ErrArtifactCorrupt) {
		t.Fatalf("Open without a fingerprint, over the limit: %v, want ErrArtifactCorrupt", err)
	}
}

func testPutNeverReplaces(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	first := content(3, 5000)
	put(t, s, "models/v.joblib", first)
	if _, _, err := s.Put(context.Background(), "models/v.joblib", writeBytes(content(4, 10))); !errors.Is(err, store.ErrArtifactExists) {
		t.Fatalf("second Put of one name: %v, want ErrArtifactExists", err)
	}
	if err := s.PutSidecar(context.Background(), "models/v.joblib", []byte(`{}`)); !errors.Is(err, store.ErrArtifactExists) {
		t.Fatalf("PutSidecar of a name that has an artifact: %v, want ErrArtifactExists", err)
	}
	if !bytes.Equal(readArtifact(t, s, "models/v.joblib", fingerprintOf(first)), first) {
		t.Fatal("a refused Put changed the artifact")
	}
	if _, err := s.ReadSidecar(context.Background(), "models/v.joblib"); !errors.Is(err, store.ErrArtifactNotFound) {
		t.Fatalf("a refused PutSidecar left a sidecar: %v", err)
	}
	if err := s.PutSidecar(context.Background(), "models/w.joblib", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSidecar(context.Background(), "models/w.joblib", []byte(`{"a":2}`)); !errors.Is(err, store.ErrArtifactExists) {
		t.Fatalf("second PutSidecar: %v, want ErrArtifactExists", err)
	}
	if b, _ := s.ReadSidecar(context.Background(), "models/w.joblib"); string(b) != `{"a":1}` {
		t.Fatalf("a refused PutSidecar replaced the sidecar: %q", b)
	}
}

func testFailedPut(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	boom := errors.New("the writer failed")
	_, _, err := s.Put(context.Background(), "models/f.npz", func(w io.Writer) error {
		w.Write(content(5, 70<<10))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Put with a failing writer: %v, want the writer's error", err)
	}
	wantNotFound(t, s, "models/f.npz")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Put(ctx, "models/c.npz", writeBytes(content(6, 10))); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context: %v, want context.Canceled", err)
	}
	wantNotFound(t, s, "models/c.npz")
	// The names are free: nothing half-written holds them.
	put(t, s, "models/f.npz", content(7, 10))
	put(t, s, "models/c.npz", content(8, 10))
}

func testInvalidArtifactName(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	for _, name := range []string{"../x.npz", "models/../x.npz", "models/x.txt", "index.json", "models/sub/x.npz", "x.npz"} {
		if _, _, err := s.Put(context.Background(), name, writeBytes([]byte("x"))); err == nil {
			t.Fatalf("Put %q succeeded; it is not an artifact name", name)
		}
	}
	if err := s.PutSidecar(context.Background(), "models/x.npz", []byte(`{}`)); err == nil {
		t.Fatal("PutSidecar of an .npz succeeded; only a .joblib has a sidecar")
	}
	if err := s.PutSidecar(context.Background(), "models/big.joblib", make([]byte, store.MaxSidecarBytes+1)); err == nil {
		t.Fatal("PutSidecar over MaxSidecarBytes succeeded")
	}
	if got := names(t, s); len(got) != 0 {
		t.Fatalf("refused Puts left %v", got)
	}
}

func testChecksumMismatch(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	b := content(9, 50<<10)
	put(t, s, "models/m.npz", b)
	other := fingerprintOf(b)
	other.SHA256 = sum([]byte("something else"))
	if _, err := s.Open(context.Background(), "models/m.npz", other, 0); !errors.Is(err, store.ErrArtifactCorrupt) {
		t.Fatalf("Open with another checksum: %v, want ErrArtifactCorrupt", err)
	}
	o.Corrupt(t, s, "models/m.npz")
	if _, err := s.Open(context.Background(), "models/m.npz", fingerprintOf(b), 0); !errors.Is(err, store.ErrArtifactCorrupt) {
		t.Fatalf("Open of a changed artifact: %v, want ErrArtifactCorrupt", err)
	}
	// Still listed: the registry decides what to do with it.
	if !slices.Contains(names(t, s), "models/m.npz") {
		t.Fatal("a corrupt artifact disappeared from the list")
	}
}

func testSizeMismatch(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	b := content(10, 1000)
	put(t, s, "models/m.npz", b)
	for _, size := range []int64{999, 1001} {
		want := store.Fingerprint{SizeBytes: size}
		if _, err := s.Open(context.Background(), "models/m.npz", want, 1<<30); !errors.Is(err, store.ErrArtifactCorrupt) {
			t.Fatalf("Open with size %d recorded: %v, want ErrArtifactCorrupt", size, err)
		}
	}
	// A size without a checksum (an entry from before checksums) is
	// checked alone.
	if a, err := s.Open(context.Background(), "models/m.npz", store.Fingerprint{SizeBytes: 1000}, 0); err != nil {
		t.Fatalf("Open with the right size and no checksum: %v", err)
	} else {
		a.Close()
	}
}

func testOpenedSurvivesDelete(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	b := content(11, 40<<10)
	put(t, s, "models/d.npz", b)
	a, err := s.Open(context.Background(), "models/d.npz", fingerprintOf(b), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := s.Delete(context.Background(), "models/d.npz", fingerprintOf(b)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.NewSectionReader(a, 0, a.Size()))
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("an artifact opened before its delete reads %d bytes, %v; want its %d bytes", len(got), err, len(b))
	}
}

func testDeleteUnknown(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	b := content(12, 100)
	put(t, s, "models/keep.npz", b)
	if err := s.Delete(context.Background(), "models/none.npz", store.Fingerprint{SizeBytes: 100, SHA256: sum(b)}); err != nil {
		t.Fatalf("Delete of a name with no artifact: %v, want nil", err)
	}
	if got := names(t, s); !slices.Equal(got, []string{"models/keep.npz"}) {
		t.Fatalf("after deleting an unknown name the store lists %v", got)
	}
	readArtifact(t, s, "models/keep.npz", fingerprintOf(b))
}

func testDeleteRefusedWhenChanged(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	b := content(13, 2000)
	put(t, s, "models/x.joblib", b)
	if err := s.PutSidecar(context.Background(), "models/y.joblib", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	put(t, s, "models/y.joblib", b)
	for _, other := range []store.Fingerprint{
		{SizeBytes: 2000, SHA256: sum([]byte("other"))},
		{SizeBytes: 1999, SHA256: sum(b)},
		{SizeBytes: 1999},
	} {
		if err := s.Delete(context.Background(), "models/x.joblib", other); !errors.Is(err, store.ErrArtifactChanged) {
			t.Fatalf("Delete with fingerprint %+v of other content: %v, want ErrArtifactChanged", other, err)
		}
	}
	readArtifact(t, s, "models/x.joblib", fingerprintOf(b))
	o.Corrupt(t, s, "models/y.joblib")
	if err := s.Delete(context.Background(), "models/y.joblib", fingerprintOf(b)); !errors.Is(err, store.ErrArtifactChanged) {
		t.Fatalf("Delete of an artifact changed behind the store's back: %v, want ErrArtifactChanged", err)
	}
	if got := names(t, s); !slices.Equal(got, []string{"models/x.joblib", "models/y.joblib"}) {
		t.Fatalf("refused deletes left %v", got)
	}
	if _, err := s.ReadSidecar(context.Background(), "models/y.joblib"); err != nil {
		t.Fatalf("a refused delete removed the sidecar: %v", err)
	}
	// The recorded size alone (no checksum recorded) is enough to delete.
	if err := s.Delete(context.Background(), "models/x.joblib", store.Fingerprint{SizeBytes: 2000}); err != nil {
		t.Fatalf("Delete with the right size and no checksum: %v", err)
	}
	wantNotFound(t, s, "models/x.joblib")
}

func testDeleteRemovesSidecar(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	b := content(14, 300)
	if err := s.PutSidecar(context.Background(), "models/s.joblib", []byte(`{"target":"EPA"}`)); err != nil {
		t.Fatal(err)
	}
	put(t, s, "models/s.joblib", b)
	if err := s.Delete(context.Background(), "models/s.joblib", fingerprintOf(b)); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, "models/s.joblib")
	if _, err := s.ReadSidecar(context.Background(), "models/s.joblib"); !errors.Is(err, store.ErrArtifactNotFound) {
		t.Fatalf("the sidecar of a deleted artifact: %v, want ErrArtifactNotFound", err)
	}
	// A sidecar whose artifact was never put (an import that failed) goes
	// with a delete of the name.
	if err := s.PutSidecar(context.Background(), "models/t.joblib", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), "models/t.joblib", store.Fingerprint{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadSidecar(context.Background(), "models/t.joblib"); !errors.Is(err, store.ErrArtifactNotFound) {
		t.Fatalf("a lone sidecar after a delete of its name: %v, want ErrArtifactNotFound", err)
	}
	// The name is free again.
	put(t, s, "models/s.joblib", content(15, 10))
}

func testQuarantine(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	b := content(16, 100)
	if err := s.PutSidecar(context.Background(), "models/q.joblib", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	put(t, s, "models/q.joblib", b)
	where, err := s.Quarantine(context.Background(), "models/q.joblib", "unreadable")
	if err != nil || where == "" {
		t.Fatalf("Quarantine: %q, %v", where, err)
	}
	wantNotFound(t, s, "models/q.joblib")
	if _, err := s.ReadSidecar(context.Background(), "models/q.joblib"); !errors.Is(err, store.ErrArtifactNotFound) {
		t.Fatalf("the sidecar stayed beside a quarantined artifact: %v", err)
	}
	// The same name quarantined twice keeps both.
	put(t, s, "models/q.joblib", b)
	again, err := s.Quarantine(context.Background(), "models/q.joblib", "unreadable again")
	if err != nil || again == "" || again == where {
		t.Fatalf("second Quarantine of the name: %q, %v (the first went to %q)", again, err, where)
	}
	q, err := s.Quarantined(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(q)
	want := []string{where, again}
	slices.Sort(want)
	if !slices.Equal(q, want) {
		t.Fatalf("Quarantined = %v, want %v", q, want)
	}
	if _, err := s.Quarantine(context.Background(), "models/none.npz", "x"); err == nil {
		t.Fatal("Quarantine of a name with no artifact succeeded")
	}
}

func testReopenArtifacts(t *testing.T, o Opener) {
	s := o.NewArtifacts(t)
	a, j, side := content(17, 70<<10), content(18, 3000), []byte(`{"trained_at":"2026-01-02T03:04:05Z"}`)
	put(t, s, "models/a.npz", a)
	if err := s.PutSidecar(context.Background(), "models/j.joblib", side); err != nil {
		t.Fatal(err)
	}
	put(t, s, "models/j.joblib", j)
	q := content(19, 10)
	put(t, s, "models/q.npz", q)
	where, err := s.Quarantine(context.Background(), "models/q.npz", "bad")
	if err != nil {
		t.Fatal(err)
	}
	s = o.ReopenArtifacts(t, s)
	if got := names(t, s); !slices.Equal(got, []string{"models/a.npz", "models/j.joblib"}) {
		t.Fatalf("a reopened store lists %v", got)
	}
	if !bytes.Equal(readArtifact(t, s, "models/a.npz", fingerprintOf(a)), a) || !bytes.Equal(readArtifact(t, s, "models/j.joblib", fingerprintOf(j)), j) {
		t.Fatal("a reopened store reads other content")
	}
	if b, err := s.ReadSidecar(context.Background(), "models/j.joblib"); err != nil || !bytes.Equal(b, side) {
		t.Fatalf("a reopened store's sidecar: %q, %v", b, err)
	}
	if got, err := s.Quarantined(context.Background()); err != nil || !slices.Equal(got, []string{where}) {
		t.Fatalf("a reopened store's quarantine: %v, %v; want [%s]", got, err, where)
	}
	if _, _, err := s.Put(context.Background(), "models/a.npz", writeBytes(q)); !errors.Is(err, store.ErrArtifactExists) {
		t.Fatalf("Put over an artifact from before the restart: %v, want ErrArtifactExists", err)
	}
	if err := s.Delete(context.Background(), "models/a.npz", fingerprintOf(a)); err != nil {
		t.Fatal(err)
	}
	s = o.ReopenArtifacts(t, s)
	if got := names(t, s); !slices.Equal(got, []string{"models/j.joblib"}) {
		t.Fatalf("after a delete and a restart the store lists %v", got)
	}
}

// testConcurrentPuts puts different names at once, each of which must be
// stored whole, and races puts of one name, of which exactly one wins.
func testConcurrentPuts(t *testing.T, o Opener) {
	const writers = 8
	s := o.NewArtifacts(t)
	start := make(chan struct{})
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			<-start
			_, _, errs[w] = s.Put(context.Background(), fmt.Sprintf("models/w%d.npz", w), writeBytes(content(byte(20+w), 40<<10+w)))
		})
	}
	close(start)
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("Put of writer %d: %v", w, err)
		}
		b := content(byte(20+w), 40<<10+w)
		if !bytes.Equal(readArtifact(t, s, fmt.Sprintf("models/w%d.npz", w), fingerprintOf(b)), b) {
			t.Fatalf("writer %d's artifact reads other content", w)
		}
	}
	if got := names(t, s); len(got) != writers {
		t.Fatalf("after %d puts the store lists %v", writers, got)
	}

	start = make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			_, _, errs[w] = s.Put(context.Background(), "models/same.npz", writeBytes(content(byte(40+w), 20<<10)))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for w, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("writers %d and %d both put models/same.npz", winner, w)
		case err == nil:
			winner = w
		case !errors.Is(err, store.ErrArtifactExists):
			t.Fatalf("racing Put of writer %d: %v, want success or ErrArtifactExists", w, err)
		}
	}
	if winner < 0 {
		t.Fatal("no racing Put of models/same.npz succeeded")
	}
	b := content(byte(40+winner), 20<<10)
	if !bytes.Equal(readArtifact(t, s, "models/same.npz", fingerprintOf(b)), b) {
		t.Fatal("models/same.npz holds another writer's content than the winner's")
	}
}
