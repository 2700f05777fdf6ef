package server

import (
	"context"
	"net/http"
	"time"

	"ramanserve/gen"
	"ramanserve/server/contract"
	"ramanserve/service/fleet"
)

// FleetService lists the fleet's replicas (*fleet.Service).
type FleetService interface {
	List(ctx context.Context) (fleet.View, error)
}

var errNoFleet = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server keeps no fleet membership")

// GetFleet lists the replicas sharing this server's store; a failure to
// reach it is STORE_UNAVAILABLE (contract.Classify).
func (a *API) GetFleet(ctx context.Context, _ gen.GetFleetRequestObject) (gen.GetFleetResponseObject, error) {
	if a.Fleet == nil {
		return nil, errNoFleet
	}
	view, err := a.Fleet.List(ctx)
	if err != nil {
		return nil, err
	}
	return gen.GetFleet200JSONResponse(fleetView(view)), nil
}

// fleetView converts the membership to the contract's Fleet.
func fleetView(v fleet.View) gen.Fleet {
	out := gen.Fleet{Replicas: make([]gen.Replica, 0, len(v.Replicas)), GoneAfterSeconds: int(v.GoneAfter / time.Second)}
	for _, m := range v.Replicas {
		out.Replicas = append(out.Replicas, gen.Replica{
			Id:            m.ID,
			Host:          m.Host,
			HttpAddress:   m.HTTPAddress,
			ZmqEndpoint:   m.ZMQEndpoint,
			VersionServed: optional(m.VersionServed),
			ShadowVersion: optional(m.ShadowVersion),
			Ready:         m.Ready,
			StartedAt:     m.StartedAt.UTC(),
			LastHeartbeat: m.LastHeartbeat.UTC(),
			Gone:          m.Gone,
		})
	}
	return out
}
