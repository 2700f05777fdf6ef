package pgfleet_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/platform/pgdb"
	"ramanserve/platform/pgtest"
	"ramanserve/platform/storeerr"
	"ramanserve/service/fleet"
	"ramanserve/service/fleet/pgfleet"
)

// openStore opens a store on a migrated database of its own, and returns
// the database's URL for statements a test makes behind the store's back.
func openStore(t *testing.T) (*pgfleet.Store, string) {
	t.Helper()
	u := pgtest.Database(t)
	pool, err := pgdb.Open(context.Background(), u, pgdb.Options{Migrate: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := pgfleet.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	return s, u
}

func replica(id string) fleet.Replica {
	return fleet.Replica{ID: id, Host: "rig-" + id, HTTPAddress: "10.0.0.1:5556", ZMQEndpoint: "tcp://10.0.0.1:5555",
		VersionServed: "pls-1", ShadowVersion: "pls-2", Ready: true}
}

func byID(t *testing.T, v fleet.View) map[string]fleet.Member {
	t.Helper()
	out := make(map[string]fleet.Member, len(v.Replicas))
	for _, m := range v.Replicas {
		out[m.ID] = m
	}
	return out
}

// TestHeartbeatListGoneRemove: a heartbeat writes the row, a second one
// updates it (keeping started_at), a row silent past the bound is gone,
// Remove and Prune delete rows.
func TestHeartbeatListGoneRemove(t *testing.T) {
	ctx := context.Background()
	s, u := openStore(t)
	svc, err := fleet.New(s, fleet.Options{GoneAfter: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := svc.List(ctx); err != nil || len(v.Replicas) != 0 {
		t.Fatalf("empty fleet: %+v, %v", v, err)
	}
	for _, id := range []string{"a", "b"} {
		if err := s.Heartbeat(ctx, replica(id)); err != nil {
			t.Fatal(err)
		}
	}
	first := byID(t, must(svc.List(ctx))(t))
	changed := replica("a")
	changed.VersionServed, changed.ShadowVersion, changed.Ready = "pls-3", "", false
	if err := s.Heartbeat(ctx, changed); err != nil {
		t.Fatal(err)
	}
	v := must(svc.List(ctx))(t)
	if len(v.Replicas) != 2 || v.Alive() != 2 || v.GoneAfter != 10*time.Second {
		t.Fatalf("two replicas heartbeating: %+v", v)
	}
	got := byID(t, v)
	a, b := got["a"], got["b"]
	if a.VersionServed != "pls-3" || a.ShadowVersion != "" || a.Ready || a.Host != "rig-a" ||
		a.HTTPAddress != "10.0.0.1:5556" || a.ZMQEndpoint != "tcp://10.0.0.1:5555" || a.Gone {
		t.Errorf("a after its second heartbeat: %+v", a)
	}
	if !a.StartedAt.Equal(first["a"].StartedAt) || a.LastHeartbeat.Before(first["a"].LastHeartbeat) {
		t.Errorf("a: started_at %v -> %v, heartbeat %v -> %v: started_at must stay, the heartbeat move on",
			first["a"].StartedAt, a.StartedAt, first["a"].LastHeartbeat, a.LastHeartbeat)
	}
	if b.VersionServed != "pls-1" || b.ShadowVersion != "pls-2" || !b.Ready || b.Gone {
		t.Errorf("b: %+v", b)
	}

	// b stops heartbeating 30 s ago (by the database's clock).
	pgtest.Exec(t, u, `UPDATE fleet_replicas SET heartbeat_at = now() - interval '30 seconds' WHERE replica_id = 'b'`)
	got = byID(t, must(svc.List(ctx))(t))
	if !got["b"].Gone || got["a"].Gone || got["b"].Silence < 29*time.Second {
		t.Errorf("b silent for 30 s: %+v; a: %+v", got["b"], got["a"])
	}
	if err := s.Prune(ctx, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	got = byID(t, must(svc.List(ctx))(t))
	if _, ok := got["b"]; ok || len(got) != 1 {
		t.Errorf("after pruning the rows silent for 20 s: %v", got)
	}
	if err := s.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "never-there"); err != nil {
		t.Errorf("removing an unknown replica: %v", err)
	}
	if v := must(svc.List(ctx))(t); len(v.Replicas) != 0 {
		t.Errorf("after Remove: %+v", v)
	}
}

// TestUnreachableIsUnavailable: with the database out of reach, every
// call fails with storeerr.ErrUnavailable (STORE_UNAVAILABLE), within its
// context.
func TestUnreachableIsUnavailable(t *testing.T) {
	cfg, err := pgdb.ParseConfig("postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, _ := pgfleet.New(pool)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, errList := s.List(ctx)
	for name, err := range map[string]error{
		"heartbeat": s.Heartbeat(ctx, replica("a")),
		"list":      errList,
		"remove":    s.Remove(ctx, "a"),
		"prune":     s.Prune(ctx, time.Hour),
	} {
		if !errors.Is(err, storeerr.ErrUnavailable) {
			t.Errorf("%s: %v, want storeerr.ErrUnavailable", name, err)
		}
	}
}

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
