package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/server/report"
	"ramanserve/trainer/synth"
)

// Batches of the batch page: referenceBatches good ones and one under
// review, each of batchScans spectra.
const (
	referenceBatches = 4
	batchScans       = 30
	// contaminated is how many of the last scans of the batch under
	// review carry a contaminant absent from training: T² and Q leave
	// the bands there.
	contaminated = 5
)

// TestBatchPageInChromium goes the way a plant does: train a model and
// promote it, run batches through the prediction channel, read the page
// of one batch before any reference is marked (it says it has no bands,
// and draws the trajectory alone), mark four good batches as references
// over the API, and read the page again: every figure (three analytes,
// T² and Q) is drawn with its band, the contaminated scans are marked
// outside the Q band, and the browser reports no console error and fetches nothing.
// RAMANSERVE_BATCH_PNG names where the screenshot goes.
func TestBatchPageInChromium(t *testing.T) {
	browserPath := chromiumOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	app := startApp(t, t.TempDir())
	base := "http://" + app.HTTPAddr()
	jobID := trainWithRecipe(ctx, t, base)
	version := jobVersion(ctx, t, base, jobID)
	post(ctx, t, base+"/model/load", "application/json", fmt.Sprintf(`{"version":%q}`, version), http.StatusOK)

	pc, err := client.DialPrediction(ctx, app.ZMQEndpoint(), client.PredictionOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var refs []string
	for k := range referenceBatches {
		id := fmt.Sprintf("REF-2026-11-%02d", 20+k)
		runBatch(ctx, t, pc, id, uint64(100+k), 0)
		refs = append(refs, id)
	}
	under := "B-2026-11-27 <i>&amp;</i>"
	runBatch(ctx, t, pc, under, 200, contaminated)
	pageURL := base + "/batches/" + url.PathEscape(under) + "/report?maturity=scan_seq"
	waitForBatch(ctx, t, base, under)
	logPage(ctx, t, pageURL) // fails at once on an answer other than 200

	// No reference batch yet: the page says so and draws the trajectory.
	counts, _ := loadPageInChromium(ctx, t, browserPath, pageURL, "#"+report.SectionBatchReferences, countBatchJS)
	if counts["no-bands"] != 1 || counts[report.SectionBatchTrajectory] != 5 || counts["banded"] != 0 {
		t.Errorf("without references: %v; want the no-bands note and 5 plots without bands", counts)
	}

	for _, id := range refs {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/batches/"+id+"/reference", nil)
		if err != nil {
			t.Fatal(err)
		}
		var ref struct {
			Created bool `json:"created"`
		}
		if status := doJSON(t, req, &ref); status != http.StatusOK || !ref.Created {
			t.Fatalf("PUT /batches/%s/reference: %d", id, status)
		}
	}
	logPage(ctx, t, pageURL)
	counts, png := loadPageInChromium(ctx, t, browserPath, pageURL, "#"+report.SectionBatchReferences, countBatchJS)
	// Three analytes, T² and Q: each drawn, each with its band.
	if counts[report.SectionBatchTrajectory] != 5 || counts["banded"] != 5 || counts["no-bands"] != 0 {
		t.Errorf("with references: %v; want 5 plots, each with its band", counts)
	}
	if counts["references"] != referenceBatches {
		t.Errorf("%d reference batches listed, want %d", counts["references"], referenceBatches)
	}
	// A contaminant the model never saw lies off its latent space: Q.
	if counts["outside:Q (reduced)"] < contaminated || counts["ringed"] == 0 {
		t.Errorf("the contaminated scans are not marked outside the Q band: %v", counts)
	}
	out := os.Getenv("RAMANSERVE_BATCH_PNG")
	if out == "" {
		out = filepath.Join(t.TempDir(), "batch-report.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("batch page: %v; screenshot %s (%d bytes)", counts, out, len(png))
}

// runBatch predicts one batch of batchScans spectra with scan_seq 0, 1,
// ...: a seeded draw of mixtures ordered by EPA, so that the batch's
// concentrations rise with its maturity as an elution does; the last
// contaminated of them carry a contaminant.
func runBatch(ctx context.Context, t *testing.T, pc *client.PredictionClient, batch string, seed uint64, contaminated int) {
	t.Helper()
	g := synth.New(synth.Config{Seed: seed})
	pool := make([]synth.Sample, 4*batchScans)
	for i := range pool {
		pool[i] = g.Next()
	}
	slices.SortFunc(pool, func(a, b synth.Sample) int {
		switch {
		case a.Conc[0] < b.Conc[0]:
			return -1
		case a.Conc[0] > b.Conc[0]:
			return 1
		}
		return 0
	})
	for i := range batchScans {
		s := pool[i*len(pool)/batchScans]
		if i >= batchScans-contaminated {
			s = g.Anomalous(synth.Contaminant)
		}
		if _, err := pc.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: int64(i)},
			&client.ScanContext{BatchID: batch}); err != nil {
			t.Fatalf("predict: %v", err)
		}
	}
}

// waitForBatch waits until GET /batches lists every scan of batch (the
// log commits within its commit interval).
func waitForBatch(ctx context.Context, t *testing.T, base, batch string) {
	t.Helper()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/batches", nil)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Batches []struct {
				BatchID string `json:"batch_id"`
				Count   int    `json:"count"`
			} `json:"batches"`
		}
		doJSON(t, req, &page)
		n, found := 0, false
		for _, b := range page.Batches {
			n += b.Count
			found = found || b.BatchID == batch && b.Count == batchScans
		}
		if found && n == (referenceBatches+1)*batchScans {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the log holds %d scans: %+v", n, page.Batches)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// countBatchJS counts the batch page's drawn plots (as countPlotsJS
// does), those with a band (a filled path of the band's colour: vgsvg
// writes the translucent #9EC5E8 of the page as #9DC4E7 with its
// opacity apart), the
// ringed points, the references listed, the no-bands note, and per
// series the points the table counts outside.
const countBatchJS = `(() => {
  const out = {};
  const sec = document.getElementById("batch-trajectory");
  const svgs = sec ? [...sec.querySelectorAll("svg")] : [];
  out["batch-trajectory"] = svgs.filter(svg => {
    const box = svg.getBoundingClientRect();
    const drawn = [...svg.querySelectorAll("path")].some(p => (p.getAttribute("d") || "").length > 10 && p.getTotalLength() > 0);
    return box.width > 100 && box.height > 50 && drawn;
  }).length;
  out["banded"] = svgs.filter(svg => [...svg.querySelectorAll("path")].some(p => /fill:#9DC4E7/i.test(p.getAttribute("style") || ""))).length;
  out["ringed"] = svgs.reduce((n, svg) => n + [...svg.querySelectorAll("path")].filter(p => /stroke:#C00000/i.test(p.getAttribute("style") || "")).length, 0);
  out["no-bands"] = document.getElementById("no-bands") ? 1 : 0;
  const refs = document.getElementById("reference-batches");
  out["references"] = refs ? Math.max(0, refs.querySelectorAll("tr").length - 1) : 0;
  for (const tr of document.querySelectorAll("#outside-bands table:first-of-type tr")) {
    const td = tr.querySelectorAll("td");
    if (td.length === 3) out["outside:" + td[0].textContent] = Number(td[2].textContent);
  }
  return out;
})()`
