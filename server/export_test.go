package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference/sklearn"
	"ramanserve/registry"
	"ramanserve/service/models"
)

// TestExportModelRoute: GET /model/{version}/export answers the model as a
// scikit-learn Pipeline (joblib, the default) that the importer reads
// back with the model's coefficients, or its artifact byte for byte
// (npz), each as an attachment named after the version; an unknown
// version is 404 MODEL_NOT_FOUND and an unknown format 400
// INVALID_REQUEST, in the error envelope.
func TestExportModelRoute(t *testing.T) {
	dir := t.TempDir()
	reg, err := registry.Open(context.Background(), dir, registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	version, params := stageTrainedModel(t, reg)
	h, err := NewHTTPHandler(&API{Registry: reg, Exporter: models.New(reg, nil, nil)}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, body
	}

	for _, path := range []string{"/model/" + version + "/export", "/model/" + version + "/export?format=joblib"} {
		resp, body := get(path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("%s: %d %s: %.200s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="`+version+`.joblib"` {
			t.Errorf("%s: Content-Disposition %q", path, cd)
		}
		back, info, err := sklearn.Load(context.Background(), bytes.NewReader(body), sklearn.Options{})
		if err != nil {
			t.Fatalf("%s: the export does not import: %v", path, err)
		}
		if !info.Pipeline || !mat.Equal(back.Coef, params.Coef) {
			t.Errorf("%s: imported as %+v with other coefficients", path, info)
		}
	}

	resp, body := get("/model/" + version + "/export?format=npz")
	stored, err := os.ReadFile(filepath.Join(dir, "models", version+".npz"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, stored) {
		t.Fatalf("npz: %d, %d bytes, the artifact has %d", resp.StatusCode, len(body), len(stored))
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != `attachment; filename="`+version+`.npz"` {
		t.Errorf("npz: Content-Disposition %q", cd)
	}

	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/model/no-such-version/export", http.StatusNotFound, "MODEL_NOT_FOUND"},
		{"/model/no-such-version/export?format=npz", http.StatusNotFound, "MODEL_NOT_FOUND"},
		{"/model/" + version + "/export?format=pickle", http.StatusBadRequest, "INVALID_REQUEST"},
	} {
		resp, body := get(tc.path)
		var env struct {
			Code string `json:"code"`
		}
		if err := json.Unmarshal(body, &env); err != nil || resp.StatusCode != tc.status || env.Code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.path, resp.StatusCode, body, tc.status, tc.code)
		}
	}
}

// fixedExporter exports every version as the same bytes.
type fixedExporter struct{}

func (fixedExporter) Export(_ context.Context, version, format string) (models.Exported, error) {
	return models.Exported{FileName: version + "." + format, Content: []byte("model")}, nil
}

// TestExportTakesAReportSlot: an export reads a whole model file, so it
// takes one of the review pages' report slots: while performance reports
// hold them all, an export is answered 503 SERVER_BUSY, retryable, after
// ReportSlotWait; once they are free, it is answered.
func TestExportTakesAReportSlot(t *testing.T) {
	lab := blockingLab{started: make(chan struct{}, maxConcurrentReports), release: make(chan struct{})}
	api := &API{Lab: lab, Exporter: fixedExporter{}, ReportSlotWait: 100 * time.Millisecond}
	h, err := newHTTPHandler(api, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	holders := make(chan int, maxConcurrentReports)
	for range maxConcurrentReports {
		go func() {
			resp, err := http.Get(srv.URL + "/model/v1/performance")
			if err != nil {
				holders <- 0
				return
			}
			resp.Body.Close()
			holders <- resp.StatusCode
		}()
	}
	for range maxConcurrentReports {
		<-lab.started
	}
	export := func() (*http.Response, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + "/model/v1/export?format=npz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, body := export()
	var env struct {
		Code      string `json:"code"`
		Retryable bool   `json:"retryable"`
	}
	if err := json.Unmarshal(body, &env); err != nil || resp.StatusCode != http.StatusServiceUnavailable || env.Code != "SERVER_BUSY" || !env.Retryable ||
		resp.Header.Get("Retry-After") != "5" {
		t.Fatalf("with every slot held: %d %s, want 503 SERVER_BUSY, retryable, Retry-After 5", resp.StatusCode, body)
	}
	close(lab.release)
	for range maxConcurrentReports {
		if code := <-holders; code != http.StatusOK {
			t.Fatalf("a report holding a slot: %d", code)
		}
	}
	if resp, body := export(); resp.StatusCode != http.StatusOK || string(body) != "model" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="v1.npz"` {
		t.Fatalf("once the slots are free: %d %q %v", resp.StatusCode, body, resp.Header)
	}
}
