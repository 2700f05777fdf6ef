package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/registry"
)

// evidenceStore is the -evidence mode that measures what the fleet's
// store costs the hot path: the same model served by a process on the
// embedded store and by one on the PostgreSQL database of -store, both
// with the prediction log on and no shadow, in alternating blocks of the
// same load (goal: p95 within 5 %).
const evidenceStore = "store"

// storeCostRun runs the -evidence store comparison against the database
// at url (empty: its schema is migrated and the model stored in it here).
func (b evidenceBench) storeCostRun(ctx context.Context, url string) error {
	if url == "" {
		return fmt.Errorf("-evidence store needs -store postgres://… (make bench starts a throw-away cluster)")
	}
	src, active, _, err := b.evidenceRegistry(ctx)
	if err != nil {
		return err
	}
	if err := storeActive(ctx, url, filepath.Join(b.dir, "registry-seed"), b, active); err != nil {
		return fmt.Errorf("store the model in %s: %w", url, err)
	}
	embedded, err := b.startEvidenceServer(ctx, "embedded", src, active, "", nil)
	if err != nil {
		return err
	}
	defer embedded.stop()
	shared, err := b.startFleetServer(ctx, "postgres", url, active)
	if err != nil {
		return err
	}
	defer shared.stop()
	fmt.Printf("hot-path cost of the fleet's store: two ramanserve processes (%s) serving %s with the prediction log on, no shadow\n", b.serverBin, active)
	fmt.Printf("  embedded: files and SQLite in its registry directory\n")
	fmt.Printf("  postgres: -store (registry, prediction log and lab results in PostgreSQL)\n")
	return b.alternate(ctx, [2]*evidenceServer{embedded, shared}, 1.05)
}

// storeActive stores the benchmark's active model in the database and
// loads it, through an in-process server on the store.
func storeActive(ctx context.Context, url, dir string, b evidenceBench, version string) error {
	proc, err := app.Start(ctx, app.Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: dir, Store: url,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer proc.Shutdown(context.Background())
	if _, active := proc.Registry.List(); len(active) > 0 && proc.Registry.Active() != nil && proc.Registry.Active().Metadata().Version == version {
		return nil
	}
	staged, err := stageModel(ctx, proc.Registry, b.active)
	if err != nil {
		return err
	}
	if staged != version {
		return fmt.Errorf("the model was stored as %s, not %s", staged, version)
	}
	_, err = proc.Registry.Load(ctx, registry.LoadRequest{Version: staged})
	return err
}

// startFleetServer starts a ramanserve process on the database at url,
// with a registry directory (its cache) of its own.
func (b evidenceBench) startFleetServer(ctx context.Context, name, url, active string) (*evidenceServer, error) {
	proc, err := startServerProcess(ctx, b.serverBin, filepath.Join(b.dir, "registry-"+name), active, nil, "-store", url)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	mgmt, err := client.NewManagement(proc.base)
	if err != nil {
		proc.stop()
		return nil, err
	}
	return &evidenceServer{name: name, proc: proc, mgmt: mgmt}, nil
}
