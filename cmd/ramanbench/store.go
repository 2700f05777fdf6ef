package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
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

// evidenceFleetLog is the -evidence mode that measures the prediction
// log of a fleet: three replicas on the database of -store, each paced
// at -rate predicts/s for -duration, then every replica pages through
// the whole log (goal at 1,000/s for 60 s: 180,000 rows, 0 dropped, all
// of them visible from every replica).
const evidenceFleetLog = "fleetlog"

// fleetLogRun runs the -evidence fleetlog measurement.
func (b evidenceBench) fleetLogRun(ctx context.Context, url string) error {
	if url == "" {
		return fmt.Errorf("-evidence fleetlog needs -store postgres://… (make bench starts a throw-away cluster)")
	}
	_, active, _, err := b.evidenceRegistry(ctx)
	if err != nil {
		return err
	}
	if err := storeActive(ctx, url, filepath.Join(b.dir, "registry-seed"), b, active); err != nil {
		return fmt.Errorf("store the model in %s: %w", url, err)
	}
	var fleet []*evidenceServer
	for i := range 3 {
		s, err := b.startFleetServer(ctx, fmt.Sprintf("replica-%d", i+1), url, active)
		if err != nil {
			return err
		}
		defer s.stop()
		fleet = append(fleet, s)
	}
	before := make([]evidenceCounts, len(fleet))
	conns := make([][]*client.PredictionClient, len(fleet))
	for i, s := range fleet {
		if conns[i], err = dialClients(s.name, s.proc.endpoint, b.clients, b.spectra, benchScan); err != nil {
			return err
		}
		defer closeClients(conns[i])
		if before[i], err = s.settled(ctx, nil); err != nil {
			return err
		}
	}
	fmt.Printf("the prediction log of a fleet: 3 ramanserve processes (%s) on one PostgreSQL database, each at %.0f predicts/s (open loop, %d clients) for %v; GOMAXPROCS %d; load average %s\n\n",
		b.serverBin, b.rate, b.clients, b.duration, runtime.GOMAXPROCS(0), loadAverage())
	results := make([]*result, len(fleet))
	var wg sync.WaitGroup
	for i := range fleet {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], _ = openLoop(conns[i], b.rate, b.duration, b.spectra, benchScan) }()
	}
	wg.Wait()
	// total counts every record the replicas committed since they
	// started, the clients' warm-up predicts included: the log holds
	// those too.
	var answered, recorded, dropped, total int64
	for i, s := range fleet {
		after, err := s.settled(ctx, func(c evidenceCounts) bool {
			return c.recorded+c.dropped-before[i].recorded-before[i].dropped >= int64(results[i].requests)
		})
		if err != nil {
			return err
		}
		results[i].sort()
		fmt.Printf("%s: %d answered (%d errors), p95 %s; log %d recorded, %d dropped\n", s.name, results[i].requests, results[i].errors,
			us(results[i].percentile(0.95)), after.recorded-before[i].recorded, after.dropped-before[i].dropped)
		answered += int64(results[i].requests)
		recorded += after.recorded - before[i].recorded
		dropped += after.dropped - before[i].dropped
		total += after.recorded
	}
	visible := make([]int, len(fleet))
	for i, s := range fleet {
		if visible[i], err = countLog(ctx, s.mgmt); err != nil {
			return fmt.Errorf("%s: GET /predictions: %w", s.name, err)
		}
	}
	ok := dropped == 0 && recorded == answered
	for _, v := range visible {
		ok = ok && int64(v) == total
	}
	fmt.Printf("\n%d predicts answered, %d records committed, %d dropped; rows seen through GET /predictions from each replica: %v of the %d the log holds with the warm-up (goal: every answered predict committed, 0 dropped, all rows from every replica: %s); load average after %s\n",
		answered, recorded, dropped, visible, total, verdict(ok), loadAverage())
	return nil
}

// countLog pages through the whole prediction log through one replica's
// GET /predictions and returns how many records it holds.
func countLog(ctx context.Context, m *client.Management) (int, error) {
	n, limit := 0, 10000
	var cursor *string
	for {
		page, err := m.ListPredictionsWithResponse(ctx, &gen.ListPredictionsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return n, err
		}
		if page.JSON200 == nil {
			return n, fmt.Errorf("%d %s", page.StatusCode(), page.Body)
		}
		n += len(page.JSON200.Predictions)
		if page.JSON200.NextCursor == nil || *page.JSON200.NextCursor == "" {
			return n, nil
		}
		cursor = page.JSON200.NextCursor
	}
}
