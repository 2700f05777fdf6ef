package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/pgtest"
	"ramanserve/platform/race"
	"ramanserve/registry"
)

// replica starts a process of the fleet on the database at url, with a
// registry directory (the cache and import/) of its own, and shuts it
// down when t ends.
func replica(t *testing.T, url string, wrap func(registry.OpenFunc) registry.OpenFunc) *App {
	t.Helper()
	a, err := Start(context.Background(), Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: t.TempDir(), Store: url, WrapOpen: wrap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a.Shutdown(ctx)
	})
	return a
}

// postLoad asks a's management API to load version from source and
// returns the status and the error code, if any.
func postLoad(t *testing.T, a *App, version, source string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"version": version, "source": source})
	res, err := http.Post("http://"+a.HTTPAddr()+"/model/load", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var e struct {
		Code string `json:"code"`
	}
	json.Unmarshal(raw, &e)
	return res.StatusCode, e.Code
}

// servedVersion is the version a serves, "" for none.
func servedVersion(a *App) string {
	if m := a.Registry.Active(); m != nil {
		return m.Metadata().Version
	}
	return ""
}

// waitServed waits until every replica serves version.
func waitServed(t *testing.T, version string, replicas ...*App) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, a := range replicas {
		for servedVersion(a) != version {
			if time.Now().After(deadline) {
				t.Fatalf("replica %s serves %q a minute after %q was loaded", a.HTTPAddr(), servedVersion(a), version)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestFleetLoadRace: two replicas of one database asked at the same
// moment to load: exactly one loads (200), the other answers 409
// LOAD_IN_PROGRESS, round after round, and both then serve the winner's
// version. The winner's model read waits until the loser has answered,
// so that the two loads overlap however the machine schedules them.
func TestFleetLoadRace(t *testing.T) {
	url := pgtest.Database(t)
	var armed atomic.Bool
	entered, release := make(chan struct{}, 1), make(chan struct{})
	hold := func(open registry.OpenFunc) registry.OpenFunc {
		return func(ctx context.Context, content *io.SectionReader, e registry.Entry) (inference.Model, error) {
			if armed.CompareAndSwap(true, false) {
				entered <- struct{}{}
				<-release
			}
			return open(ctx, content, e)
		}
	}
	a, b := replica(t, url, hold), replica(t, url, hold)
	v1, v2 := stageSmallModel(t, a.Registry, "op"), stageSmallModel(t, a.Registry, "op")
	if code, errCode := postLoad(t, b, v1, "staged"); code != 200 {
		t.Fatalf("first load on the other replica: %d %s", code, errCode)
	}
	waitServed(t, v1, a, b)

	rounds := 100
	if race.Enabled {
		rounds = 30
	}
	active, next := v1, v2
	sources := map[string]string{v2: "staged"}
	for round := range rounds {
		armed.Store(true)
		type answer struct {
			replica, status int
			code            string
		}
		answers := make(chan answer, 2)
		var wg sync.WaitGroup
		for i, r := range []*App{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, code := postLoad(t, r, next, sources[next])
				answers <- answer{i, status, code}
			}()
		}
		<-entered // the winner reads the model, holding the fleet's lock
		loser := <-answers
		close(release)
		wg.Wait()
		winner := <-answers
		release = make(chan struct{})
		if winner.status != 200 || loser.status != 409 || loser.code != "LOAD_IN_PROGRESS" {
			t.Fatalf("round %d: replica %d answered %d %s while replica %d answered %d %s", round,
				loser.replica, loser.status, loser.code, winner.replica, winner.status, winner.code)
		}
		waitServed(t, next, a, b)
		sources[active] = "archived"
		active, next = next, active
	}
	t.Logf("%d load races between two replicas: %d times one 200 and one 409 LOAD_IN_PROGRESS", rounds, rounds)
}

// TestFleetFollowsSwapsAndShadow: a load and a shadow change on one
// replica are served by the other, whose previous_version and model list
// are the fleet's; a load answers only once the other replica serves
// the new model.
func TestFleetFollowsSwapsAndShadow(t *testing.T) {
	url := pgtest.Database(t)
	a, b := replica(t, url, nil), replica(t, url, nil)
	v1, v2 := stageSmallModel(t, a.Registry, "op"), stageSmallModel(t, b.Registry, "op")
	if code, errCode := postLoad(t, a, v1, "staged"); code != 200 {
		t.Fatalf("load on a: %d %s", code, errCode)
	}
	waitServed(t, v1, a, b)
	if err := b.Registry.SetShadow(context.Background(), v2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for a.shadow.Status().Version != v2 {
		if time.Now().After(deadline) {
			t.Fatalf("replica a's shadow is %q a minute after b set %q", a.shadow.Status().Version, v2)
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := b.Registry.Load(context.Background(), registry.LoadRequest{Version: v2, Source: registry.SourceStaged})
	if err != nil {
		t.Fatal(err)
	}
	if res.Previous != v1 {
		t.Fatalf("previous_version %q, want the fleet's %q", res.Previous, v1)
	}
	// A load answers once the rest of the fleet serves the new model.
	if got := servedVersion(a); got != v2 {
		t.Fatalf("when b's load of %s returned, a served %q", v2, got)
	}
	for a.shadow.Status().Version != "" {
		if time.Now().After(deadline) {
			t.Fatalf("replica a still shadows %q after b promoted it", a.shadow.Status().Version)
		}
		time.Sleep(5 * time.Millisecond)
	}
	active, entries := a.Registry.List()
	if active != v2 || len(entries) != 2 {
		t.Fatalf("replica a lists active %q and %d entries", active, len(entries))
	}
}

// TestFleetRefusesACorruptedArtifact: a model whose bytes in the database
// were changed behind the fleet's back (same size, other content) is
// refused MODEL_CORRUPTED by a load on any replica, and every replica
// keeps serving the model it had.
func TestFleetRefusesACorruptedArtifact(t *testing.T) {
	url := pgtest.Database(t)
	a, b := replica(t, url, nil), replica(t, url, nil)
	v1, v2 := stageSmallModel(t, a.Registry, "op"), stageSmallModel(t, a.Registry, "op")
	if code, errCode := postLoad(t, a, v1, "staged"); code != 200 {
		t.Fatalf("load %s: %d %s", v1, code, errCode)
	}
	entry, err := a.Registry.Describe(v2)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, url, `UPDATE registry_artifact_chunks c
		SET data = set_byte(c.data, length(c.data) / 2, get_byte(c.data, length(c.data) / 2) # 255)
		FROM registry_artifacts r WHERE c.artifact_id = r.id AND c.seq = 0 AND r.name = '`+entry.File+`'`)
	for _, r := range []*App{b, a} {
		if code, errCode := postLoad(t, r, v2, "staged"); code != 400 || errCode != "MODEL_CORRUPTED" {
			t.Fatalf("load of the corrupted %s: %d %s", v2, code, errCode)
		}
	}
	for _, r := range []*App{a, b} {
		if got := servedVersion(r); got != v1 {
			t.Fatalf("a replica serves %q after the refused load, want %s", got, v1)
		}
	}
}

// TestFleetServesAFileImportedOnOneReplica: a scikit-learn file loaded
// from one replica's import/ folder is stored in the database, so the
// other replica serves it too, with no copy of the file of its own.
func TestFleetServesAFileImportedOnOneReplica(t *testing.T) {
	url := pgtest.Database(t)
	a, b := replica(t, url, nil), replica(t, url, nil)
	src, err := os.ReadFile(filepath.Join("..", "inference", "sklearn", "testdata", "layout1.5_scaled.joblib"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(a.Registry.Dir(), "import", "plant.joblib")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"version": "plant-1", "source": "file", "path": path})
	res, err := http.Post("http://"+a.HTTPAddr()+"/model/load", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("import on replica a: %d %s", res.StatusCode, raw)
	}
	os.Remove(path)
	if got := servedVersion(b); got != "plant-1" {
		t.Fatalf("when the import on a answered, b served %q", got)
	}
	if _, err := os.Stat(filepath.Join(b.Registry.Dir(), "import", "plant.joblib")); !os.IsNotExist(err) {
		t.Fatalf("b has a copy of a's import: %v", err)
	}
}

// TestFleetShadowComparisonCountsEveryReplica: spectra scored on two
// replicas are all in the shadow comparison either one answers.
func TestFleetShadowComparisonCountsEveryReplica(t *testing.T) {
	url := pgtest.Database(t)
	a, b := replica(t, url, nil), replica(t, url, nil)
	v1, v2 := stageSmallModel(t, a.Registry, "op"), stageSmallModel(t, a.Registry, "op")
	if code, errCode := postLoad(t, a, v1, "staged"); code != 200 {
		t.Fatalf("load: %d %s", code, errCode)
	}
	if err := a.Registry.SetShadow(context.Background(), v2); err != nil {
		t.Fatal(err)
	}
	axis := []float64{500, 600, 700, 800, 900, 1000}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("a minute without %s", what)
			}
		}
	}
	waitFor("b running the shadow", func() bool { return b.shadow.Status().Version == v2 })
	sendPredicts(t, a, axis, "batch-a", 7)
	sendPredicts(t, b, axis, "batch-b", 5)
	shadowN := func(r *App) int64 {
		res, err := http.Get("http://" + r.HTTPAddr() + "/model/shadow")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var st struct {
			Version    string `json:"version"`
			Comparison struct {
				N int64 `json:"n"`
			} `json:"comparison"`
		}
		json.NewDecoder(res.Body).Decode(&st)
		if st.Version != v2 {
			return -1
		}
		return st.Comparison.N
	}
	for _, r := range []*App{a, b} {
		waitFor("the fleet's 12 spectra in GET /model/shadow", func() bool { return shadowN(r) == 12 })
	}
}
