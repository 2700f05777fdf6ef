package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/service/training"
	"ramanserve/trainer/jobs"
)

// panickingTraining is a training service with a bug: every call panics.
type panickingTraining struct{}

func (panickingTraining) Reserve(context.Context) (training.Upload, error) {
	panic("bug in Reserve")
}

func (panickingTraining) Get(context.Context, string) (jobs.Job, error) {
	panic("bug in Job: secret detail")
}

func (panickingTraining) List(jobs.Status, int, string) (jobs.Page, error) {
	panic("bug in Jobs")
}

func (panickingTraining) Cancel(context.Context, string) (jobs.Job, error) {
	panic("bug in Cancel")
}

// TestPanicBecomesInternalError: a handler that panics answers 500 with
// the ErrorResponse envelope, code INTERNAL_ERROR, and no stack trace or
// panic text in the body; the server keeps answering afterwards.
func TestPanicBecomesInternalError(t *testing.T) {
	var logs bytes.Buffer
	h, err := NewHTTPHandler(&API{Training: panickingTraining{}}, HTTPConfig{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i := 0; i < 2; i++ { // twice: the first panic must not break the server
		resp, err := http.Get(srv.URL + "/training/job-1")
		if err != nil {
			t.Fatal(err)
		}
		var body gen.ErrorResponse
		raw := new(bytes.Buffer)
		raw.ReadFrom(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(raw.Bytes(), &body); err != nil {
			t.Fatalf("body is not JSON: %v: %s", err, raw)
		}
		if resp.StatusCode != http.StatusInternalServerError || body.Code != "INTERNAL_ERROR" || body.Message == "" ||
			body.Retryable == nil || *body.Retryable || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("got %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
		}
		if strings.Contains(raw.String(), "secret detail") || strings.Contains(raw.String(), "goroutine") {
			t.Fatalf("the body leaks the panic: %s", raw)
		}
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
}

// TestHandlerOutlivesTheBodyDeadline: once a JSON body has arrived, its
// deadline no longer applies. A handler still working after it (a large
// model load) keeps its request context; a read deadline left set would
// make net/http's background read fail and cancel the request.
func TestHandlerOutlivesTheBodyDeadline(t *testing.T) {
	const total = 300 * time.Millisecond
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(3 * total):
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
			// The client never sees this: the connection is gone. The
			// test sees no 200.
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &bodyDeadlines{next: handler, idle: time.Second, jsonTotal: total}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	resp, err := http.Post("http://"+ln.Addr().String()+"/model/load", "application/json", strings.NewReader(`{"version":"v1"}`))
	if err != nil {
		t.Fatalf("the request was cut after its body arrived: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200: the handler's context was cancelled", resp.StatusCode)
	}
}
