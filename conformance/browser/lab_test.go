package browser

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/inference"
	"ramanserve/inference/predlog"
	"ramanserve/inference/reconcile"
	"ramanserve/inference/registry"
	"ramanserve/server"
	"ramanserve/server/report"
)

// Lab results of the page's lab section: labBatches batches of
// labPerBatch samples.
const (
	labBatches  = 8
	labPerBatch = 6
)

// TestReportPageWithLabInChromium loads the review page of a trained
// model whose logged predictions have lab results: the lab section (lab
// against predicted, bias by batch, per analyte) renders in Chromium
// with the rest of the page, fetching nothing. The model is trained
// through the API; its predictions and the shadow's are written into a
// real prediction log and the lab's CSV is matched by a real Reconciler,
// which the page's handler reads through server.API.LabReports.
// RAMANSERVE_REPORT_LAB_PNG names where the screenshot goes.
func TestReportPageWithLabInChromium(t *testing.T) {
	browserPath := chromiumOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	dir := t.TempDir()
	base, stop := startServerIn(t, dir)
	version := jobVersion(ctx, t, base, trainWithRecipe(ctx, t, base))
	stop()
	reg, err := registry.Open(ctx, dir, registry.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	rec := reconcileLab(ctx, t, version)
	h, err := server.NewHTTPHandler(&server.API{Registry: reg, LabReports: rec}, server.HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h) // 127.0.0.1
	defer srv.Close()

	pageURL := srv.URL + "/model/" + version + "/report"
	logPage(ctx, t, pageURL)
	counts, png := loadInChromium(ctx, t, browserPath, pageURL)
	// Three analytes: a lab against predicted plot and a control chart each.
	if counts[report.SectionLab] != 6 {
		t.Errorf("section #%s: %d rendered plots with drawn paths, want 6", report.SectionLab, counts[report.SectionLab])
	}
	if counts[report.SectionVectors] != 3 || counts[report.SectionMeasured] != 3 {
		t.Errorf("the rest of the page is not drawn: %v", counts)
	}
	out := os.Getenv("RAMANSERVE_REPORT_LAB_PNG")
	if out == "" {
		out = filepath.Join(t.TempDir(), "report-lab.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("report page with lab results: plots %v; screenshot %s (%d bytes)", counts, out, len(png))
}

// reconcileLab logs, in a prediction log of its own, labBatches batches
// of version's predictions (active, reading high by a bias that drifts
// from batch to batch) and a candidate's (shadow), posts the lab's CSV
// for them, and returns the Reconciler holding them.
func reconcileLab(ctx context.Context, t *testing.T, version string) *reconcile.Reconciler {
	t.Helper()
	dir := t.TempDir()
	l, err := predlog.Open(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)
	var csv strings.Builder
	csv.WriteString("lab_sample_id,batch_id,scan_seq,EPA,DHA,DPA\n")
	truth := func(b, i int, a inference.Analyte) float64 {
		return []float64{12, 8, 3}[a] + float64((b*7+i*3+int(a)*5)%11)*0.4
	}
	for b := range labBatches {
		batch := fmt.Sprintf("B-2026-11-%02d", 10+b)
		for i := range labPerBatch {
			id := predlog.NewPredictionID()
			at := t0.Add(time.Duration(b)*3*time.Hour + time.Duration(i)*10*time.Minute)
			active := &predlog.Record{PredictionID: id, Time: at, ModelVersion: version, Role: predlog.RoleActive,
				BatchID: batch, HasBatchID: true, ScanSeq: float64(i), HasScanSeq: true}
			shadow := &predlog.Record{PredictionID: id, Time: at, ModelVersion: "candidate-2", Role: predlog.RoleShadow,
				BatchID: batch, HasBatchID: true, ScanSeq: float64(i), HasScanSeq: true}
			fmt.Fprintf(&csv, "HPLC-%d-%d,%s,%d", b, i, batch, i)
			for a := range inference.Analyte(inference.NumAnalytes) {
				y := truth(b, i, a)
				noise := float64((b*13+i*5+int(a))%7-3) * 0.05
				active.Concentrations.Set(a, y+0.1+0.04*float64(b)+noise)
				shadow.Concentrations.Set(a, y-noise)
				fmt.Fprintf(&csv, ",%.3f", y)
			}
			csv.WriteString("\n")
			if !l.Record(active) || !l.Record(shadow) {
				t.Fatal("a record was dropped")
			}
		}
	}
	// Closing commits the queue; open again to read it all.
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err = predlog.Open(ctx, dir, predlog.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	rec, err := reconcile.New(l, &reconcile.MemoryStore{}, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	records, err := reconcile.ParseCSV(strings.NewReader(csv.String()))
	if err != nil {
		t.Fatal(err)
	}
	posted, err := rec.Post(ctx, records)
	if err != nil || posted.Matched != labBatches*labPerBatch {
		t.Fatalf("lab post: %+v, %v", posted, err)
	}
	return rec
}

// jobVersion reads the version a done job staged.
func jobVersion(ctx context.Context, t *testing.T, base, jobID string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/training/"+jobID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Result struct {
			NewVersion string `json:"new_version"`
		} `json:"result"`
	}
	if status := doJSON(t, req, &job); status != http.StatusOK || job.Result.NewVersion == "" {
		t.Fatalf("GET /training/%s: %d, version %q", jobID, status, job.Result.NewVersion)
	}
	return job.Result.NewVersion
}
