package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/atomicfile"
)

// constModel predicts the same concentration for every analyte. The
// registry is the thing under test here; the model only has to carry a
// version and be told apart.
type constModel struct {
	meta  inference.Metadata
	value float64
}

func (m *constModel) Metadata() *inference.Metadata { return &m.meta }
func (m *constModel) Targets() []inference.Analyte {
	return []inference.Analyte{inference.EPA, inference.DHA, inference.DPA}
}
func (m *constModel) Predict(_ *inference.Spectrum, out *inference.Prediction) error {
	for a := inference.Analyte(0); a < inference.NumAnalytes; a++ {
		out.Concentrations.Set(a, m.value)
	}
	return nil
}

// loadGate makes a test registry's opens slow: each open says on
// entered that it has begun, its caller then holding the load lock, and
// waits for a value or the close of release.
type loadGate struct {
	entered chan struct{}
	release chan struct{}
}

func newLoadGate() *loadGate {
	return &loadGate{entered: make(chan struct{}, 64), release: make(chan struct{})}
}

// waitEntered waits until an open has begun: the goroutine that called
// it holds the load lock and waits at the gate. Asking the lock itself
// (TryLock) would take it for a moment, and a Load that tried it then
// would fail with ErrLoadInProgress instead of opening.
func (g *loadGate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(time.Minute): // generous: a machine busy with other tests
		t.Fatal("no open began")
	}
}

