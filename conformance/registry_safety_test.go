package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/registry/registrytest"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// These tests run a real ramanserve process over a registry directory the
// test prepares by hand, the way an operator (or an accident) would.

var (
	artifactOnce   sync.Once
	artifactParams *inference.PLSParams
	artifactErr    error
)

// writeArtifact writes a model trained here (once per run, on synthetic
// spectra) as an .npz artifact at path.
func writeArtifact(t *testing.T, path, version string) {
	t.Helper()
	artifactOnce.Do(func() {
		ds := synth.New(synth.Config{Seed: 21}).Dataset(120)
		res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1, MaxComponents: 8}, nil)
		if err != nil {
			artifactErr = err
			return
		}
		artifactParams = res.Params
	})
	if artifactErr != nil {
		t.Fatal(artifactErr)
	}
	p := *artifactParams
	p.Meta.Version = version
	var buf bytes.Buffer
	if err := inference.WriteArtifact(&buf, &p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dirHash describes every path, mode and content under dir, leaving out
// the names in skip (registrytest.TreeHash).
func dirHash(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	h, err := registrytest.TreeHash(dir, skip...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// modelFiles hashes the model files, wherever they are in the registry:
// a model file must never disappear.
func modelFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && (strings.HasSuffix(p, ".npz") || strings.HasSuffix(p, ".joblib")) {
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			out[d.Name()] = hex.EncodeToString(sum[:])
		}
		return nil
	})
	return out
}

// failedStart runs ramanserve over dir expecting it to exit without
// serving; it returns the exit error, stderr and how long it ran.
func failedStart(t *testing.T, dir string) (error, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBinary(t), "-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0",
		"-registry", dir, "-log-format", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	return err, stderr.String(), time.Since(start)
}

