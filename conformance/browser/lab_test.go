package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/server/report"
	"ramanserve/trainer/synth"
)

// Lab results of the page's lab section: labBatches batches of
// labPerBatch samples.
const (
	labBatches  = 6
	labPerBatch = 5
)

// TestReportPageWithLabInChromium goes the way a plant does: train a
// model through the API and promote it, send predicts with a batch
// context over the prediction channel, post the lab's CSV for those
// spectra, and read the model's review page. Its lab section (lab against
// predicted and bias by batch, per analyte) renders in Chromium with the
// rest of the page, fetching nothing. RAMANSERVE_REPORT_LAB_PNG names
// where the screenshot goes.
func TestReportPageWithLabInChromium(t *testing.T) {
	browserPath := chromiumOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	app := startApp(t, t.TempDir())
	base := "http://" + app.HTTPAddr()
	jobID := trainWithRecipe(ctx, t, base)
	version := jobVersion(ctx, t, base, jobID)
	post(ctx, t, base+"/model/load", "application/json", fmt.Sprintf(`{"version":%q}`, version), http.StatusOK)
	csv := predictBatches(ctx, t, app.ZMQEndpoint())
	// The log commits within its commit interval: wait for the lab post to
	// match every record.
	for {
		body := post(ctx, t, base+"/lab-results", "text/csv", csv, http.StatusOK)
		var out struct{ Matched int }
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		if out.Matched == labBatches*labPerBatch {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("lab post: %s", body)
		case <-time.After(100 * time.Millisecond):
		}
	}

	pageURL := base + "/training/" + jobID + "/report"
	logPage(ctx, t, pageURL)
	counts, png := loadInChromium(ctx, t, browserPath, pageURL)
	// Three analytes: a lab against predicted plot and a control chart each.
	if counts[report.SectionLab] != 6 {
		t.Errorf("section #%s: %d rendered plots with drawn paths, want 6", report.SectionLab, counts[report.SectionLab])
	}
	if counts["bias-names"] == 0 {
		t.Error("the bias charts name no batch")
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

// predictBatches sends labBatches batches of synthetic spectra with their
// batch id and scan_seq, and returns the lab's CSV for them: the true
// concentrations of each spectrum.
func predictBatches(ctx context.Context, t *testing.T, endpoint string) string {
	t.Helper()
	pc, err := client.DialPrediction(ctx, endpoint, client.PredictionOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	g := synth.New(synth.Config{Seed: 23})
	var csv strings.Builder
	csv.WriteString("lab_sample_id,batch_id,scan_seq,EPA,DHA,DPA\n")
	for b := range labBatches {
		batch := fmt.Sprintf("B-2026-11-%02d", 10+b)
		for i := range labPerBatch {
			s := g.Next()
			seq := int64(b*labPerBatch + i)
			if _, err := pc.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: seq},
				&client.ScanContext{BatchID: batch}); err != nil {
				t.Fatalf("predict: %v", err)
			}
			fmt.Fprintf(&csv, "HPLC-%d,%s,%d,%.4f,%.4f,%.4f\n", seq, batch, seq, s.Conc[0], s.Conc[1], s.Conc[2])
		}
	}
	return csv.String()
}

// post sends body and fails unless the answer has status want.
func post(ctx context.Context, t *testing.T, url, contentType, body string, want int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s %v", url, resp.StatusCode, bytes.TrimSpace(b), err)
	}
	return b
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
