package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/service/models"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
)

// TestExcludedScanIDsStayOutOfTheIndex: index.json is one file rewritten
// whole on every load, activation and deletion and read whole at
// start-up (at most 64 MiB), so a version's entry must not grow with what
// the upload excluded: up to 1 MiB of meta per training job would let a
// few dozen jobs make every registry write slow and the index
// unreadable. The entry keeps the counts (training_rows, rows_used); the
// ids stay in the model file's review, where the report reads them.
func TestExcludedScanIDsStayOutOfTheIndex(t *testing.T) {
	dir := t.TempDir()
	reg, err := registry.Open(context.Background(), dir, registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	excluded := make([]string, 1000)
	for k := range excluded {
		excluded[k] = fmt.Sprintf("excluded-scan-%04d-%s", k, strings.Repeat("x", 200))
	}
	axis := []float64{500, 600, 700, 800, 900, 1000}
	p := &inference.PLSParams{
		Meta: inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: axis, TrainedAt: time.Now(),
			TrainedSamples: 10},
		Targets: []inference.Analyte{inference.EPA}, XMean: make([]float64, 6), XScale: []float64{1, 1, 1, 1, 1, 1},
		Coef: mat.NewDense(6, 1, []float64{1, -2, 3, -1, 0.5, 2}), Intercept: []float64{4},
		Review: &inference.Review{ExcludedScanIDs: excluded},
	}
	lin := jobs.Lineage{Meta: jobs.Meta{Operator: "op", Options: jobs.TrainingOptions{ExcludeScanIDs: excluded}},
		JobID: "job-1", Rows: 1010, RowsUsed: 10}
	version, _, err := models.Stager{Registry: reg}.Stage(context.Background(), &trainer.Result{Params: p, Components: 1}, lin)
	if err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(index), excluded[0]) || len(index) > 64<<10 {
		t.Errorf("index.json is %d bytes and holds the excluded scan ids", len(index))
	}
	e, err := reg.Describe(version)
	if err != nil {
		t.Fatal(err)
	}
	if d := modelDetail(&e); d.Lineage.TrainingRows == nil || *d.Lineage.TrainingRows != 1010 || d.Lineage.RowsUsed == nil || *d.Lineage.RowsUsed != 10 {
		t.Errorf("model lineage %+v", d.Lineage)
	}

	h, err := NewHTTPHandler(&API{Registry: reg}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/model/" + version + "/report")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), excluded[0]) || !strings.Contains(string(page), "1000: ") {
		t.Errorf("the report (%d) does not list the excluded rows from the model file", resp.StatusCode)
	}
}
