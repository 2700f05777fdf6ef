package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"ramanserve/registry"
	"ramanserve/service/fleet"
	"ramanserve/service/fleet/pgfleet"
)

// leaveTimeout bounds the removal of this replica's row at shutdown: a
// database that does not answer must not hold the shutdown up; the row
// then shows as gone after the bound instead.
const leaveTimeout = 2 * time.Second

// newReplicaID names this process in the fleet: host name, process id
// and a random suffix, so that a restarted replica is a new one.
func newReplicaID() string {
	host, _ := os.Hostname()
	suffix := make([]byte, 3)
	rand.Read(suffix)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(suffix))
}

// membership is this process in its fleet: the use case GET /fleet calls
// and the heartbeat that writes this replica's row, on the fleet's
// database, or in memory for the embedded store (the process is then
// its only replica).
type membership struct {
	service   *fleet.Service
	heartbeat *fleet.Heartbeat

	stop context.CancelFunc // ends the heartbeat loop; nil before join
	wg   sync.WaitGroup
}

// openFleet builds the membership; nothing runs until join.
func (a *App) openFleet() (*membership, error) {
	var store fleet.Store = fleet.NewMemoryStore()
	id := newReplicaID()
	if a.shared != nil {
		pg, err := pgfleet.New(a.shared.pool)
		if err != nil {
			return nil, err
		}
		store, id = pg, a.shared.replica
	}
	svc, err := fleet.New(store, fleet.Options{})
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	self := func() fleet.Replica { return a.describeReplica(id, host) }
	return &membership{service: svc, heartbeat: fleet.NewHeartbeat(svc, self, fleet.HeartbeatOptions{Logger: a.log.With("component", "fleet")})}, nil
}

// describeReplica is this replica's row as of now.
func (a *App) describeReplica(id, host string) fleet.Replica {
	r := fleet.Replica{ID: id, Host: host, HTTPAddress: a.HTTPAddr(), ZMQEndpoint: a.ZMQEndpoint(), ShadowVersion: a.Registry.Shadow()}
	if m := a.Registry.Active(); m != nil {
		r.VersionServed = m.Metadata().Version
	}
	r.Ready = servesIndexedModel(a.Registry) && a.storeUp()
	return r
}

// servesIndexedModel reports whether the registry serves the model its
// index names as active. List shows an entry as active only when it is
// the model served (one the process failed to follow shows as archived),
// so an active entry means both agree; none means the index names no
// model, or not the one served.
func servesIndexedModel(reg *registry.Registry) bool {
	_, entries := reg.List()
	for _, e := range entries {
		if e.Status == registry.StatusActive {
			return true
		}
	}
	return false
}

// storeUp: the embedded store is always up; the fleet's is up while its
// monitor's last ping was answered.
func (a *App) storeUp() bool {
	if a.shared == nil {
		return true
	}
	err, _ := a.shared.monitor.Err()
	return err == nil
}

// join writes the first heartbeat before returning, so that the replica
// is listed as soon as it serves (a failure is logged and the loop goes
// on trying), then beats every second until leave.
func (m *membership) join() {
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	m.heartbeat.Beat(ctx)
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.heartbeat.Run(ctx) }()
}

// leave stops the heartbeat and deletes this replica's row, within ctx
// and leaveTimeout. A row it could not delete is no shutdown failure (the
// others show it as gone after the bound): it is logged. Safe on a nil
// membership and before join.
func (m *membership) leave(ctx context.Context, log *slog.Logger) {
	if m == nil || m.stop == nil {
		return
	}
	m.stop()
	m.wg.Wait()
	ctx, cancel := context.WithTimeout(ctx, leaveTimeout)
	defer cancel()
	if err := m.heartbeat.Leave(ctx); err != nil {
		log.Warn("leaving the fleet: the other replicas will show this one as gone instead", "err", err)
	}
}
