package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
)

// recordingFollower is a ShadowFollower that keeps every call, and the
// active version the registry serves at the moment of each, so tests can
// check the order of the calls against the index writes.
type recordingFollower struct {
	r       *Registry
	mu      sync.Mutex
	events  []string
	current string // the shadow it runs now, "" for none
	fail    error  // returned by Set when non-nil
}

func (f *recordingFollower) Set(m inference.Model) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	v := m.Metadata().Version
	if a := f.r.Active(); a != nil && a.Metadata().Version == v {
		f.events = append(f.events, "set the active model "+v)
	}
	f.events = append(f.events, "set "+v)
	f.current = v
	return nil
}

func (f *recordingFollower) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := f.r.Active(); a != nil && a.Metadata().Version == f.current {
		f.events = append(f.events, "cleared after "+f.current+" became active")
	}
	f.events = append(f.events, "clear")
	f.current = ""
}

func (f *recordingFollower) state() (current string, events []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current, slices.Clone(f.events)
}

func follow(t *testing.T, r *Registry) *recordingFollower {
	t.Helper()
	f := &recordingFollower{r: r}
	if err := r.FollowShadow(f); err != nil {
		t.Fatalf("FollowShadow: %v", err)
	}
	return f
}

const indexFile = filestore.IndexFile

// indexOnDisk decodes index.json, also while the registry holds the
// directory: what the next start reads.
func indexOnDisk(t *testing.T, dir string) *store.Index {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, indexFile))
	if err != nil {
		t.Fatalf("read index: %v", err)
	}
	var doc struct {
		Active, Shadow string
		Models         map[string]*Entry
		Removing       []store.Removal
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("decode index: %v", err)
	}
	return &store.Index{Active: doc.Active, Shadow: doc.Shadow, Models: doc.Models, Removing: doc.Removing}
}

// editIndexOnDisk changes the index of a closed registry through its
// store, as a hand edit would leave it.
func editIndexOnDisk(t *testing.T, dir string, edit func(ix *store.Index)) {
	t.Helper()
	files, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	ctx := context.Background()
	ix, rev, err := files.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	edit(ix)
	if _, err := files.CommitIndex(ctx, rev, ix); err != nil {
		t.Fatal(err)
	}
}

func load(t *testing.T, r *Registry, v string, src Source) {
	t.Helper()
	if _, err := r.Load(context.Background(), LoadRequest{Version: v, Source: src}); err != nil {
		t.Fatalf("load %s: %v", v, err)
	}
}

