package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/platform/storeerr"
	"ramanserve/service/fleet"
)

// unreachableFleet fails as a fleet whose database is down.
type unreachableFleet struct{}

func (unreachableFleet) List(context.Context) (fleet.View, error) {
	return fleet.View{}, fmt.Errorf("pgfleet: list: %w", storeerr.ErrUnavailable)
}

func getFleet(t *testing.T, api *API) (*httptest.ResponseRecorder, []byte) {
	t.Helper()
	h, err := NewHTTPHandler(api, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/fleet", nil))
	return rec, rec.Body.Bytes()
}

// TestGetFleetEmbedded: with the embedded store the process is the only
// replica, as its own heartbeat wrote it.
func TestGetFleetEmbedded(t *testing.T) {
	ctx := context.Background()
	svc, _ := fleet.New(fleet.NewMemoryStore(), fleet.Options{})
	self := fleet.Replica{ID: "rig-1-42-abcdef", Host: "rig-1", HTTPAddress: "127.0.0.1:5556", ZMQEndpoint: "tcp://127.0.0.1:5555", VersionServed: "pls-1", Ready: true}
	if err := fleet.NewHeartbeat(svc, func() fleet.Replica { return self }, fleet.HeartbeatOptions{}).Beat(ctx); err != nil {
		t.Fatal(err)
	}
	rec, body := getFleet(t, &API{Fleet: svc})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /fleet: %d %s", rec.Code, body)
	}
	var got gen.Fleet
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.GoneAfterSeconds != 10 || len(got.Replicas) != 1 {
		t.Fatalf("GET /fleet: %s", body)
	}
	r := got.Replicas[0]
	if r.Id != self.ID || r.Host != "rig-1" || r.HttpAddress != self.HTTPAddress || r.ZmqEndpoint != self.ZMQEndpoint ||
		r.VersionServed == nil || *r.VersionServed != "pls-1" || r.ShadowVersion != nil || !r.Ready || r.Gone ||
		time.Since(r.LastHeartbeat) > time.Minute || r.StartedAt.After(r.LastHeartbeat) {
		t.Errorf("the replica: %s", body)
	}
	var raw map[string][]map[string]any
	json.Unmarshal(body, &raw)
	if v, ok := raw["replicas"][0]["shadow_version"]; !ok || v != nil {
		t.Errorf("shadow_version without a shadow must be null, present: %s", body)
	}
}

// TestGetFleetStoreUnavailable: a database out of reach is 503
// STORE_UNAVAILABLE, retryable, with Retry-After.
func TestGetFleetStoreUnavailable(t *testing.T) {
	rec, body := getFleet(t, &API{Fleet: unreachableFleet{}})
	var e gen.ErrorResponse
	json.Unmarshal(body, &e)
	if rec.Code != http.StatusServiceUnavailable || e.Code != "STORE_UNAVAILABLE" || e.Retryable == nil || !*e.Retryable || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("GET /fleet with the database down: %d %v %s", rec.Code, rec.Header(), body)
	}
}