// openConst reads files of the form "const:<float>"; "panic" makes it
// panic. Anything else is corrupted. A non-nil gate makes the open wait (a slow load).
func openConst(gate *loadGate) OpenFunc {
	return func(ctx context.Context, content *io.SectionReader, e Entry) (inference.Model, error) {
		if gate != nil {
			select {
			case gate.entered <- struct{}{}:
			default:
			}
			select {
			case <-gate.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		b, err := io.ReadAll(content)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", inference.ErrModelCorrupted, err)
		}
		if string(b) == "panic" { // a reader bug met by a hostile file
			panic("reader bug")
		}
		s, ok := strings.CutPrefix(string(b), "const:")
		if !ok {
			return nil, fmt.Errorf("%w: not a const model", inference.ErrModelCorrupted)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", inference.ErrModelCorrupted, err)
		}
		return &constModel{meta: inference.Metadata{Version: e.Version, Algorithm: "const", TrainedAt: e.TrainedAt}, value: v}, nil
	}
}

func newTestRegistry(t *testing.T, dir string, gate *loadGate) *Registry {
	t.Helper()
	r, err := Open(context.Background(), dir, Options{Openers: map[string]OpenFunc{".joblib": openConst(gate), ".npz": openConst(gate)}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// reopen is a restart: the registry is closed (its lock released) and
// opened again over the same directory.
func reopen(t *testing.T, r *Registry, gate *loadGate) *Registry {
	t.Helper()
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return newTestRegistry(t, r.Dir(), gate)
}

func addStaged(t *testing.T, r *Registry, value float64, at time.Time) string {
	t.Helper()
	v, _, err := r.AddStaged(context.Background(), StagedModel{
		Ext: ".npz", TrainedAt: at, TrainedSamples: 10, Algorithm: "const",
		Write: func(_ string, w io.Writer) error { _, err := fmt.Fprintf(w, "const:%g", value); return err },
	})
	if err != nil {
		t.Fatalf("AddStaged: %v", err)
	}
	return v
}

func activeValue(t *testing.T, r *Registry) float64 {
	t.Helper()
	m := r.Active()
	if m == nil {
		t.Fatal("no active model")
	}
	var p inference.Prediction
	if err := m.Predict(nil, &p); err != nil {
		t.Fatal(err)
	}
	return p.Concentrations.Value[inference.EPA]
}

func TestLoadStagedArchivesPrevious(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v1 := addStaged(t, r, 1, t0)
	v2 := addStaged(t, r, 2, t0.Add(time.Hour))
	if v1 == v2 {
		t.Fatalf("versions collide: %s", v1)
	}
	res, err := r.Load(context.Background(), LoadRequest{Version: v1, Source: SourceStaged})
	if err != nil || res.Loaded != v1 || res.Previous != "" {
		t.Fatalf("first load = %+v, %v", res, err)
	}
	res, err = r.Load(context.Background(), LoadRequest{Version: v2, Source: SourceStaged})
	if err != nil || res.Previous != v1 {
		t.Fatalf("second load = %+v, %v", res, err)
	}
	active, entries := r.List()
	if active != v2 {
		t.Fatalf("active = %q, want %q", active, v2)
	}
	want := map[string]Status{v2: StatusActive, v1: StatusArchived}
	if len(entries) != 2 || entries[0].Version != v2 {
		t.Fatalf("list order = %+v, want newest first", entries)
	}
	for _, e := range entries {
		if e.Status != want[e.Version] {
			t.Errorf("%s status = %s, want %s", e.Version, e.Status, want[e.Version])
		}
	}
	// Archived is re-activated only with source archived.
	if _, err := r.Load(context.Background(), LoadRequest{Version: v1, Source: SourceStaged}); !errors.Is(err, ErrModelStatusMismatch) || errors.Is(err, ErrModelNotFound) || !strings.Contains(err.Error(), "is archived") {
		t.Fatalf("staged load of an archived version: %v, want ErrModelStatusMismatch naming archived", err)
	}
	if _, err := r.Load(context.Background(), LoadRequest{Version: v1, Source: SourceArchived}); err != nil {
		t.Fatalf("archived load: %v", err)
	}
	if got := activeValue(t, r); got != 1 {
		t.Fatalf("active predicts %g, want 1", got)
	}
}

func TestFailedLoadsKeepPreviousActive(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	good := addStaged(t, r, 7, time.Now())
	if _, err := r.Load(context.Background(), LoadRequest{Version: good}); err != nil {
		t.Fatal(err)
	}
	importDir := filepath.Join(dir, "import")
	write := func(name, content string) string {
		p := filepath.Join(importDir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		req  LoadRequest
		want error
	}{
		// First, so that a load lock left held would fail every case after it.
		{"reader panics", LoadRequest{Version: "bad0", Source: SourceFile, Path: write("panics.joblib", "panic")}, inference.ErrModelCorrupted},
		{"unknown version", LoadRequest{Version: "nope", Source: SourceStaged}, ErrModelNotFound},
		{"corrupted file", LoadRequest{Version: "bad1", Source: SourceFile, Path: write("corrupt.joblib", "garbage")}, inference.ErrModelCorrupted},
		{"truncated file", LoadRequest{Version: "bad2", Source: SourceFile, Path: write("trunc.joblib", "const:")}, inference.ErrModelCorrupted},
		{"wrong path", LoadRequest{Version: "bad3", Source: SourceFile, Path: filepath.Join(importDir, "missing.joblib")}, ErrModelNotFound},
		{"path outside roots", LoadRequest{Version: "bad4", Source: SourceFile, Path: "/etc/passwd.joblib"}, ErrPathNotAllowed},
		{"invalid version name", LoadRequest{Version: "../x", Source: SourceStaged}, ErrModelNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Load(context.Background(), tc.req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if got := r.Active().Metadata().Version; got != good {
				t.Fatalf("active = %s, want %s", got, good)
			}
			if got := activeValue(t, r); got != 7 {
				t.Fatalf("active predicts %g, want 7", got)
			}
			active, entries := r.List()
			if active != good || len(entries) != 1 {
				t.Fatalf("list changed: active %q, %d entries", active, len(entries))
			}
		})
	}
	// No file of a failed import is left in models/.
	names, _ := os.ReadDir(filepath.Join(dir, "models"))
	if len(names) != 1 {
		t.Fatalf("models/ holds %d files after failed imports, want 1", len(names))
	}
}

func TestConcurrentLoadsOneWins(t *testing.T) {
	gate := newLoadGate()
	r := newTestRegistry(t, t.TempDir(), gate)
	v := addStaged(t, r, 3, time.Now())
	results := make(chan error, 21)
	go func() { _, err := r.Load(context.Background(), LoadRequest{Version: v}); results <- err }()
	gate.waitEntered(t) // the slow load holds the lock
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Load(context.Background(), LoadRequest{Version: v})
			results <- err
		}()
	}
	wg.Wait()
	close(gate.release)
	ok, busy := 0, 0
	for range 21 {
		switch err := <-results; {
		case err == nil:
			ok++
		case errors.Is(err, ErrLoadInProgress):
			busy++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 || busy != 20 {
		t.Fatalf("ok=%d busy=%d, want 1 and 20", ok, busy)
	}
}

// TestRestartRestoresActiveAdoptsOrphansSweepsOwnTemp: a model file the
// index never recorded (a crash between writing it and recording it) is
// adopted as archived, not deleted; only the registry's own temp names are
// removed.
func TestRestartRestoresActiveAdoptsOrphansSweepsOwnTemp(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 5, time.Now())
	if _, err := r.Load(context.Background(), LoadRequest{Version: v}); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "models", "pls-orphan.npz")
	os.WriteFile(orphan, []byte("const:9"), 0o644)
	ownTemp := filepath.Join(dir, "models", atomicfile.TempPrefix+"x.npz.123")
	os.WriteFile(ownTemp, []byte("half"), 0o644)
	notOurs := filepath.Join(dir, "models", ".x.npz.123.tmp")
	os.WriteFile(notOurs, []byte("an operator's file"), 0o644)

	r2 := reopen(t, r, nil)
	if r2.RestoreError() != nil {
		t.Fatalf("restore error: %v", r2.RestoreError())
	}
	if got := r2.Active().Metadata().Version; got != v {
		t.Fatalf("restored %s, want %s", got, v)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Fatalf("orphan model file was removed: %v", err)
	}
	if _, err := os.Stat(notOurs); err != nil {
		t.Fatalf("a file without the temp prefix was removed: %v", err)
	}
	if _, err := os.Stat(ownTemp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("own temp file survived: %v", err)
	}
	_, entries := r2.List()
	if len(entries) != 2 {
		t.Fatalf("list has %d entries, want 2: %+v", len(entries), entries)
	}
	for _, e := range entries {
		if e.Version == "pls-orphan" && (e.Status != StatusArchived || e.SHA256 == "" || e.SizeBytes != 7) {
			t.Fatalf("adopted entry: %+v", e)
		}
	}
}

func TestRestoreFailureIsReportedNotFatal(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 5, time.Now())
	if _, err := r.Load(context.Background(), LoadRequest{Version: v}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "models", v+".npz"), []byte("damaged"), 0o644)
	r2 := reopen(t, r, nil)
	if r2.RestoreError() == nil || r2.Active() != nil {
		t.Fatalf("want a restore error and no active model, got %v, %v", r2.RestoreError(), r2.Active())
	}
	active, entries := r2.List()
	if active != "" || entries[0].Status != StatusArchived {
		t.Fatalf("list: active %q, status %s", active, entries[0].Status)
	}
}

func TestCheckImportPath(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	root := filepath.Join(dir, "import")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.joblib")
	os.WriteFile(secret, []byte("const:1"), 0o644)
	inside := filepath.Join(root, "ok.joblib")
	os.WriteFile(inside, []byte("const:1"), 0o644)
	os.Symlink(secret, filepath.Join(root, "escape.joblib"))
	os.Symlink(outside, filepath.Join(root, "dirlink"))
	os.WriteFile(filepath.Join(root, "model.txt"), []byte("const:1"), 0o644)

	cases := []struct {
		name, path string
		want       error
	}{
		{"inside root", inside, nil},
		{"dot-dot escape", filepath.Join(root, "..", "..", filepath.Base(outside), "secret.joblib"), ErrPathNotAllowed},
		{"dot-dot staying inside", root + "/sub/../ok.joblib", ErrPathNotAllowed},
		{"symlink out of root", filepath.Join(root, "escape.joblib"), ErrPathNotAllowed},
		{"symlinked directory out of root", filepath.Join(root, "dirlink", "secret.joblib"), ErrPathNotAllowed},
		{"relative path", "import/ok.joblib", ErrPathNotAllowed},
		{"not .joblib", filepath.Join(root, "model.txt"), ErrPathNotAllowed},
		{"absolute outside", secret, ErrPathNotAllowed},
		{"missing inside root", filepath.Join(root, "missing.joblib"), ErrModelNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.CheckImportPath(tc.path)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("CheckImportPath(%q) = %v, want %v", tc.path, err, tc.want)
			}
		})
	}
}

