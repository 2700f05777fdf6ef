package app

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/platform/pgtest"
)

// getFleet is GET /fleet on app, decoded.
func getFleet(t *testing.T, app *App) gen.Fleet {
	t.Helper()
	resp, body := httpDo(t, app, "GET", "/fleet", "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /fleet: %d %s", resp.StatusCode, body)
	}
	var f gen.Fleet
	if err := json.Unmarshal(body, &f); err != nil {
		t.Fatalf("GET /fleet: %v: %s", err, body)
	}
	return f
}

// waitFleet polls GET /fleet on app until ok accepts it, for at most 15 s.
func waitFleet(t *testing.T, app *App, what string, ok func(gen.Fleet) bool) gen.Fleet {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		f := getFleet(t, app)
		if ok(f) {
			return f
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(f)
			t.Fatalf("waited 15 s on %s for %s; GET /fleet: %s", app.HTTPAddr(), what, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startReplica starts a process on loopback ports with its own registry
// directory, on the fleet's database at store ("" : the embedded store).
func startReplica(t *testing.T, store string) *App {
	t.Helper()
	app, err := Start(context.Background(), Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: filepath.Join(t.TempDir(), "registry"), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	return app
}

// TestFleetEmbeddedIsItself: without -store, GET /fleet lists the process
// alone, from the moment Start returns; it is ready once it serves a
// model, and the gauge counts it.
func TestFleetEmbeddedIsItself(t *testing.T) {
	app := startReplica(t, "")
	f := getFleet(t, app)
	if len(f.Replicas) != 1 || f.GoneAfterSeconds != 10 {
		t.Fatalf("GET /fleet: %+v", f)
	}
	r := f.Replicas[0]
	if r.HttpAddress != app.HTTPAddr() || r.ZmqEndpoint != app.ZMQEndpoint() || r.Ready || r.Gone || r.VersionServed != nil {
		t.Errorf("the process without a model: %+v", r)
	}
	version := stageSmallModel(t, app.Registry, "op")
	if resp, body := httpDo(t, app, "POST", "/model/load", `{"version":"`+version+`"}`, ""); resp.StatusCode != 200 {
		t.Fatalf("load: %d %s", resp.StatusCode, body)
	}
	waitFleet(t, app, "the process ready with "+version, func(f gen.Fleet) bool {
		return len(f.Replicas) == 1 && f.Replicas[0].Ready && f.Replicas[0].VersionServed != nil && *f.Replicas[0].VersionServed == version
	})
	if _, body := httpDo(t, app, "GET", "/metrics", "", ""); !strings.Contains(string(body), "\nramanserve_fleet_replicas 1\n") {
		t.Errorf("/metrics has no ramanserve_fleet_replicas 1")
	}
}

// TestFleetTwoReplicas: two processes on one database each list both,
// with their addresses, ready once both serve the model the fleet
// loaded; one that shuts down cleanly leaves the list.
func TestFleetTwoReplicas(t *testing.T) {
	store := pgtest.Database(t)
	a, b := startReplica(t, store), startReplica(t, store)
	version := stageSmallModel(t, a.Registry, "op")
	if resp, body := httpDo(t, a, "POST", "/model/load", `{"version":"`+version+`"}`, ""); resp.StatusCode != 200 {
		t.Fatalf("load: %d %s", resp.StatusCode, body)
	}
	want := map[string]*App{a.HTTPAddr(): a, b.HTTPAddr(): b}
	bothReady := func(f gen.Fleet) bool {
		if len(f.Replicas) != 2 {
			return false
		}
		for _, r := range f.Replicas {
			app := want[r.HttpAddress]
			if app == nil || r.ZmqEndpoint != app.ZMQEndpoint() || !r.Ready || r.Gone || r.VersionServed == nil || *r.VersionServed != version {
				return false
			}
		}
		return true
	}
	for _, app := range []*App{a, b} {
		f := waitFleet(t, app, "both replicas ready with "+version, bothReady)
		if f.Replicas[0].Id == f.Replicas[1].Id {
			t.Errorf("two replicas with one id: %+v", f.Replicas)
		}
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFleet(t, a, "the replica shut down to leave", func(f gen.Fleet) bool {
		return len(f.Replicas) == 1 && f.Replicas[0].HttpAddress == a.HTTPAddr()
	})
}
