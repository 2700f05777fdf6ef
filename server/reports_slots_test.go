package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"ramanserve/evidence/reconcile"
	"ramanserve/gen"
)

// blockingLab's performance reports each say when they start, then wait
// until release is closed (or their request ends).
type blockingLab struct {
	LabService
	started chan struct{}
	release chan struct{}
}

func (l blockingLab) Performance(ctx context.Context, _ string, _, _ time.Time) (reconcile.Report, error) {
	l.started <- struct{}{}
	select {
	case <-l.release:
		return reconcile.Report{}, nil
	case <-ctx.Done():
		return reconcile.Report{}, ctx.Err()
	}
}

// TestPerformanceSlotWaitIsBounded: while reports hold every report slot,
// another performance request waits ReportSlotWait, not for the slot,
// and is answered 503 SERVER_BUSY, retryable, with Retry-After; once the
// slots are free, the same request is answered.
func TestPerformanceSlotWaitIsBounded(t *testing.T) {
	lab := blockingLab{started: make(chan struct{}, maxConcurrentReports+1), release: make(chan struct{})}
	const bound = 100 * time.Millisecond
	api := &API{Lab: lab, ReportSlotWait: bound}
	h, err := newHTTPHandler(api, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func() (*http.Response, gen.ErrorResponse) {
		resp, err := http.Get(srv.URL + "/model/v1/performance")
		if err != nil {
			t.Error(err)
			return nil, gen.ErrorResponse{}
		}
		defer resp.Body.Close()
		var body gen.ErrorResponse
		if resp.StatusCode != http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Errorf("error body: %v", err)
			}
		}
		return resp, body
	}

	holders := make(chan int, maxConcurrentReports)
	for range maxConcurrentReports {
		go func() {
			resp, _ := get()
			if resp == nil {
				holders <- 0
				return
			}
			holders <- resp.StatusCode
		}()
	}
	for range maxConcurrentReports {
		<-lab.started // every slot is held
	}

	start := time.Now()
	resp, body := get()
	waited := time.Since(start)
	if resp == nil {
		t.FailNow()
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body.Code != "SERVER_BUSY" || body.Retryable == nil || !*body.Retryable {
		t.Fatalf("with every slot held: %d %+v, want 503 SERVER_BUSY, retryable", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Retry-After"); got != "5" {
		t.Fatalf("Retry-After %q, want 5", got)
	}
	if waited < bound || waited > bound+5*time.Second {
		t.Fatalf("answered after %v, want the bound %v (and not much more)", waited, bound)
	}

	close(lab.release)
	for range maxConcurrentReports {
		if code := <-holders; code != http.StatusOK {
			t.Fatalf("a report holding a slot: %d, want 200", code)
		}
	}
	if resp, body := get(); resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("once the slots are free: %+v %+v, want 200", resp, body)
	}
}
