package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/server/report"
	"ramanserve/trainer/synth"
)

// TestSpectrumPageInChromium: a model trained through the API with a
// recipe and regions is promoted; a spectrum with a band the calibration
// never saw is predicted over the channel without options, so its Q is
// above the limit and the log's writer stores its contributions. The
// page of that spectrum renders in Chromium with every figure (the
// prediction's confidence and limits, the spectrum against the mean, the
// residual, the contributions to T2 and Q), no console error and no
// request but itself. RAMANSERVE_SPECTRUM_PNG names where the screenshot
// goes.
func TestSpectrumPageInChromium(t *testing.T) {
	browserPath := chromiumOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	proc := startAppWith(t, t.TempDir(), app.EvidenceConfig{LogSpectra: true, ExplainExceedances: true})
	base := "http://" + proc.HTTPAddr()
	jobID := trainWithRecipe(ctx, t, base)
	version := jobVersion(ctx, t, base, jobID)
	post(ctx, t, base+"/model/load", "application/json", fmt.Sprintf(`{"version":%q}`, version), http.StatusOK)

	odd := append([]float64(nil), synth.New(synth.Config{Seed: 12}).Next().Intensities...)
	for j := 900; j < 940; j++ {
		odd[j] *= 3
	}
	c, err := client.DialPrediction(ctx, proc.ZMQEndpoint(), client.PredictionOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reply, err := c.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: odd, ScanSeq: 1}, &client.ScanContext{BatchID: "B-page"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Diagnostics["q_reduced"] <= 1 {
		t.Fatalf("the spectrum with a foreign band is within the Q limit: %v", reply.Diagnostics)
	}
	id := waitContributions(ctx, t, base, "B-page")

	pageURL := base + "/predictions/" + id + "/report"
	logPage(ctx, t, pageURL)
	counts, png := loadPageInChromium(ctx, t, browserPath, pageURL, "#"+report.SectionRecords, countSpectrumPlotsJS)
	want := map[string]int{
		report.SectionPrediction: 2, report.SectionSpectrum: 1, report.SectionResidual: 1, report.SectionContributions: 2,
	}
	for sec, n := range want {
		if counts[sec] != n {
			t.Errorf("section #%s: %d rendered plots with drawn paths, want %d", sec, counts[sec], n)
		}
	}
	if counts["missing"] != 0 {
		t.Error("the page says something is missing, with the spectrum logged and the model in the registry")
	}
	out := os.Getenv("RAMANSERVE_SPECTRUM_PNG")
	if out == "" {
		out = filepath.Join(t.TempDir(), "spectrum.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("spectrum page: plots %v; screenshot %s (%d bytes)", counts, out, len(png))
}

// waitContributions waits until the log holds the active record of
// batch with its contributions, and returns its prediction id.
func waitContributions(ctx context.Context, t *testing.T, base, batch string) string {
	t.Helper()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/predictions?batch_id="+url.QueryEscape(batch), nil)
		var page struct {
			Predictions []struct {
				PredictionID string `json:"prediction_id"`
			} `json:"predictions"`
		}
		if status := doJSON(t, req, &page); status != http.StatusOK {
			t.Fatalf("GET /predictions: %d", status)
		}
		if len(page.Predictions) > 0 {
			id := page.Predictions[0].PredictionID
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/predictions/"+id, nil)
			var recs struct {
				Records []struct {
					Contributions json.RawMessage `json:"contributions"`
				} `json:"records"`
			}
			if status := doJSON(t, req, &recs); status != http.StatusOK || len(recs.Records) == 0 || len(recs.Records[0].Contributions) == 0 {
				t.Fatalf("GET /predictions/%s: %d, no contributions stored", id, status)
			}
			return id
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the prediction of batch %s was not logged: %v", batch, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// countSpectrumPlotsJS counts, per section of the spectrum's page, the
// <svg> elements with a layout box and a drawn path; "missing" is 1 when
// the page says a part could not be drawn.
const countSpectrumPlotsJS = `(() => {
  const out = {};
  for (const id of ["prediction", "spectrum", "residual", "contributions", "records"]) {
    const sec = document.getElementById(id);
    out["present:" + id] = sec ? 1 : 0;
    if (!sec) { out[id] = 0; continue; }
    out[id] = [...sec.querySelectorAll("svg")].filter(svg => {
      const box = svg.getBoundingClientRect();
      const drawn = [...svg.querySelectorAll("path")].some(p => (p.getAttribute("d") || "").length > 10 && p.getTotalLength() > 0);
      return box.width > 100 && box.height > 50 && drawn;
    }).length;
  }
  out["missing"] = document.getElementById("missing") ? 1 : 0;
  return out;
})()`
