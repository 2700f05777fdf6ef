package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/service/training"
	"ramanserve/trainer/jobs"
)

// jobsByID is a training service that knows a fixed set of jobs.
type jobsByID map[string]jobs.Job

func (j jobsByID) Reserve(context.Context) (training.Upload, error) { return nil, jobs.ErrQueueFull }

func (j jobsByID) Get(_ context.Context, id string) (jobs.Job, error) {
	if job, ok := j[id]; ok {
		return job, nil
	}
	return jobs.Job{}, jobs.ErrJobNotFound
}

func (j jobsByID) List(jobs.Status, int, string) (jobs.Page, error) {
	return jobs.Page{}, nil
}

func (j jobsByID) Cancel(context.Context, string) (jobs.Job, error) {
	return jobs.Job{}, jobs.ErrJobNotFound
}

func stageSmallModel(t *testing.T, reg *registry.Registry, operator string) string {
	t.Helper()
	axis := []float64{500, 600, 700, 800, 900, 1000}
	p := &inference.PLSParams{
		Meta:    inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA}, XMean: make([]float64, 6), XScale: []float64{1, 1, 1, 1, 1, 1},
		Coef: mat.NewDense(6, 1, []float64{1, -2, 3, -1, 0.5, 2}), Intercept: []float64{4},
	}
	v, _, err := reg.AddStaged(context.Background(), registry.StagedModel{
		Ext: ".npz", TrainedAt: time.Now(), Algorithm: "PLS2-NIPALS", Operator: operator,
		Write: func(_ string, w io.Writer) error { return inference.WriteArtifact(w, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestReportRoutes(t *testing.T) {
	reg, err := registry.Open(context.Background(), t.TempDir(), registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	version := stageSmallModel(t, reg, `<script>alert("op")</script>`)
	gone := stageSmallModel(t, reg, "x")
	if err := reg.Delete(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	known := jobsByID{
		"done":    {ID: "done", Status: jobs.Done, Result: &jobs.Result{NewVersion: version}},
		"deleted": {ID: "deleted", Status: jobs.Done, Result: &jobs.Result{NewVersion: gone}},
		"running": {ID: "running", Status: jobs.Running},
		"queued":  {ID: "queued", Status: jobs.Queued},
		"failed":  {ID: "failed", Status: jobs.Failed},
	}
	h, err := NewHTTPHandler(&API{Registry: reg, Training: known}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, path := range []string{"/model/" + version + "/report", "/training/done/report"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		page := string(body)
		if !strings.Contains(page, `<section id="regression-vectors">`) || !strings.Contains(page, "<svg") || !strings.Contains(page, version) {
			t.Errorf("%s: not the model's page", path)
		}
		if strings.Contains(page, `id="lab-performance"`) {
			t.Errorf("%s: a lab section without lab reports", path)
		}
		if strings.Contains(page, "<script") || !strings.Contains(page, "&lt;script&gt;") {
			t.Errorf("%s: the operator is not escaped", path)
		}
	}

	for path, want := range map[string]struct {
		status int
		code   string
	}{
		"/model/nope/report":         {404, "MODEL_NOT_FOUND"},
		"/model/" + gone + "/report": {404, "MODEL_NOT_FOUND"},
		"/model/list/report":         {404, "MODEL_NOT_FOUND"},
		"/training/nope/report":      {404, "JOB_NOT_FOUND"},
		"/training/deleted/report":   {404, "MODEL_NOT_FOUND"},
		"/training/running/report":   {409, "JOB_NOT_DONE"},
		"/training/queued/report":    {409, "JOB_NOT_DONE"},
		"/training/failed/report":    {409, "JOB_NOT_DONE"},
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Code string }
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode != want.status || e.Code != want.code {
			t.Errorf("%s: %d %s, want %d %s", path, resp.StatusCode, body, want.status, want.code)
		}
	}
}