func TestSetShadowChecksLikeALoad(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	f := follow(t, r)
	active := addStaged(t, r, 1, time.Unix(1000, 0))
	staged := addStaged(t, r, 2, time.Unix(2000, 0))
	broken := addStaged(t, r, 3, time.Unix(3000, 0))
	load(t, r, active, SourceStaged)
	// Same size, other bytes: the checksum a load verifies fails.
	if err := os.WriteFile(filepath.Join(dir, "models", broken+".npz"), []byte("const:4"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		version string
		want    error
	}{
		{"no-such-version", ErrModelNotFound},
		{"../escape", ErrModelNotFound},
		{active, ErrShadowIsActive},
		{broken, inference.ErrModelCorrupted},
	} {
		if err := r.SetShadow(ctx, tc.version); !errors.Is(err, tc.want) {
			t.Errorf("SetShadow(%q) = %v, want %v", tc.version, err, tc.want)
		}
	}
	if r.Shadow() != "" || indexOnDisk(t, dir).Shadow != "" {
		t.Fatalf("a refused shadow was recorded: %q", r.Shadow())
	}
	if err := r.SetShadow(ctx, staged); err != nil {
		t.Fatalf("SetShadow: %v", err)
	}
	if r.Shadow() != staged || indexOnDisk(t, dir).Shadow != staged {
		t.Fatalf("shadow %q, index %q, want %q", r.Shadow(), indexOnDisk(t, dir).Shadow, staged)
	}
	// The shadow is not touched by being one: still staged, active unchanged.
	if e, _ := r.Describe(staged); e.Status != StatusStaged || r.Active().Metadata().Version != active {
		t.Fatalf("status %s, active %s", e.Status, r.Active().Metadata().Version)
	}
	if cur, ev := f.state(); cur != staged || !slices.Equal(ev, []string{"clear", "set " + staged}) {
		t.Fatalf("follower %q %v", cur, ev)
	}
	if err := r.ClearShadow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.ClearShadow(ctx); err != nil { // idempotent, nothing told
		t.Fatal(err)
	}
	if cur, ev := f.state(); cur != "" || !slices.Equal(ev, []string{"clear", "set " + staged, "clear"}) {
		t.Fatalf("follower %q %v", cur, ev)
	}
	if r.Shadow() != "" || indexOnDisk(t, dir).Shadow != "" {
		t.Fatal("shadow not cleared")
	}
	raw, _ := os.ReadFile(filepath.Join(dir, indexFile))
	if strings.Contains(string(raw), `"shadow"`) {
		t.Fatalf("an empty shadow is written: %s", raw)
	}
}

// TestPromotingTheShadowClearsItInTheSameWrite: the load that makes the
// shadow active writes an index with the new active version and no
// shadow (one write: a crash leaves either both old or both new), and the
// follower is cleared before the promoted model serves, so no spectrum is
// scored by a model shadowing itself.
func TestPromotingTheShadowClearsItInTheSameWrite(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	f := follow(t, r)
	a := addStaged(t, r, 1, time.Unix(1000, 0))
	b := addStaged(t, r, 2, time.Unix(2000, 0))
	c := addStaged(t, r, 3, time.Unix(3000, 0))
	load(t, r, a, SourceStaged)
	ctx := context.Background()
	if err := r.SetShadow(ctx, b); err != nil {
		t.Fatal(err)
	}
	// Promoting another version leaves the shadow.
	load(t, r, c, SourceStaged)
	if r.Shadow() != b {
		t.Fatalf("shadow %q after promoting %s, want %s", r.Shadow(), c, b)
	}
	load(t, r, b, SourceStaged)
	ix := indexOnDisk(t, dir)
	if ix.Active != b || ix.Shadow != "" || r.Shadow() != "" {
		t.Fatalf("after promoting the shadow: index active %q shadow %q, Shadow() %q", ix.Active, ix.Shadow, r.Shadow())
	}
	want := []string{"clear", "set " + b, "clear"}
	if cur, ev := f.state(); cur != "" || !slices.Equal(ev, want) {
		t.Fatalf("follower %q %v, want %v", cur, ev, want)
	}
	// Now b is active: it cannot shadow itself, a can.
	if err := r.SetShadow(ctx, b); !errors.Is(err, ErrShadowIsActive) {
		t.Fatalf("SetShadow(active) = %v", err)
	}
	if err := r.SetShadow(ctx, a); err != nil {
		t.Fatal(err)
	}
	r = reopen(t, r, nil)
	if r.Shadow() != a {
		t.Fatalf("shadow after restart %q, want %s", r.Shadow(), a)
	}
}

func TestDeletingTheShadowClearsIt(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	f := follow(t, r)
	a := addStaged(t, r, 1, time.Unix(1000, 0))
	b := addStaged(t, r, 2, time.Unix(2000, 0))
	load(t, r, a, SourceStaged)
	ctx := context.Background()
	if err := r.SetShadow(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	if ix := indexOnDisk(t, dir); ix.Shadow != "" || r.Shadow() != "" || ix.Models[b] != nil {
		t.Fatalf("index after deleting the shadow: shadow %q, entry %v", ix.Shadow, ix.Models[b])
	}
	if cur, ev := f.state(); cur != "" || !slices.Equal(ev, []string{"clear", "set " + b, "clear"}) {
		t.Fatalf("follower %q %v", cur, ev)
	}
}

// TestRestartRestoresTheShadow: the shadow recorded in the index is
// opened at start-up and handed to the follower when it attaches; one that
// fails to open is logged and listed in Problems, keeps its name until it
// is cleared, and the follower runs none.
func TestRestartRestoresTheShadow(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	a := addStaged(t, r, 1, time.Unix(1000, 0))
	b := addStaged(t, r, 2, time.Unix(2000, 0))
	load(t, r, a, SourceStaged)
	ctx := context.Background()
	if err := r.SetShadow(ctx, b); err != nil { // no follower yet: recorded only
		t.Fatal(err)
	}
	r = reopen(t, r, nil)
	if len(r.Problems()) != 0 {
		t.Fatalf("problems: %v", r.Problems())
	}
	f := follow(t, r)
	if cur, _ := f.state(); cur != b || r.Shadow() != b {
		t.Fatalf("follower runs %q, registry %q, want %s", cur, r.Shadow(), b)
	}

	// The shadow's file is replaced: the next start cannot restore it.
	if err := os.WriteFile(filepath.Join(dir, "models", b+".npz"), []byte("const:9"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = reopen(t, r, nil)
	f = follow(t, r)
	if cur, _ := f.state(); cur != "" {
		t.Fatalf("follower runs %q from a file that fails its checksum", cur)
	}
	if r.Shadow() != b {
		t.Fatalf("the name of a shadow that failed to restore was dropped: %q", r.Shadow())
	}
	probs := strings.Join(r.Problems(), "\n")
	if !strings.Contains(probs, "shadow model "+b+" not restored") || !strings.Contains(probs, "DELETE /model/shadow") {
		t.Fatalf("problems do not say the shadow was lost: %q", probs)
	}
	if r.Active() == nil || r.Active().Metadata().Version != a {
		t.Fatal("the active model suffered from the shadow's failure")
	}
	if err := r.ClearShadow(ctx); err != nil {
		t.Fatal(err)
	}
	if len(r.Problems()) != 0 || r.Shadow() != "" {
		t.Fatalf("after clearing: shadow %q, problems %v", r.Shadow(), r.Problems())
	}
}

// TestShadowTakesTheLoadLock: while a load is opening its model, a
// shadow change fails at once with ErrLoadInProgress, and a shadow change
// in progress holds off loads and deletes the same way.
func TestShadowTakesTheLoadLock(t *testing.T) {
	gate := newLoadGate()
	dir := t.TempDir()
	r := newTestRegistry(t, dir, gate)
	f := follow(t, r)
	a := addStaged(t, r, 1, time.Unix(1000, 0))
	b := addStaged(t, r, 2, time.Unix(2000, 0))
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { _, err := r.Load(ctx, LoadRequest{Version: a}); done <- err }()
	gate.waitEntered(t)
	if err := r.SetShadow(ctx, b); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("SetShadow during a load: %v", err)
	}
	if err := r.ClearShadow(ctx); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("ClearShadow during a load: %v", err)
	}
	gate.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	go func() { done <- r.SetShadow(ctx, b) }()
	gate.waitEntered(t)
	if _, err := r.Load(ctx, LoadRequest{Version: b}); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("Load during SetShadow: %v", err)
	}
	if err := r.Delete(ctx, b); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("Delete during SetShadow: %v", err)
	}
	gate.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if cur, _ := f.state(); cur != b {
		t.Fatalf("follower %q", cur)
	}
}

