package registry

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/atomicfile"
	"ramanserve/registry/filestore"
	"ramanserve/registry/registrytest"
	"ramanserve/registry/store"
)

// treeHash describes every path, mode and content under dir
// (registrytest.TreeHash), so a test can show that nothing changed.
func treeHash(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	h, err := registrytest.TreeHash(dir, skip...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func testOptions() Options {
	return Options{Openers: map[string]OpenFunc{".joblib": openConst(nil), ".npz": openConst(nil)}}
}

func TestSecondOpenIsRefusedAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	addStaged(t, r, 1, time.Now())
	os.WriteFile(filepath.Join(dir, "models", "by-hand.npz"), []byte("const:2"), 0o644)
	os.WriteFile(filepath.Join(dir, "models", atomicfile.TempPrefix+"left"), []byte("x"), 0o644)
	before := treeHash(t, dir)

	_, err := Open(context.Background(), dir, testOptions())
	if !errors.Is(err, filestore.ErrLocked) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Open: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	if _, err := Check(context.Background(), dir, testOptions(), true); !errors.Is(err, filestore.ErrLocked) {
		t.Fatalf("check -repair while locked: %v, want ErrLocked", err)
	}
	if after := treeHash(t, dir); after != before {
		t.Fatalf("a refused Open changed the directory:\nbefore\n%s\nafter\n%s", before, after)
	}
	r2 := reopen(t, r, nil)
	if _, entries := r2.List(); len(entries) != 2 {
		t.Fatalf("after the first closed, a new Open lists %d models, want 2", len(entries))
	}
}

// TestRacingOpensOneWins: of processes (here, Opens) racing for one
// registry, exactly one gets it.
func TestRacingOpensOneWins(t *testing.T) {
	dir := t.TempDir()
	newTestRegistry(t, dir, nil).Close()
	const n = 8
	results := make(chan *Registry, n)
	start := make(chan struct{})
	for range n {
		go func() {
			<-start
			r, err := Open(context.Background(), dir, testOptions())
			if err != nil && !errors.Is(err, filestore.ErrLocked) {
				t.Errorf("Open: %v", err)
			}
			results <- r
		}()
	}
	close(start)
	won := 0
	for range n {
		if r := <-results; r != nil {
			won++
			defer r.Close()
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d racing Opens got the registry, want 1", won, n)
	}
}

func TestMissingOrEmptyIndexIsRebuiltFromFiles(t *testing.T) {
	for name, damage := range map[string]func(string) error{
		"deleted": os.Remove,
		"empty":   func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"blank":   func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := newTestRegistry(t, dir, nil)
			a := addStaged(t, r, 1, time.Now().Add(-time.Hour))
			b := addStaged(t, r, 2, time.Now())
			if _, err := r.Load(context.Background(), LoadRequest{Version: b}); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if err := damage(filepath.Join(dir, indexFile)); err != nil {
				t.Fatal(err)
			}
			r2 := newTestRegistry(t, dir, nil)
			active, entries := r2.List()
			if active != "" || len(entries) != 2 {
				t.Fatalf("rebuilt list: active %q, %+v", active, entries)
			}
			for _, e := range entries {
				if (e.Version != a && e.Version != b) || e.Status != StatusArchived || e.SHA256 == "" {
					t.Fatalf("rebuilt entry %+v", e)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, indexFile)); err != nil {
				t.Fatalf("the rebuilt index was not written: %v", err)
			}
		})
	}
}

