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
	"ramanserve/registry"
)

// fakeAxes knows one version's axis.
type fakeAxes struct{ version string }

func (f fakeAxes) Axis(_ context.Context, version string) ([]float64, error) {
	if version != f.version {
		return nil, fmt.Errorf("%w: %q", registry.ErrModelNotFound, version)
	}
	return []float64{200, 200.5, 201}, nil
}

// TestGetModelAxis: the axis of a known version, 404 MODEL_NOT_FOUND for
// an unknown one; and, while every report slot is held, 503 SERVER_BUSY
// with Retry-After after ReportSlotWait rather than a wait for the slot.
func TestGetModelAxis(t *testing.T) {
	api := &API{Axes: fakeAxes{"v1"}, ReportSlotWait: 100 * time.Millisecond}
	h, err := newHTTPHandler(api, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(version string) (int, []byte, http.Header) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/model/" + version + "/axis")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
			t.Fatalf("body: %v", err)
		}
		return resp.StatusCode, raw, resp.Header
	}

	status, body, _ := get("v1")
	var axis gen.ModelAxis
	if err := json.Unmarshal(body, &axis); status != 200 || err != nil || axis.Version != "v1" || len(axis.Wavenumbers) != 3 {
		t.Fatalf("v1: %d %s", status, body)
	}
	var e gen.ErrorResponse
	if status, body, _ = get("v2"); status != 404 || json.Unmarshal(body, &e) != nil || e.Code != "MODEL_NOT_FOUND" {
		t.Fatalf("unknown version: %d %s", status, body)
	}

	var leaves []func()
	for range maxConcurrentReports {
		leave, err := api.reportGate.enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, leave)
	}
	status, body, header := get("v1")
	if status != 503 || json.Unmarshal(body, &e) != nil || e.Code != "SERVER_BUSY" || e.Retryable == nil || !*e.Retryable || header.Get("Retry-After") == "" {
		t.Fatalf("slots taken: %d %s, Retry-After %q", status, body, header.Get("Retry-After"))
	}
	for _, leave := range leaves {
		leave()
	}
	if status, body, _ = get("v1"); status != 200 {
		t.Fatalf("slots free again: %d %s", status, body)
	}
}

// TestGetModelAxisUnavailable: a server built without an axis reader
// answers 501 NOT_IMPLEMENTED in the envelope.
func TestGetModelAxisUnavailable(t *testing.T) {
	h, err := newHTTPHandler(&API{}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/model/v1/axis", nil))
	var e gen.ErrorResponse
	if rec.Code != 501 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != "NOT_IMPLEMENTED" {
		t.Fatalf("%d %s", rec.Code, rec.Body.Bytes())
	}
}
