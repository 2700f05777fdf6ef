package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/registry/store"
)

func addWithLineage(t *testing.T, r *Registry, value float64, at time.Time) string {
	t.Helper()
	var rmse, r2 inference.Breakdown
	rmse.Set(inference.EPA, 0.25)
	rmse.Set(inference.DHA, 0.5)
	r2.Set(inference.EPA, 0.97)
	v, _, err := r.AddStaged(context.Background(), StagedModel{
		Ext: ".npz", TrainedAt: at, TrainedSamples: 120, Algorithm: "const",
		Operator: "op-7", SourceBatches: []string{"b1", "b2"}, Notes: "n",
		JobID: "job-1", TrainingCSVSHA256: strings.Repeat("ab", 32), TrainingRows: 120,
		Metrics: &Metrics{RMSE: rmse, R2: r2, Components: 6},
		Write:   func(_ string, w io.Writer) error { _, err := fmt.Fprintf(w, "const:%g", value); return err },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDescribeAnswersFromTheIndex: an entry's lineage and metrics are
// recorded when it is staged and read back, also after a restart, without
// opening the model file.
func TestDescribeAnswersFromTheIndex(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	v := addWithLineage(t, r, 1, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	check := func(r *Registry) {
		t.Helper()
		e, err := r.Describe(v)
		if err != nil {
			t.Fatal(err)
		}
		if e.Status != StatusStaged || e.Operator != "op-7" || strings.Join(e.SourceBatches, ",") != "b1,b2" || e.JobID != "job-1" ||
			e.TrainingCSVSHA256 != strings.Repeat("ab", 32) || e.TrainingRows != 120 || e.SHA256 == "" || e.SizeBytes != int64(len("const:1")) {
			t.Fatalf("entry = %+v", e)
		}
		if e.Metrics == nil || e.Metrics.Components != 6 || e.Metrics.RMSE.Value[inference.DHA] != 0.5 || !e.Metrics.R2.Valid[inference.EPA] || e.Metrics.R2.Valid[inference.DPA] {
			t.Fatalf("metrics = %+v", e.Metrics)
		}
	}
	check(r)
	// The file is not opened: remove it and Describe still answers.
	os.Remove(filepath.Join(r.Dir(), "models", v+".npz"))
	check(r)
	r2 := reopen(t, r, nil)
	check(r2)
	if _, err := r2.Describe("nope"); !errors.Is(err, ErrModelNotFound) {
		t.Fatalf("unknown version: %v", err)
	}
}

func modelFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "models"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// TestDeleteStagedArchivedNotActive: staged and archived versions are
// removed from the index and disk (and stay gone after a restart, not
// adopted back); the active one and unknown ones are refused.
func TestDeleteStagedArchivedNotActive(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b, c := addStaged(t, r, 1, at), addStaged(t, r, 2, at.Add(time.Second)), addStaged(t, r, 3, at.Add(2*time.Second))
	for _, v := range []string{a, b} { // a ends archived, b active
		if _, err := r.Load(ctx, LoadRequest{Version: v, Source: SourceStaged}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Delete(ctx, b); !errors.Is(err, ErrModelActive) {
		t.Fatalf("delete active: %v", err)
	}
	if err := r.Delete(ctx, "never"); !errors.Is(err, ErrModelNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
	for _, v := range []string{a, c} {
		if err := r.Delete(ctx, v); err != nil {
			t.Fatalf("delete %s: %v", v, err)
		}
		if _, err := r.Describe(v); !errors.Is(err, ErrModelNotFound) {
			t.Fatalf("%s still described: %v", v, err)
		}
	}
	if files := modelFiles(t, dir); len(files) != 1 || files[0] != b+".npz" {
		t.Fatalf("models/ holds %v, want only %s.npz", files, b)
	}
	if err := r.Delete(ctx, a); !errors.Is(err, ErrModelNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	r2 := reopen(t, r, nil)
	if _, entries := r2.List(); len(entries) != 1 || entries[0].Version != b || entries[0].Status != StatusActive {
		t.Fatalf("after restart: %+v", entries)
	}
	if activeValue(t, r2) != 2 {
		t.Fatal("active model changed")
	}
}

// TestDeleteImportKeepsTheOriginal: deleting an imported version removes
// the registry's copy and its sidecar, never the file it was imported from.
func TestDeleteImportKeepsTheOriginal(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	ctx := context.Background()
	src := filepath.Join(dir, "import", "m.joblib")
	os.WriteFile(src, []byte("const:4"), 0o644)
	os.WriteFile(src+".json", []byte(`{"target":"DHA"}`), 0o644)
	if _, err := r.Load(ctx, LoadRequest{Version: "imp", Source: SourceFile, Path: src}); err != nil {
		t.Fatal(err)
	}
	if e, err := r.Describe("imp"); err != nil || e.ImportedFrom != src || e.Target != "DHA" || e.JobID != "" {
		t.Fatalf("imported entry: %+v %v", e, err)
	}
	other := addStaged(t, r, 1, time.Now())
	if _, err := r.Load(ctx, LoadRequest{Version: other, Source: SourceStaged}); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "imp"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"imp.joblib", "imp.joblib.json"} {
		if _, err := os.Lstat(filepath.Join(dir, "models", name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("models/%s: %v", name, err)
		}
	}
	for _, p := range []string{src, src + ".json"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the import's original %s was touched: %v", p, err)
		}
	}
}

// TestDeleteTakesTheLoadLock: while a load runs, a delete is refused
// with ErrLoadInProgress and changes nothing.
func TestDeleteTakesTheLoadLock(t *testing.T) {
	dir := t.TempDir()
	gate := newLoadGate()
	r, err := Open(context.Background(), dir, Options{Openers: map[string]OpenFunc{".npz": openConst(gate)}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a, b := addStaged(t, r, 1, time.Now()), addStaged(t, r, 2, time.Now().Add(time.Second))
	done := make(chan error, 1)
	go func() {
		_, err := r.Load(context.Background(), LoadRequest{Version: a, Source: SourceStaged})
		done <- err
	}()
	gate.waitEntered(t) // the load holds the lock, reading the file
	if err := r.Delete(context.Background(), b); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("delete during a load: %v", err)
	}
	close(gate.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := r.Describe(b); err != nil {
		t.Fatalf("refused delete changed the index: %v", err)
	}
	if err := r.Delete(context.Background(), b); err != nil {
		t.Fatalf("delete after the load: %v", err)
	}
}

// TestDeleteNeverFollowsWhatWasSwappedIn: a symlink put in place of the
// model file is left as it is (its target untouched); a file two entries
// of a hand-edited index share stays for the other entry.
func TestDeleteNeverFollowsWhatWasSwappedIn(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 1, time.Now())
	outside := filepath.Join(t.TempDir(), "precious.npz")
	os.WriteFile(outside, []byte("const:9"), 0o644)
	p := filepath.Join(dir, "models", v+".npz")
	os.Remove(p)
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "const:9" {
		t.Fatalf("the symlink's target: %q %v", b, err)
	}
	if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was not left in place: %v", err)
	}
	os.Remove(p)

	// Two entries naming one file (a hand-edited index).
	w := addStaged(t, r, 2, time.Now())
	r.Close()
	editIndexOnDisk(t, dir, func(ix *store.Index) {
		twin := *ix.Models[w]
		twin.Version = "twin"
		ix.Models["twin"] = &twin
	})
	r2 := newTestRegistry(t, dir, nil)
	if err := r2.Delete(context.Background(), "twin"); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Load(context.Background(), LoadRequest{Version: w, Source: SourceStaged}); err != nil {
		t.Fatalf("the other entry lost its file: %v", err)
	}
}

// TestIndexNamingAFileOutsideModelsIsRefused: a hand-edited entry whose
// file lies outside models/ never reaches Delete: Open refuses the index.
func TestIndexNamingAFileOutsideModelsIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{
		`{"format_version":1,"active":"","models":{"x":{"version":"x","status":"archived","file":"import/x.joblib"}}}`,
		`{"format_version":1,"active":"","models":{},"removing":[{"file":"../index.json","size_bytes":1}]}`,
	} {
		os.WriteFile(filepath.Join(dir, indexFile), []byte(body), 0o644)
		if _, err := Open(context.Background(), dir, Options{}); !errors.Is(err, store.ErrIndexCorrupt) {
			t.Fatalf("Open over %s: %v", body, err)
		}
	}
}

// TestReservedVersionNames: load, list and info are never version names:
// an import is refused, adoption picks <name>-1.
func TestReservedVersionNames(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	src := filepath.Join(dir, "import", "m.joblib")
	os.WriteFile(src, []byte("const:4"), 0o644)
	for _, v := range []string{"load", "list", "info", "shadow"} {
		_, err := r.Load(context.Background(), LoadRequest{Version: v, Source: SourceFile, Path: src})
		if !errors.Is(err, ErrReservedVersion) {
			t.Fatalf("import as %q: %v", v, err)
		}
	}
	if files := modelFiles(t, dir); len(files) != 0 {
		t.Fatalf("refused imports left %v", files)
	}
	os.WriteFile(filepath.Join(dir, "models", "list.npz"), []byte("const:1"), 0o644)
	r2 := reopen(t, r, nil)
	if _, entries := r2.List(); len(entries) != 1 || entries[0].Version != "list-1" {
		t.Fatalf("adopted: %+v", entries)
	}
}

// Crash between a delete's index write and its file removal, by kill -9
// at that very point: the child process below runs the delete and kills
// itself in the window.
const crashChildEnv = "RAMANSERVE_REGISTRY_DELETE_CRASH_DIR"

func TestDeleteCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("child process of TestDeleteSurvivesKill9")
	}
	r, err := Open(context.Background(), dir, Options{Openers: map[string]OpenFunc{".npz": openConst(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	r.deleteCommitted = func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	_, entries := r.List()
	for _, e := range entries {
		if e.Status != StatusActive {
			r.Delete(context.Background(), e.Version)
		}
	}
	t.Fatal("not killed")
}

// TestDeleteSurvivesKill9: a process killed (SIGKILL) after the index
// dropped the entry but before the file was unlinked leaves a file the
// next start removes instead of adopting it back as archived; a file
// replaced by other content since is adopted, not removed.
func TestDeleteSurvivesKill9(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		t.Run(fmt.Sprintf("replaced=%v", replaced), func(t *testing.T) {
			dir := t.TempDir()
			r := newTestRegistry(t, dir, nil)
			v := addStaged(t, r, 1, time.Now())
			r.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestDeleteCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v (want killed by SIGKILL)", err)
			}
			p := filepath.Join(dir, "models", v+".npz")
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("the kill came after the unlink, not in the window: %v", err)
			}
			if replaced {
				os.WriteFile(p, []byte("const:7"), 0o644)
			} else {
				// registry check names the file as a deleted version's,
				// not as a file without an entry.
				rep, err := Check(context.Background(), dir, Options{Openers: map[string]OpenFunc{".npz": openConst(nil)}}, false)
				if err != nil || len(rep.Findings) != 1 || !strings.Contains(rep.Findings[0].Problem, "deleted version") {
					t.Fatalf("check: %v %+v", err, rep)
				}
			}
			r2 := newTestRegistry(t, dir, nil)
			_, entries := r2.List()
			_, statErr := os.Stat(p)
			switch {
			case !replaced && (len(entries) != 0 || !errors.Is(statErr, os.ErrNotExist)):
				t.Fatalf("deleted version came back: entries %+v, file %v", entries, statErr)
			case replaced && (len(entries) != 1 || entries[0].Status != StatusArchived || statErr != nil):
				t.Fatalf("replaced file not adopted: entries %+v, file %v", entries, statErr)
			}
			raw, _ := os.ReadFile(filepath.Join(dir, indexFile))
			if strings.Contains(string(raw), `"removing"`) {
				t.Fatalf("index still lists removals: %s", raw)
			}
		})
	}
}

// TestDeleteRemovesOnlyTheBytesItRecorded: a file that no longer holds
// the bytes the entry recorded (replaced by hand before the delete, or
// in the window between the index write and the unlink) is not the
// registry's to remove: it stays, with its sidecar, and the next start
// adopts it, as start-up does for a crash in that window.
func TestDeleteRemovesOnlyTheBytesItRecorded(t *testing.T) {
	for _, when := range []string{"before", "window"} {
		t.Run(when, func(t *testing.T) {
			dir := t.TempDir()
			r := newTestRegistry(t, dir, nil)
			v := addStaged(t, r, 1, time.Now())
			p := filepath.Join(dir, "models", v+".npz")
			replace := func() {
				if err := os.WriteFile(p, []byte("const:8"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if when == "before" {
				replace()
			} else {
				r.deleteCommitted = replace
			}
			if err := r.Delete(context.Background(), v); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Describe(v); !errors.Is(err, ErrModelNotFound) {
				t.Fatalf("entry still there: %v", err)
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != "const:8" {
				t.Fatalf("the replacing file was removed: %q %v", b, err)
			}
			r2 := reopen(t, r, nil)
			if _, entries := r2.List(); len(entries) != 1 || entries[0].Status != StatusArchived || entries[0].File != "models/"+v+".npz" {
				t.Fatalf("replacing file not adopted: %+v", entries)
			}
		})
	}
}

// tmpfsDir mounts a small tmpfs for the test, or skips without root or
// CAP_SYS_ADMIN.
func tmpfsDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if err := exec.Command("umount", dir).Run(); err != nil {
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// TestDeleteOnAFullOrReadOnlyDisk: a delete whose index write the disk
// refuses (ENOSPC, EROFS) fails with that errno (507 on the HTTP side)
// and deletes nothing: the entry and its file stay, and the version still
// loads once the disk takes writes.
func TestDeleteOnAFullOrReadOnlyDisk(t *testing.T) {
	disk := tmpfsDir(t)
	dir := filepath.Join(disk, "registry")
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 1, time.Now())
	p := filepath.Join(dir, "models", v+".npz")
	stillThere := func(errno syscall.Errno, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrRegistry) || !errors.Is(err, errno) {
			t.Fatalf("delete: %v, want ErrRegistry wrapping %v", err, errno)
		}
		if _, err := r.Describe(v); err != nil {
			t.Fatalf("entry gone after a failed delete: %v", err)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != "const:1" {
			t.Fatalf("file after a failed delete: %q %v", b, err)
		}
	}

	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for chunk := make([]byte, 4096); ; {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	stillThere(syscall.ENOSPC, r.Delete(context.Background(), v))
	os.Remove(filler)

	if out, err := exec.Command("mount", "--bind", dir, dir).CombinedOutput(); err != nil {
		t.Fatalf("bind mount: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "remount,ro,bind", dir).CombinedOutput(); err != nil {
		exec.Command("umount", dir).Run()
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	err = r.Delete(context.Background(), v)
	if out, uerr := exec.Command("umount", dir).CombinedOutput(); uerr != nil {
		t.Fatalf("umount: %v: %s", uerr, out)
	}
	stillThere(syscall.EROFS, err)

	if _, err := r.Load(context.Background(), LoadRequest{Version: v, Source: SourceStaged}); err != nil {
		t.Fatalf("load after the failed deletes: %v", err)
	}
}

// TestDeletedNameIsReusable: a deleted version's name can be imported
// again, with the same bytes or others, and the new model is kept across
// a restart (the deleted file's removal record does not take it).
func TestDeletedNameIsReusable(t *testing.T) {
	for _, content := range []string{"const:4", "const:5"} {
		t.Run(content, func(t *testing.T) {
			dir := t.TempDir()
			r := newTestRegistry(t, dir, nil)
			ctx := context.Background()
			src := filepath.Join(dir, "import", "m.joblib")
			os.WriteFile(src, []byte("const:4"), 0o644)
			if _, err := r.Load(ctx, LoadRequest{Version: "imp", Source: SourceFile, Path: src}); err != nil {
				t.Fatal(err)
			}
			other := addStaged(t, r, 1, time.Now())
			if _, err := r.Load(ctx, LoadRequest{Version: other, Source: SourceStaged}); err != nil {
				t.Fatal(err)
			}
			if err := r.Delete(ctx, "imp"); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(src, []byte(content), 0o644)
			if _, err := r.Load(ctx, LoadRequest{Version: "imp", Source: SourceFile, Path: src}); err != nil {
				t.Fatalf("import under the deleted name: %v", err)
			}
			r2 := reopen(t, r, nil)
			if got := activeValue(t, r2); fmt.Sprint(got) != strings.TrimPrefix(content, "const:") {
				t.Fatalf("active after restart: %v, want %s", got, content)
			}
			if e, err := r2.Describe("imp"); err != nil || e.Status != StatusActive {
				t.Fatalf("imp after restart: %+v %v", e, err)
			}
		})
	}
}

// TestCheckRepairAfterACrashMidDelete: `registry check -repair` after a
// process died between a delete's index write and its unlink removes the
// deleted version's file (it still has the recorded bytes) and clears the
// removal list; the next start lists nothing and adopts nothing.
func TestCheckRepairAfterACrashMidDelete(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	v := addStaged(t, r, 1, time.Now())
	r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeleteCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	if err := cmd.Run(); err == nil {
		t.Fatal("child not killed")
	}
	p := filepath.Join(dir, "models", v+".npz")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the kill came after the unlink: %v", err)
	}
	opts := Options{Openers: map[string]OpenFunc{".npz": openConst(nil)}}
	if _, err := Check(context.Background(), dir, opts, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("repair left the deleted version's file: %v", err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, indexFile))
	if strings.Contains(string(raw), `"removing"`) {
		t.Fatalf("index still lists removals after repair: %s", raw)
	}
	if rep, err := Check(context.Background(), dir, opts, false); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("check after repair: %v %+v", err, rep)
	}
	r2 := newTestRegistry(t, dir, nil)
	if _, entries := r2.List(); len(entries) != 0 {
		t.Fatalf("after repair and restart: %+v", entries)
	}
}