func TestCorruptIndexRefusesAndTouchesNothing(t *testing.T) {
	cases := map[string]string{
		"null models":     `{"format_version":1,"active":"x","models":null}`,
		"no models":       `{"format_version":1,"active":""}`,
		"not json":        `{"format_version":1,`,
		"newer format":    `{"format_version":2,"active":"","models":{}}`,
		"null entry":      `{"format_version":1,"active":"","models":{"a":null}}`,
		"key mismatch":    `{"format_version":1,"active":"","models":{"a":{"version":"b","file":"models/b.npz"}}}`,
		"file escapes":    `{"format_version":1,"active":"","models":{"a":{"version":"a","file":"models/../../etc/passwd.npz"}}}`,
		"temp as model":   `{"format_version":1,"active":"","models":{"a":{"version":"a","file":"models/` + atomicfile.TempPrefix + `a.npz"}}}`,
		"unknown status":  `{"format_version":1,"active":"","models":{"a":{"version":"a","status":"gone","file":"models/a.npz"}}}`,
		"not a model ext": `{"format_version":1,"active":"","models":{"a":{"version":"a","status":"staged","file":"models/a.json"}}}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			r := newTestRegistry(t, dir, nil)
			addStaged(t, r, 1, time.Now())
			r.Close()
			os.WriteFile(filepath.Join(dir, indexFile), []byte(content), 0o644)
			os.WriteFile(filepath.Join(dir, "models", atomicfile.TempPrefix+"left"), []byte("x"), 0o644)
			before := treeHash(t, dir)
			_, err := Open(context.Background(), dir, testOptions())
			if !errors.Is(err, store.ErrIndexCorrupt) || !strings.Contains(err.Error(), "registry check "+dir+" -repair") {
				t.Fatalf("Open: %v, want ErrIndexCorrupt with the repair command", err)
			}
			if after := treeHash(t, dir); after != before {
				t.Fatalf("Open on a corrupt index changed the directory:\n%s\n---\n%s", before, after)
			}
		})
	}
}

func TestOrphansAdoptedUnreadableQuarantined(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	addStaged(t, r, 1, time.Now()) // a known model
	r.Close()
	models := filepath.Join(dir, "models")
	outside := filepath.Join(t.TempDir(), "secret.npz")
	os.WriteFile(outside, []byte("const:7"), 0o600)
	files := map[string]string{
		"hand.npz":          "const:3",
		"hand.joblib":       "const:4",
		"hand.joblib.json":  `{"trained_at":"2025-01-02T03:04:05Z","target":"DHA"}`,
		"my model (1).npz":  "const:5",
		"bad.npz":           "garbage",
		"boom.joblib":       "panic",
		"huge.npz":          "const:" + strings.Repeat("0", 200),
		"README.txt":        "not a model",
		"stray.joblib.json": "{}",
	}
	for n, c := range files {
		os.WriteFile(filepath.Join(models, n), []byte(c), 0o644)
	}
	os.Symlink(outside, filepath.Join(models, "link.npz"))
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(models, atomicfile.TempPrefix+"link"))

	opts := testOptions()
	opts.MaxImportBytes = 100
	r2, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	_, entries := r2.List()
	byFile := map[string]Entry{}
	for _, e := range entries {
		byFile[strings.TrimPrefix(e.File, "models/")] = e
	}
	if len(entries) != 4 {
		t.Fatalf("want the known model and 3 adopted, got %+v", entries)
	}
	// Names are taken in directory order: hand.joblib before hand.npz.
	if e := byFile["hand.npz"]; e.Version != "hand-2" || e.Status != StatusArchived || e.Algorithm != "const" {
		t.Errorf("hand.npz: %+v", e)
	}
	if e := byFile["hand.joblib"]; e.Version != "hand" || e.Status != StatusArchived || e.Target != "DHA" || e.TrainedAt.Format(time.RFC3339) != "2025-01-02T03:04:05Z" {
		t.Errorf("hand.joblib: %+v", e)
	}
	if e := byFile["my model (1).npz"]; e.Version != "my-model-1-" || !ValidVersion(e.Version) {
		t.Errorf("my model (1).npz: %+v", e)
	}
	if _, err := r2.Load(context.Background(), LoadRequest{Version: "hand", Source: SourceArchived}); err != nil {
		t.Errorf("loading an adopted model: %v", err)
	}
	for _, q := range []string{"bad.npz", "boom.joblib", "huge.npz", "link.npz"} {
		if _, err := os.Lstat(filepath.Join(dir, "quarantine", q)); err != nil {
			t.Errorf("%s not in quarantine: %v", q, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "quarantine", q+".reason.txt")); err != nil || !strings.Contains(string(b), "reason: ") {
			t.Errorf("%s: reason file %q, %v", q, b, err)
		}
		if _, err := os.Lstat(filepath.Join(models, q)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still in models/", q)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "const:7" {
		t.Errorf("the symlink's target was touched: %q", b)
	}
	for _, keep := range []string{"README.txt", "stray.joblib.json", atomicfile.TempPrefix + "link"} {
		if _, err := os.Lstat(filepath.Join(models, keep)); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	problems := strings.Join(r2.Problems(), "\n")
	for _, q := range []string{"quarantine/bad.npz", "quarantine/boom.joblib", "quarantine/huge.npz", "quarantine/link.npz"} {
		if !strings.Contains(problems, q+" ") {
			t.Errorf("problems do not name %s:\n%s", q, problems)
		}
	}
	os.Remove(filepath.Join(dir, "quarantine", "bad.npz"))
	if p := strings.Join(r2.Problems(), "\n"); strings.Contains(p, "bad.npz") {
		t.Errorf("a file removed from quarantine is still reported:\n%s", p)
	}
	// The adoption was recorded: a restart adopts nothing new.
	r2.Close()
	r3 := newTestRegistry(t, dir, nil)
	if _, again := r3.List(); len(again) != 4 {
		t.Fatalf("after restart %d entries, want 4", len(again))
	}
}

func TestQuarantineNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	r.Close()
	os.MkdirAll(filepath.Join(dir, "quarantine"), 0o755)
	os.WriteFile(filepath.Join(dir, "quarantine", "bad.npz"), []byte("first"), 0o644)
	os.WriteFile(filepath.Join(dir, "models", "bad.npz"), []byte("second"), 0o644)
	newTestRegistry(t, dir, nil)
	if b, _ := os.ReadFile(filepath.Join(dir, "quarantine", "bad.npz")); string(b) != "first" {
		t.Fatalf("quarantine/bad.npz overwritten: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "quarantine", "bad-2.npz")); string(b) != "second" {
		t.Fatalf("quarantine/bad-2.npz: %q", b)
	}
}

func TestQuarantineIsNeverASymlinkOut(t *testing.T) {
	dir := t.TempDir()
	newTestRegistry(t, dir, nil).Close()
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(dir, "quarantine"))
	os.WriteFile(filepath.Join(dir, "models", "bad.npz"), []byte("garbage"), 0o644)
	r := newTestRegistry(t, dir, nil)
	if _, err := os.Stat(filepath.Join(dir, "models", "bad.npz")); err != nil {
		t.Fatalf("the file left the registry through a symlinked quarantine/: %v", err)
	}
	if names, _ := os.ReadDir(outside); len(names) != 0 {
		t.Fatalf("files written outside the registry: %v", names)
	}
	if p := strings.Join(r.Problems(), "\n"); !strings.Contains(p, "models/bad.npz cannot be read") {
		t.Fatalf("problems: %s", p)
	}
}

func TestChecksumMismatchIsModelCorrupted(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 5, time.Now())
	// Same size, one byte changed: only the checksum can tell.
	os.WriteFile(filepath.Join(dir, "models", v+".npz"), []byte("const:6"), 0o644)
	_, err := r.Load(context.Background(), LoadRequest{Version: v})
	if !errors.Is(err, inference.ErrModelCorrupted) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("load of a changed file: %v, want MODEL_CORRUPTED naming the checksum", err)
	}
	if r.Active() != nil {
		t.Fatal("a file failing its checksum was activated")
	}
}

func TestImportNeverOverwritesAFileInModels(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	placed := filepath.Join(dir, "models", "v1.joblib")
	os.WriteFile(placed, []byte("const:1"), 0o644)
	src := filepath.Join(dir, "import", "m.joblib")
	os.WriteFile(src, []byte("const:2"), 0o644)
	_, err := r.Load(context.Background(), LoadRequest{Version: "v1", Source: SourceFile, Path: src})
	if !errors.Is(err, ErrVersionExists) {
		t.Fatalf("import over a file placed by hand: %v, want VERSION_EXISTS", err)
	}
	if b, _ := os.ReadFile(placed); string(b) != "const:1" {
		t.Fatalf("the placed file was overwritten: %q", b)
	}
}

func TestCheckFindsFlippedByteAndMissingFile(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	flipped := addStaged(t, r, 5, time.Now())
	gone := addStaged(t, r, 6, time.Now().Add(time.Second))
	good := addStaged(t, r, 7, time.Now().Add(2*time.Second))
	r.Close()
	os.WriteFile(filepath.Join(dir, "models", flipped+".npz"), []byte("const:4"), 0o644)
	os.Remove(filepath.Join(dir, "models", gone+".npz"))
	os.WriteFile(filepath.Join(dir, "models", "orphan.npz"), []byte("const:8"), 0o644)
	os.WriteFile(filepath.Join(dir, "jobs", atomicfile.TempPrefix+"job.json.1"), []byte("{"), 0o644)
	before := treeHash(t, dir, filestore.LockFile)

	rep, err := Check(context.Background(), dir, testOptions(), false)
	if err != nil {
		t.Fatal(err)
	}
	text := rep.String()
	for _, want := range []string{
		"models/" + flipped + ".npz: model " + flipped + ": ", "checksum",
		"models/" + gone + ".npz: index entry " + gone + " has no file",
		"models/orphan.npz: model file without an index entry",
		"jobs/" + atomicfile.TempPrefix + "job.json.1: temp file",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, good) || rep.Unrepaired() != 4 {
		t.Errorf("want exactly 4 findings, none about %s:\n%s", good, text)
	}
	if after := treeHash(t, dir, filestore.LockFile); after != before {
		t.Fatalf("check without -repair changed the directory:\n%s\n---\n%s", before, after)
	}

	rep, err = Check(context.Background(), dir, testOptions(), true)
	if err != nil {
		t.Fatal(err)
	}
	// What is left is the quarantined file, for the operator.
	if rep.Unrepaired() != 1 || !strings.Contains(rep.String(), "quarantine/"+flipped+".npz: in quarantine") {
		t.Fatalf("repair left problems:\n%s", rep)
	}
	rep, err = Check(context.Background(), dir, testOptions(), false)
	if err != nil {
		t.Fatal(err)
	}
	// The flipped file is now in quarantine, which stays reported.
	if len(rep.Findings) != 1 || rep.Findings[0].File != "quarantine/"+flipped+".npz" {
		t.Fatalf("after repair:\n%s", rep)
	}
	r2 := newTestRegistry(t, dir, nil)
	_, entries := r2.List()
	if len(entries) != 2 {
		t.Fatalf("after repair %+v, want %s and orphan", entries, good)
	}
}

func TestCheckRepairRebuildsCorruptIndex(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	a := addStaged(t, r, 1, time.Now())
	r.Close()
	corrupt := `{"format_version":1,"active":"x","models":null}`
	os.WriteFile(filepath.Join(dir, indexFile), []byte(corrupt), 0o644)
	rep, err := Check(context.Background(), dir, testOptions(), true)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unrepaired() != 0 || !strings.Contains(rep.String(), "set aside as index.json.corrupt-") {
		t.Fatalf("repair:\n%s", rep)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "index.json.corrupt-*"))
	if len(aside) != 1 {
		t.Fatalf("corrupt index not kept: %v", aside)
	}
	if b, _ := os.ReadFile(aside[0]); string(b) != corrupt {
		t.Fatalf("the corrupt index was altered: %q", b)
	}
	r2 := newTestRegistry(t, dir, nil)
	if _, entries := r2.List(); len(entries) != 1 || entries[0].Version != a || entries[0].Status != StatusArchived {
		t.Fatalf("rebuilt: %+v", entries)
	}
}

func TestCheckRefusesNewerIndex(t *testing.T) {
	dir := t.TempDir()
	newTestRegistry(t, dir, nil).Close()
	newer := `{"format_version":9,"models":{}}`
	os.WriteFile(filepath.Join(dir, indexFile), []byte(newer), 0o644)
	if _, err := Check(context.Background(), dir, testOptions(), true); err == nil || !strings.Contains(err.Error(), "newer server") {
		t.Fatalf("repair over a newer index: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, indexFile)); string(b) != newer {
		t.Fatal("a newer index was changed")
	}
}

func TestFreeVersion(t *testing.T) {
	r := &Registry{ix: store.NewIndex()}
	r.ix.Models["taken"] = &Entry{Version: "taken"}
	r.ix.Models["taken-2"] = &Entry{Version: "taken-2"}
	for stem, want := range map[string]string{
		"ok-1.2":                "ok-1.2",
		"taken":                 "taken-3",
		"my model (1)":          "my-model-1-",
		"..hidden":              "hidden",
		"a..b":                  "a-b",
		"日本":                    "adopted",
		strings.Repeat("x", 80): strings.Repeat("x", 56),
	} {
		if got := r.freeVersion(stem); got != want || !ValidVersion(got) {
			t.Errorf("freeVersion(%q) = %q, want %q", stem, got, want)
		}
	}
}

// TestHardLinkedLockFileIsRefused: the holder writes its PID into the lock
// file, so a lock file hard-linked to another file is refused, and that
// file keeps its content.
func TestHardLinkedLockFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(precious, filepath.Join(dir, filestore.LockFile)); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	r, err := Open(context.Background(), dir, testOptions())
	if err == nil {
		r.Close()
		t.Fatal("Open took a hard-linked lock file")
	}
	if !strings.Contains(err.Error(), "hard links") {
		t.Errorf("error does not say why: %v", err)
	}
	if b, _ := os.ReadFile(precious); string(b) != "keep me" {
		t.Errorf("the linked file now holds %q", b)
	}
}

// TestWrittenFilesAreReadable: the index and model files the registry
// writes are 0644 (less the umask), not CreateTemp's 0600.
func TestWrittenFilesAreReadable(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 1, time.Now())
	for _, name := range []string{indexFile, filepath.Join("models", v+".npz")} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o044 == 0 {
			t.Errorf("%s has mode %v: others cannot read it", name, st.Mode().Perm())
		}
	}
}

// A registry written before load, list and info were reserved may hold a
// version of that name: check reports it and -repair renames the entry,
// active pointer included, leaving the file where it is.
func TestCheckRenamesAVersionNamedLikeARoute(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 5, time.Now())
	r.Close()

	indexPath := filepath.Join(dir, "index.json")
	raw, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	var ix map[string]any
	if err := json.Unmarshal(raw, &ix); err != nil {
		t.Fatal(err)
	}
	models := ix["models"].(map[string]any)
	entry := models[v].(map[string]any)
	delete(models, v)
	entry["version"], entry["status"] = "list", "active"
	models["list"], ix["active"] = entry, "list"
	if raw, err = json.Marshal(ix); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(indexPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	rep, err := Check(context.Background(), dir, testOptions(), false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Unrepaired() != 1 || !strings.Contains(rep.String(), "version list names a route") {
		t.Fatalf("want one finding about the name list:\n%s", rep)
	}
	if rep, err = Check(context.Background(), dir, testOptions(), true); err != nil || !strings.Contains(rep.String(), "renamed to list-1") {
		t.Fatalf("repair: %v\n%s", err, rep)
	}
	r2 := newTestRegistry(t, dir, nil)
	active, entries := r2.List()
	if active != "list-1" || len(entries) != 1 || entries[0].Version != "list-1" || entries[0].File != "models/"+v+".npz" {
		t.Fatalf("after repair: active %q, entries %+v", active, entries)
	}
}