func TestImportCopiesFileAndSidecar(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	src := filepath.Join(dir, "import", "m.joblib")
	os.WriteFile(src, []byte("const:4"), 0o644)
	os.WriteFile(src+".json", []byte(`{"trained_at":"2025-03-04T05:06:07Z","target":"DHA"}`), 0o644)
	res, err := r.Load(context.Background(), LoadRequest{Version: "imported-1", Source: SourceFile, Path: src})
	if err != nil {
		t.Fatal(err)
	}
	if res.Loaded != "imported-1" {
		t.Fatalf("loaded %q", res.Loaded)
	}
	os.Remove(src) // the registry serves its own copy
	_, entries := r.List()
	if len(entries) != 1 || entries[0].TrainedAt.Format(time.RFC3339) != "2025-03-04T05:06:07Z" || entries[0].File != "models/imported-1.joblib" ||
		entries[0].Algorithm != "const" || entries[0].Target != "DHA" {
		t.Fatalf("entry = %+v", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, "models", "imported-1.joblib.json")); err != nil {
		t.Fatalf("sidecar not copied: %v", err)
	}
	if _, err := r.Load(context.Background(), LoadRequest{Version: "imported-1", Source: SourceFile, Path: src}); !errors.Is(err, ErrPathNotAllowed) && !errors.Is(err, ErrVersionExists) && !errors.Is(err, ErrModelNotFound) {
		t.Fatalf("re-import: %v", err)
	}
	r2 := reopen(t, r, nil)
	if got := r2.Active().Metadata().Version; got != "imported-1" {
		t.Fatalf("after restart active = %s", got)
	}
}

