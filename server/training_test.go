package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/service/training"
	"ramanserve/trainer/jobs"
)

// fullQueue is a training service whose queue is always full.
type fullQueue struct{ reserved atomic.Int32 }

func (f *fullQueue) Reserve(context.Context) (training.Upload, error) {
	f.reserved.Add(1)
	return nil, fmt.Errorf("%w: 4 jobs are waiting", jobs.ErrQueueFull)
}

func (f *fullQueue) Get(context.Context, string) (jobs.Job, error) {
	return jobs.Job{}, jobs.ErrJobNotFound
}

func (f *fullQueue) List(jobs.Status, int, string) (jobs.Page, error) {
	return jobs.Page{}, nil
}

func (f *fullQueue) Cancel(context.Context, string) (jobs.Job, error) {
	return jobs.Job{}, jobs.ErrJobNotFound
}

// endlessBody is a request body that never ends and counts what the
// server read of it.
type endlessBody struct{ read atomic.Int64 }

func (b *endlessBody) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	for i := range p {
		p[i] = '1'
	}
	b.read.Add(int64(len(p)))
	return len(p), nil
}

// TestFullQueueAnswersBeforeTheBody: with no free slot the upload is
// answered 429 TRAINING_QUEUE_FULL, with Retry-After and Connection:
// close, while the client is still sending, and the body is not parsed.
func TestFullQueueAnswersBeforeTheBody(t *testing.T) {
	svc := &fullQueue{}
	h, err := NewHTTPHandler(&API{Training: svc}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := &endlessBody{}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/training/start", io.NopCloser(body))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=xyz")
	start := time.Now()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("no answer while the body was still being sent: %v", err)
	}
	defer resp.Body.Close()
	var e gen.ErrorResponse
	json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusTooManyRequests || e.Code != "TRAINING_QUEUE_FULL" ||
		resp.Header.Get("Retry-After") == "" || !resp.Close {
		t.Fatalf("got %d %s, Retry-After %q, close %v", resp.StatusCode, e.Code, resp.Header.Get("Retry-After"), resp.Close)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
	if svc.reserved.Load() != 1 {
		t.Fatalf("Reserve called %d times", svc.reserved.Load())
	}
}