// registryCheck runs `ramanserve registry check DIR [args]` and returns its
// exit status and output.
func registryCheck(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBinary(t), append([]string{"registry", "check", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("registry check: %v\n%s", err, out)
	return 0, ""
}

func listStatuses(t *testing.T, p *serverProcess) (active string, statuses map[string]gen.ModelStatus) {
	t.Helper()
	res := must(p.client(t).ListModelsWithResponse(context.Background(), nil))(t)
	if res.JSON200 == nil {
		t.Fatalf("GET /model/list = %d %s", res.StatusCode(), res.Body)
	}
	statuses = map[string]gen.ModelStatus{}
	for _, m := range res.JSON200.Models {
		statuses[m.Version] = m.Status
	}
	if res.JSON200.Active != nil {
		active = *res.JSON200.Active
	}
	return active, statuses
}

// registryWithModels prepares a registry with two adopted .npz models,
// "alpha" (active) and "beta", and a stopped server.
func registryWithModels(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeArtifact(t, filepath.Join(dir, "models", "alpha.npz"), "whatever")
	writeArtifact(t, filepath.Join(dir, "models", "beta.npz"), "whatever")
	p := startProcess(t, dir)
	loadVersion(t, p.client(t), "alpha")
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
	return dir
}

// TestRegistryIndexLossRebuildsList: index.json deleted, emptied, or with
// a null models list, then restart. No model file is lost; the list is
// rebuilt from the files (for the null list, which is corrupt, after the
// server refuses to start and the operator runs registry check -repair).
func TestRegistryIndexLossRebuildsList(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	for _, tc := range []struct {
		name   string
		damage func(path string) error
	}{
		{"deleted", os.Remove},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{"null models", func(p string) error {
			return os.WriteFile(p, []byte(`{"format_version":1,"active":"x","models":null}`), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := registryWithModels(t)
			files := modelFiles(t, dir)
			if len(files) != 2 {
				t.Fatalf("model files before: %v", files)
			}
			if err := tc.damage(filepath.Join(dir, "index.json")); err != nil {
				t.Fatal(err)
			}
			if tc.name == "null models" {
				before := dirHash(t, dir, ".ramanserve.lock")
				err, stderr, _ := failedStart(t, dir)
				if err == nil || !strings.Contains(stderr, "models list is null") || !strings.Contains(stderr, "registry check "+dir+" -repair") {
					t.Fatalf("start on a null models list: %v, want a refusal naming the repair command:\n%s", err, stderr)
				}
				if after := dirHash(t, dir, ".ramanserve.lock"); after != before {
					t.Fatalf("the refused start changed the registry:\n%s\n---\n%s", before, after)
				}
				code, out := registryCheck(t, dir, "-repair")
				if code != 0 || !strings.Contains(out, "set aside as index.json.corrupt-") {
					t.Fatalf("registry check -repair: exit %d\n%s", code, out)
				}
			}
			p := startProcess(t, dir)
			active, statuses := listStatuses(t, p)
			if active != "" || len(statuses) != 2 || statuses["alpha"] != gen.ModelStatusArchived || statuses["beta"] != gen.ModelStatusArchived {
				t.Fatalf("rebuilt list: active %q, %v; want alpha and beta archived", active, statuses)
			}
			if got := modelFiles(t, dir); len(got) != 2 || got["alpha.npz"] != files["alpha.npz"] || got["beta.npz"] != files["beta.npz"] {
				t.Fatalf("model files after restart: %v, want %v", got, files)
			}
			loadVersion(t, p.client(t), "beta") // the rebuilt entries serve
		})
	}
}

// TestRegistryAdoptsHandCopiedModels: a .npz and a .joblib (with its
// sidecar) copied into models/ by hand survive restarts and are listed as
// archived; unreadable ones land in quarantine/ and health names them.
func TestRegistryAdoptsHandCopiedModels(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	os.MkdirAll(models, 0o755)
	writeArtifact(t, filepath.Join(models, "hand-npz.npz"), "trained-elsewhere")
	copyFile(t, filepath.Join(sklearnFixtures, "realistic_2048.joblib"), filepath.Join(models, "hand-sk.joblib"))
	copyFile(t, filepath.Join(sklearnFixtures, "one_target_dha.joblib"), filepath.Join(models, "dha.joblib"))
	os.WriteFile(filepath.Join(models, "dha.joblib.json"), []byte(`{"target":"DHA","trained_at":"2025-05-06T07:08:09Z"}`), 0o644)
	// Corrupt copies: a truncated .joblib and an .npz with a flipped byte.
	b, _ := os.ReadFile(filepath.Join(sklearnFixtures, "plain_scaled.joblib"))
	os.WriteFile(filepath.Join(models, "cut.joblib"), b[:len(b)/2], 0o644)
	writeArtifact(t, filepath.Join(models, "flipped.npz"), "x")
	npz, _ := os.ReadFile(filepath.Join(models, "flipped.npz"))
	npz[len(npz)/2] ^= 0xff
	os.WriteFile(filepath.Join(models, "flipped.npz"), npz, 0o644)

	for restart := 0; restart < 2; restart++ {
		p := startProcess(t, dir)
		active, statuses := listStatuses(t, p)
		want := map[string]gen.ModelStatus{"hand-npz": gen.ModelStatusArchived, "hand-sk": gen.ModelStatusArchived, "dha": gen.ModelStatusArchived}
		if active != "" || len(statuses) != len(want) {
			t.Fatalf("start %d: active %q, %v; want %v", restart, active, statuses, want)
		}
		for v, s := range want {
			if statuses[v] != s {
				t.Fatalf("start %d: %s is %q, want %s", restart, v, statuses[v], s)
			}
		}
		for _, q := range []string{"cut.joblib", "flipped.npz"} {
			if _, err := os.Stat(filepath.Join(dir, "quarantine", q)); err != nil {
				t.Fatalf("%s not in quarantine: %v", q, err)
			}
			if reason, err := os.ReadFile(filepath.Join(dir, "quarantine", q+".reason.txt")); err != nil || !strings.Contains(string(reason), "reason: ") {
				t.Fatalf("%s: no reason file: %v", q, err)
			}
		}
		h := must(p.client(t).GetHealthWithResponse(context.Background()))(t).JSON200
		if h == nil || h.Status != "degraded" || h.DegradedReasons == nil ||
			!strings.Contains(strings.Join(*h.DegradedReasons, "\n"), "quarantine/cut.joblib") ||
			!strings.Contains(strings.Join(*h.DegradedReasons, "\n"), "quarantine/flipped.npz") {
			t.Fatalf("start %d: health %+v, want degraded naming both quarantined files", restart, h)
		}
		if restart == 1 {
			loadVersion(t, p.client(t), "hand-sk")
			_, pr := predictOnce(t, dialZMQ(t, p.zmq), synth.Axis(), synth.New(synth.Config{Seed: 4}).Next().Intensities)
			if pr.ModelVersion != "hand-sk" {
				t.Fatalf("predict names %s, want hand-sk", pr.ModelVersion)
			}
			loadVersion(t, p.client(t), "dha")
		}
		if err := p.terminate(t); err != nil {
			t.Fatalf("exit: %v", err)
		}
	}
	// Once the operator deals with the quarantined files, health is ok.
	os.RemoveAll(filepath.Join(dir, "quarantine"))
	p := startProcess(t, dir)
	h := must(p.client(t).GetHealthWithResponse(context.Background()))(t).JSON200
	if h == nil || h.Status != "ok" {
		t.Fatalf("health after the quarantine was emptied: %+v", h)
	}
}

// TestRegistrySecondProcessRefused: a second ramanserve on the same
// registry exits non-zero within 1 s, naming the holder's PID, and changes
// nothing on disk.
func TestRegistrySecondProcessRefused(t *testing.T) {
	dir := registryWithModels(t)
	p := startProcess(t, dir)
	// What a start-up would touch: a temp name it would sweep, an index
	// it would rewrite to adopt a file copied in while the first serves.
	os.WriteFile(filepath.Join(dir, "models", ".ramanserve-tmp-in-progress"), []byte("a write in progress"), 0o644)
	os.WriteFile(filepath.Join(dir, "models", "late.npz"), []byte("copied in while serving"), 0o644)
	before := dirHash(t, dir)

	err, stderr, took := failedStart(t, dir)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("second process: %v, want a non-zero exit\n%s", err, stderr)
	}
	// At once, not waiting for the first process's lock, which it holds
	// until the test ends; 10 s is a margin for starting a process on a
	// machine busy with a second make test.
	if took > 10*time.Second {
		t.Errorf("second process took %v to give up, want at once", took)
	}
	if pid := strconv.Itoa(p.cmd.Process.Pid); !strings.Contains(stderr, "locked by process "+pid) {
		t.Errorf("the refusal does not name the holder's pid %s:\n%s", pid, stderr)
	}
	if after := dirHash(t, dir); after != before {
		t.Fatalf("the refused second process changed the registry:\n%s\n---\n%s", before, after)
	}
	code, out := registryCheck(t, dir, "-repair")
	if code != 2 || !strings.Contains(out, "locked by process") {
		t.Fatalf("registry check -repair while serving: exit %d, want 2 (locked)\n%s", code, out)
	}
	if after := dirHash(t, dir); after != before {
		t.Fatal("a refused registry check changed the registry")
	}
	if res := must(p.client(t).GetHealthWithResponse(context.Background()))(t); res.StatusCode() != 200 {
		t.Fatalf("the first server stopped answering: %d", res.StatusCode())
	}
}

// TestRegistryCheckFindsDamage: `ramanserve registry check` finds a
// flipped byte in an artifact and an index entry without a file, exits
// non-zero, and -repair leaves a registry that starts clean.
func TestRegistryCheckFindsDamage(t *testing.T) {
	dir := registryWithModels(t)
	if code, out := registryCheck(t, dir); code != 0 {
		t.Fatalf("check of a sound registry: exit %d\n%s", code, out)
	}
	alpha := filepath.Join(dir, "models", "alpha.npz")
	b, _ := os.ReadFile(alpha)
	b[len(b)/3] ^= 0x01
	os.WriteFile(alpha, b, 0o644)
	os.Remove(filepath.Join(dir, "models", "beta.npz"))

	code, out := registryCheck(t, dir)
	if code != 1 || !strings.Contains(out, "models/alpha.npz: model alpha:") || !strings.Contains(out, "checksum") ||
		!strings.Contains(out, "models/beta.npz: index entry beta has no file") {
		t.Fatalf("check: exit %d, want 1 naming the flipped alpha.npz and the missing beta.npz\n%s", code, out)
	}
	code, out = registryCheck(t, dir, "-repair")
	if code != 1 || !strings.Contains(out, "moved to quarantine/alpha.npz") || !strings.Contains(out, "entry dropped") {
		t.Fatalf("repair: exit %d (1: the quarantined file stays for the operator)\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "quarantine", "alpha.npz")); err != nil {
		t.Fatalf("the damaged file was not kept: %v", err)
	}
	p := startProcess(t, dir)
	if active, statuses := listStatuses(t, p); active != "" || len(statuses) != 0 {
		t.Fatalf("after repair: active %q, %v", active, statuses)
	}
}

// TestRegistryHostileFilesAtStart: a real process starts, serves, and
// loses nothing over a registry where someone planted a hard link as the
// lock file (refused, the linked file untouched), or in jobs/ a FIFO, a
// directory and a symbolic link to /dev/zero named like job records
// (skipped: start-up neither hangs, nor fails, nor reads without end).
func TestRegistryHostileFilesAtStart(t *testing.T) {
	dir := registryWithModels(t)
	precious := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, ".ramanserve.lock")
	os.Remove(lock)
	if err := os.Link(precious, lock); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	err, stderr, took := failedStart(t, dir)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(stderr, "hard links") || took > 5*time.Second {
		t.Fatalf("start over a hard-linked lock file: %v after %v, want a non-zero exit naming the hard links\n%s", err, took, stderr)
	}
	if b, _ := os.ReadFile(precious); string(b) != "keep me" {
		t.Fatalf("the file linked as the lock now holds %q", b)
	}
	os.Remove(lock)

	jobs := filepath.Join(dir, "jobs")
	os.MkdirAll(jobs, 0o755)
	if err := syscall.Mkfifo(filepath.Join(jobs, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(jobs, "evil.json"), 0o755)
	os.Symlink("/dev/zero", filepath.Join(jobs, "zero.json"))
	p := startProcess(t, dir) // fails the test if the process does not serve within 30 s
	if res := must(p.client(t).GetHealthWithResponse(context.Background()))(t); res.StatusCode() != 200 {
		t.Fatalf("health %d over planted job files", res.StatusCode())
	}
	if list := must(p.client(t).ListModelsWithResponse(context.Background(), nil))(t).JSON200; list == nil || len(list.Models) == 0 {
		t.Fatal("the models are gone")
	}
	for _, name := range []string{"fifo.json", "evil.json", "zero.json"} {
		if _, err := os.Lstat(filepath.Join(jobs, name)); err != nil {
			t.Errorf("the planted %s was removed: %v", name, err)
		}
	}
}