// TestImportRefusesBadSidecars: a sidecar that is not JSON or has a
// trained_at that is not a time fails the import, naming the problem, and
// leaves nothing behind.
func TestImportRefusesBadSidecars(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	for i, tc := range []struct{ sidecar, want string }{
		{"not json", "not a JSON object"},
		{`{"trained_at":"yesterday"}`, "not an RFC 3339 time"},
		{`["trained_at"]`, "not a JSON object"},
	} {
		src := filepath.Join(dir, "import", fmt.Sprintf("m%d.joblib", i))
		os.WriteFile(src, []byte("const:4"), 0o644)
		os.WriteFile(src+".json", []byte(tc.sidecar), 0o644)
		_, err := r.Load(context.Background(), LoadRequest{Version: fmt.Sprintf("side-%d", i), Source: SourceFile, Path: src})
		if !errors.Is(err, inference.ErrModelCorrupted) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sidecar %q: err = %v, want MODEL_CORRUPTED mentioning %q", tc.sidecar, err, tc.want)
		}
	}
	if _, entries := r.List(); len(entries) != 0 {
		t.Errorf("failed imports were listed: %+v", entries)
	}
	if names, _ := os.ReadDir(filepath.Join(dir, "models")); len(names) != 0 {
		t.Errorf("failed imports left %d files in models/", len(names))
	}
}

func TestImportRefusesFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	fifo := filepath.Join(dir, "import", "pipe.joblib")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Load(context.Background(), LoadRequest{Version: "fifo", Source: SourceFile, Path: fifo})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrPathNotAllowed) {
			t.Fatalf("err = %v, want ErrPathNotAllowed", err)
		}
	case <-time.After(time.Minute): // without the check it blocks for ever
		t.Fatal("load of a FIFO blocked")
	}
}

// TestJobStagedOnce: a second model of the same training job (a runner
// that lost its lease staging after the one that took the job over) gets
// the first model's version; its file is removed and the index holds one
// entry.
func TestJobStagedOnce(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	stage := func(value float64, at time.Time) (string, string) {
		v, file, err := r.AddStaged(context.Background(), StagedModel{
			Ext: ".npz", TrainedAt: at, Algorithm: "const", JobID: "job-1",
			Write: func(_ string, w io.Writer) error { _, err := fmt.Fprintf(w, "const:%g", value); return err },
		})
		if err != nil {
			t.Fatal(err)
		}
		return v, file
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first, file := stage(1, at)
	second, file2 := stage(2, at.Add(time.Minute))
	if second != first || file2 != file {
		t.Fatalf("the job's second model was staged as %s (%s), the first as %s (%s)", second, file2, first, file)
	}
	if _, entries := r.List(); len(entries) != 1 {
		t.Fatalf("%d entries after staging one job twice", len(entries))
	}
	names, err := r.artifactNames(context.Background())
	if err != nil || len(names) != 1 {
		t.Fatalf("artifacts after staging one job twice: %v %v", names, err)
	}
}
