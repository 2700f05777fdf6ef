package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/evidence/shadow"
	"ramanserve/evidence/shadow/pgshadow"
	"ramanserve/platform/pgdb"
	"ramanserve/registry"
	"ramanserve/registry/pgstore"
)

// sharedStore is a fleet's store: the PostgreSQL database every replica
// started with the same -store shares, and this replica's watchers of it.
// Without -store the process has none and keeps everything in its
// registry directory (the embedded store).
type sharedStore struct {
	pool    *pgxpool.Pool
	monitor *pgdb.Monitor
	// replica names this process in the fleet (records it logs, its row
	// in fleet_replicas): host name, process id and a random suffix, so a
	// restarted replica is a new one.
	replica string
	fleet   *pgstore.Fleet // the registry's side of the fleet

	ctx  context.Context    // the watchers' context, ended by stop
	stop context.CancelFunc // ends the watchers
	wg   sync.WaitGroup
}

// openShared opens the database (migrating its schema, under the
// advisory lock, when this build is newer) and returns the store with
// nothing running yet.
func openShared(ctx context.Context, url string, log *slog.Logger) (*sharedStore, error) {
	pool, err := pgdb.Open(ctx, url, pgdb.Options{Migrate: true, MaxConns: 16, Logger: log.With("component", "store")})
	if err != nil {
		return nil, err
	}
	return &sharedStore{pool: pool, replica: newReplicaID()}, nil
}

// registryStores are the registry's stores in the database, the model
// files cached under dir's cache/ folder (deleted at any time without
// harm), and the fleet's load lock.
func (s *sharedStore) registryStores(dir string) (*pgstore.IndexStore, *pgstore.ArtifactStore, registry.Fleet) {
	arts := pgstore.NewArtifacts(s.pool, pgstore.ArtifactOptions{CacheDir: filepath.Join(dir, "cache")})
	s.fleet = pgstore.NewFleet(s.pool, s.replica)
	return pgstore.NewIndex(s.pool), arts, s.fleet
}

// refreshTimeout bounds one catch-up with the fleet's registry.
const refreshTimeout = 30 * time.Second

// follow starts the watchers: the registry catches up on every commit
// another replica notifies (and every 2 s, should a notification be
// lost), and the monitor pings the database for health, catching up too
// when it answers again after an outage.
func (s *sharedStore) follow(reg *registry.Registry, log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	s.ctx, s.stop = ctx, cancel
	refresh := func(ctx context.Context) {
		// Bounded: a load on this replica waits for a catch-up in
		// progress, and a database that stopped answering mid-way must not
		// hold it for longer.
		ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		defer cancel()
		if err := reg.Refresh(ctx); err != nil && ctx.Err() == nil {
			log.Warn("could not catch up with the fleet's registry", "err", err)
		}
	}
	s.monitor = pgdb.NewMonitor(s.pool, pgdb.MonitorOptions{OnUp: refresh, Logger: log.With("component", "store")})
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		pgstore.Watch(ctx, s.pool, pgstore.WatchOptions{Logger: log.With("component", "registry")}, refresh)
	}()
	go func() { defer s.wg.Done(); s.monitor.Run(ctx) }()
}

// shadowView is the fleet's shadow comparison around local: every second
// this replica posts its own and reads the others' (shadow.FleetView),
// until close.
func (s *sharedStore) shadowView(local *shadow.Scorer, log *slog.Logger) *shadow.FleetView {
	view := shadow.NewFleetView(local, pgshadow.New(s.pool, s.replica), time.Second, log.With("component", "shadow"))
	s.wg.Add(1)
	go func() { defer s.wg.Done(); view.Run(s.ctx) }()
	return view
}

// close stops the watchers and closes the pool, after every store on it
// is closed.
func (s *sharedStore) close(ctx context.Context) {
	if s.stop != nil {
		s.stop()
	}
	s.wg.Wait()
	if s.fleet != nil {
		// No load waits for a replica that is gone; a crash leaves the row
		// to age out instead.
		leaveCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s.fleet.Leave(leaveCtx)
		cancel()
	}
	s.pool.Close()
}