// TestConcurrentLoadsAndShadowChanges: loads, shadow sets, clears and
// deletes race from several goroutines. Whatever wins, the follower ends
// running exactly the shadow the index records, the shadow is never the
// active model (not in the index, not in the follower at any call), and
// the next start restores the same state.
func TestConcurrentLoadsAndShadowChanges(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	f := follow(t, r)
	var versions []string
	for i := range 4 {
		versions = append(versions, addStaged(t, r, float64(i), time.Unix(int64(1000*(i+1)), 0)))
	}
	load(t, r, versions[0], SourceStaged)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 150 {
				v := versions[rng.IntN(len(versions))]
				var err error
				switch rng.IntN(4) {
				case 0:
					_, err = r.Load(ctx, LoadRequest{Version: v, Source: SourceArchived})
					if errors.Is(err, ErrModelStatusMismatch) {
						_, err = r.Load(ctx, LoadRequest{Version: v, Source: SourceStaged})
					}
				case 1, 2:
					err = r.SetShadow(ctx, v)
				case 3:
					err = r.ClearShadow(ctx)
				}
				if err != nil && !errors.Is(err, ErrLoadInProgress) && !errors.Is(err, ErrShadowIsActive) &&
					!errors.Is(err, ErrModelStatusMismatch) {
					t.Errorf("unexpected error: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	cur, events := f.state()
	for _, e := range events {
		if strings.HasPrefix(e, "set the active model") || strings.HasPrefix(e, "cleared after") {
			t.Errorf("follower saw the shadow equal the active model: %q", e)
		}
	}
	ix := indexOnDisk(t, dir)
	if cur != r.Shadow() || ix.Shadow != cur {
		t.Fatalf("follower runs %q, registry says %q, index %q", cur, r.Shadow(), ix.Shadow)
	}
	if ix.Shadow != "" && ix.Shadow == ix.Active {
		t.Fatalf("index has shadow = active = %q", ix.Shadow)
	}
	t.Logf("%d follower calls; final active %q shadow %q", len(events), ix.Active, ix.Shadow)
	r = reopen(t, r, nil)
	if got := follow(t, r); r.Shadow() != cur || func() string { c, _ := got.state(); return c }() != cur {
		t.Fatalf("after restart shadow %q, want %q", r.Shadow(), cur)
	}
}

// Kill -9 while the shadow changes: the child process below sets and
// clears the shadow in a loop until the parent kills it.
const shadowCrashChildEnv = "RAMANSERVE_REGISTRY_SHADOW_CRASH_DIR"

func TestShadowCrashChild(t *testing.T) {
	dir := os.Getenv(shadowCrashChildEnv)
	if dir == "" {
		t.Skip("child process of TestShadowChangesSurviveKill9")
	}
	r, err := Open(context.Background(), dir, Options{Openers: map[string]OpenFunc{".npz": openConst(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	_, entries := r.List()
	var candidates []string
	for _, e := range entries {
		if e.Status != StatusActive {
			candidates = append(candidates, e.Version)
		}
	}
	fmt.Println("ready")
	for i := 0; ; i++ {
		if i%3 == 2 {
			err = r.ClearShadow(context.Background())
		} else {
			err = r.SetShadow(context.Background(), candidates[i%len(candidates)])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestShadowChangesSurviveKill9: a process killed (SIGKILL) at random
// points while it rewrites the shadow in index.json leaves an index the
// next start reads, whose shadow is one of the versions it was set to or
// none, with every model and the active pointer intact.
func TestShadowChangesSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	a := addStaged(t, r, 1, time.Unix(1000, 0))
	b := addStaged(t, r, 2, time.Unix(2000, 0))
	c := addStaged(t, r, 3, time.Unix(3000, 0))
	load(t, r, a, SourceStaged)
	r.Close()
	seen := map[string]int{}
	for i := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestShadowCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), shadowCrashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child did not start: %q %v", buf, err)
		}
		time.Sleep(time.Duration(5+7*i) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child: %v (want killed by SIGKILL)", err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, indexFile))
		if err != nil {
			t.Fatal(err)
		}
		var ix struct{ Active, Shadow string }
		if err := json.Unmarshal(raw, &ix); err != nil {
			t.Fatalf("kill %d left an index that is not JSON: %v\n%s", i, err, raw)
		}
		r := newTestRegistry(t, dir, nil)
		if sh := r.Shadow(); sh != "" && sh != b && sh != c {
			t.Fatalf("shadow %q after kill %d", sh, i)
		}
		if _, entries := r.List(); len(entries) != 3 || r.Active() == nil || r.Active().Metadata().Version != a || len(r.Problems()) != 0 {
			t.Fatalf("after kill %d: %d entries, problems %v", i, len(entries), r.Problems())
		}
		seen[r.Shadow()]++
		r.Close()
	}
	t.Logf("shadow found after each kill: %v", seen)
}

// TestCheckFindsAShadowWithoutEntry: registry check reports a shadow that
// names no entry, or the active one (a hand edit); -repair clears it.
func TestCheckFindsAShadowWithoutEntry(t *testing.T) {
	for _, shadowIs := range []string{"missing", "active"} {
		t.Run(shadowIs, func(t *testing.T) {
			dir := t.TempDir()
			r := newTestRegistry(t, dir, nil)
			a := addStaged(t, r, 1, time.Unix(1000, 0))
			load(t, r, a, SourceStaged)
			r.Close()
			editIndexOnDisk(t, dir, func(ix *store.Index) {
				ix.Shadow = "gone"
				if shadowIs == "active" {
					ix.Shadow = a
				}
			})
			opts := Options{Openers: map[string]OpenFunc{".npz": openConst(nil)}}
			rep, err := Check(context.Background(), dir, opts, false)
			if err != nil || len(rep.Findings) != 1 || !strings.Contains(rep.Findings[0].Problem, "the shadow names") {
				t.Fatalf("check: %v %+v", err, rep)
			}
			// The server starts, says so in its problems, and keeps
			// serving the active model.
			r = newTestRegistry(t, dir, nil)
			if !strings.Contains(strings.Join(r.Problems(), "\n"), "not restored") || r.Active() == nil {
				t.Fatalf("problems %v", r.Problems())
			}
			r.Close()
			if rep, err = Check(context.Background(), dir, opts, true); err != nil || rep.Unrepaired() != 0 {
				t.Fatalf("repair: %v %+v", err, rep)
			}
			if ix := indexOnDisk(t, dir); ix.Shadow != "" || ix.Active != a {
				t.Fatalf("after repair: active %q shadow %q", ix.Active, ix.Shadow)
			}
		})
	}
}
