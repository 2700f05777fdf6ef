// Package browser tests the review page and a batch's page against its
// control bands in a real browser: Debian's headless Chromium, driven
// with chromedp. It trains a model through the API with a recipe and
// regions, loads the job's report page (or a batch's) and checks that it
// renders without a console error or exception, that it fetches nothing
// but itself, and that every plot is there; then it writes a full-page
// PNG screenshot. It also loads GET /docs, the contract rendered by Redoc
// (docs_test.go).
//
// It runs under `make test-browser` (which installs chromium first), never
// as part of the plain `go test ./...`: RAMANSERVE_TEST_BROWSER=1 enables
// it, RAMANSERVE_CHROMIUM names the browser (default: chromium on PATH)
// and RAMANSERVE_REPORT_PNG and RAMANSERVE_BATCH_PNG where the
// screenshots go (default: the test's temporary directory).
package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/server/report"
	"ramanserve/trainer/synth"
)

// trainingMeta asks for the recipe a chemometrician would: despike,
// first-derivative Savitzky-Golay, SNV, and two regions; one row excluded.
const trainingMeta = `{
  "operator": "browser-test <b>&amp;</b>",
  "source_batches": ["B-2026-11-23"],
  "notes": "review page test",
  "max_components": 10,
  "cv_folds": 5,
  "exclude_scan_ids": [%q],
  "regions": [[600, 1800], [2800, 3100]],
  "preprocessing": [
    {"step": "despike"},
    {"step": "savgol", "window": 15, "polyorder": 2, "deriv": 1},
    {"step": "snv"}
  ]
}`

// trainingRows is small enough to train in a few seconds on a shared
// machine and large enough for every plot to show a cloud.
const trainingRows = 160

// chromiumOrSkip skips the test unless RAMANSERVE_TEST_BROWSER is set,
// and returns the browser to run.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	if os.Getenv("RAMANSERVE_TEST_BROWSER") == "" {
		t.Skip("run by `make test-browser`, which installs chromium first")
	}
	if p := os.Getenv("RAMANSERVE_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (make deps-browser): %v", err)
	}
	return p
}

func TestReportPageInChromium(t *testing.T) {
	browserPath := chromiumOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	base, _ := startServer(t)
	jobID := trainWithRecipe(ctx, t, base)
	pageURL := base + "/training/" + jobID + "/report"
	logPage(ctx, t, pageURL)
	counts, png := loadInChromium(ctx, t, browserPath, pageURL)
	// Three analytes: one plot each, and one T2/Q plot.
	want := map[string]int{
		report.SectionCV: 3, report.SectionMeasured: 3, report.SectionResiduals: 3,
		report.SectionVectors: 3, report.SectionT2Q: 1,
		report.SectionVIP: 1, report.SectionInfluence: 3, report.SectionWeights: 2, report.SectionSpectra: 2,
	}
	// The scores plot needs two components; with them, it is drawn.
	if counts["present:"+report.SectionScores] == 1 && counts[report.SectionScores] != 1 {
		t.Errorf("section #%s: %d rendered plots with drawn paths, want 1", report.SectionScores, counts[report.SectionScores])
	}
	for id, n := range want {
		if counts[id] != n {
			t.Errorf("section #%s: %d rendered plots with drawn paths, want %d", id, counts[id], n)
		}
	}
	for _, id := range []string{report.SectionOutliers, report.SectionLineage, report.SectionRecipe, report.SectionComponents} {
		if counts["present:"+id] != 1 {
			t.Errorf("section #%s is missing", id)
		}
	}
	// No lab result yet: the lab section says so and draws nothing.
	if counts["present:"+report.SectionLab] != 1 || counts[report.SectionLab] != 0 {
		t.Errorf("without lab results, section #%s: present %d, %d plots", report.SectionLab, counts["present:"+report.SectionLab], counts[report.SectionLab])
	}
	if counts["shaded"] == 0 || counts["shaded:"+report.SectionWeights] == 0 {
		t.Errorf("the regression vectors shade %d excluded regions, the weights and loadings %d", counts["shaded"], counts["shaded:"+report.SectionWeights])
	}
	if counts["serif"] != 0 {
		t.Errorf("%d texts of the plots are in a serif font, not the page's family", counts["serif"])
	}
	// Any pair of components, coloured by an analyte: t2 against t1 by DPA.
	if counts["present:"+report.SectionScores] == 1 {
		pair, _ := loadInChromium(ctx, t, browserPath, pageURL+"?scores_x=2&scores_y=1&scores_color=DPA")
		if pair[report.SectionScores] != 1 || pair["scores-colours"] < 2 {
			t.Errorf("scores of t2 against t1 coloured by DPA: %d plots, %d point colours", pair[report.SectionScores], pair["scores-colours"])
		}
	}
	out := os.Getenv("RAMANSERVE_REPORT_PNG")
	if out == "" {
		out = filepath.Join(t.TempDir(), "report.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("report page: plots %v; screenshot %s (%d bytes)", counts, out, len(png))
}

// loadInChromium loads url in a fresh headless Chromium, fails the test
// on any console error, exception or request other than url itself, and
// returns the plots counted by countPlotsJS and a full-page PNG.
func loadInChromium(ctx context.Context, t *testing.T, browserPath, url string) (map[string]int, []byte) {
	t.Helper()
	return loadPageInChromium(ctx, t, browserPath, url, "#lineage", countPlotsJS)
}

// loadPageInChromium is loadInChromium for any page of the package
// report: it waits for the element ready, the page's last section, and
// counts the plots with countJS.
func loadPageInChromium(ctx context.Context, t *testing.T, browserPath, url, ready, countJS string) (map[string]int, []byte) {
	t.Helper()
	events := &pageEvents{}
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		chromedp.NoSandbox, // the test may run as root (CI containers)
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("lang", "en-US"),
	)...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(events.add))
	defer cancelTab()

	if err := chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitReady(ready)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	counts, err := chromedp.Run(tab, chromedp.Evaluate[map[string]int](countJS))
	if err != nil {
		t.Fatalf("count the plots: %v", err)
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	for msg := range events.problems() {
		t.Errorf("browser reported: %s", msg)
	}
	for _, u := range events.requestedURLs() {
		if u != url {
			t.Errorf("the page requested %s; it must fetch nothing but itself", u)
		}
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Fatalf("screenshot is not a PNG of a page (%d bytes)", len(png))
	}
	return counts, png
}

// countPlotsJS counts, per section, the <svg> elements that have a
// layout box and at least one path with drawing commands; "present:<id>"
// is 1 for each section present, "shaded" counts the filled regions of
// the regression vectors' plots ("shaded:weights-loadings" of the weights
// and loadings), "serif" the plot texts not in the page's font family,
// "scores-colours" the distinct fill colours of the scores plot and
// "bias-names" the batch names written in the bias charts.
const countPlotsJS = `(() => {
  const out = {};
  for (const id of ["cv-curve", "measured-predicted", "residuals", "regression-vectors", "t2-q", "outliers", "lineage", "recipe", "lab-performance", "components", "scores", "vip", "influence", "weights-loadings", "spectra"]) {
    const sec = document.getElementById(id);
    out["present:" + id] = sec ? 1 : 0;
    if (!sec) { out[id] = 0; continue; }
    out[id] = [...sec.querySelectorAll("svg")].filter(svg => {
      const box = svg.getBoundingClientRect();
      const drawn = [...svg.querySelectorAll("path")].some(p => (p.getAttribute("d") || "").length > 10 && p.getTotalLength() > 0);
      return box.width > 100 && box.height > 50 && drawn;
    }).length;
  }
  const shaded = id => {
    const sec = document.getElementById(id);
    return sec ? [...sec.querySelectorAll("path")].filter(p => /fill:#(AF|B0){3}/i.test(p.getAttribute("style") || "")).length : 0;
  };
  out["shaded"] = shaded("regression-vectors");
  out["shaded:weights-loadings"] = shaded("weights-loadings");
  // The font the browser computes for the plots' text.
  out["serif"] = [...document.querySelectorAll("figure svg text")].filter(t => !/Liberation Sans|Arial|Helvetica/.test(getComputedStyle(t).fontFamily)).length;
  // The distinct fill colours of the scores plot's points.
  const sc = document.getElementById("scores");
  out["scores-colours"] = sc ? new Set([...sc.querySelectorAll("path")].map(p => (/fill:(#[0-9a-f]{6})/i.exec(p.getAttribute("style") || "") || [])[1]).filter(Boolean)).size : 0;
  // The names written in the bias charts (axis and out-of-control points).
  out["bias-names"] = [...document.querySelectorAll("figure[id^=bias-] text")].filter(t => /[A-Za-z]/.test(t.textContent) && /-/.test(t.textContent)).length;
  return out;
})()`

// pageEvents records what the browser reports: console errors,
// exceptions, log entries of level error (a CSP violation is one), and
// every request the page makes.
type pageEvents struct {
	mu       sync.Mutex
	errors   []string
	requests []string
}

func (e *pageEvents) add(ev any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			e.errors = append(e.errors, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		e.errors = append(e.errors, fmt.Sprintf("exception: %s at %s:%d", ev.ExceptionDetails.Text, ev.ExceptionDetails.URL, ev.ExceptionDetails.LineNumber))
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			e.errors = append(e.errors, fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		e.requests = append(e.requests, ev.Request.URL)
	}
}

func (e *pageEvents) problems() func(func(string) bool) {
	e.mu.Lock()
	list := append([]string(nil), e.errors...)
	e.mu.Unlock()
	return func(yield func(string) bool) {
		for _, s := range list {
			if !yield(s) {
				return
			}
		}
	}
}

func (e *pageEvents) requestedURLs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

// logPage fetches the page once over HTTP and logs its size and the
// server's time to answer (read the model file, draw, write).
func logPage(ctx context.Context, t *testing.T, url string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	t.Logf("report page: %d bytes in %v (%d training rows)", n, time.Since(start).Round(time.Millisecond), trainingRows)
}

// startServer runs an in-process server on loopback ports with an empty
// registry and returns its HTTP base URL and a function that stops it
// (also called at the end of the test).
func startServer(t *testing.T) (base string, stop func()) {
	return startServerIn(t, t.TempDir())
}

func startServerIn(t *testing.T, registryDir string) (base string, stop func()) {
	t.Helper()
	proc := startApp(t, registryDir)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := proc.Shutdown(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return "http://" + proc.HTTPAddr(), stop
}

// startApp starts the server; the test's cleanup shuts it down.
func startApp(t *testing.T, registryDir string) *app.App {
	t.Helper()
	return startAppWith(t, registryDir, app.EvidenceConfig{})
}

// startAppWith is startApp with the evidence configuration ev.
func startAppWith(t *testing.T, registryDir string, ev app.EvidenceConfig) *app.App {
	t.Helper()
	proc, err := app.Start(context.Background(), app.Config{
		HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: registryDir,
		Logger: slog.New(slog.DiscardHandler), Evidence: ev,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		proc.Shutdown(ctx)
	})
	return proc
}

// trainWithRecipe uploads synthetic spectra with trainingMeta and waits
// for the job to be done; it returns the job id.
func trainWithRecipe(ctx context.Context, t *testing.T, base string) string {
	t.Helper()
	var csv bytes.Buffer
	if err := synth.New(synth.Config{Seed: 11}).WriteCSV(ctx, &csv, trainingRows); err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf(trainingMeta, thirdScanID(t, csv.Bytes()))
	contentType, body := client.TrainingBody([]byte(meta), bytes.NewReader(csv.Bytes()))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/training/start", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	var accepted struct {
		JobID string `json:"job_id"`
	}
	if status := doJSON(t, req, &accepted); status != http.StatusAccepted {
		t.Fatalf("POST /training/start: %d", status)
	}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/training/"+accepted.JobID, nil)
		var job struct {
			Status string          `json:"status"`
			Error  json.RawMessage `json:"error"`
		}
		if status := doJSON(t, req, &job); status != http.StatusOK {
			t.Fatalf("GET /training/%s: %d", accepted.JobID, status)
		}
		switch job.Status {
		case "done":
			return accepted.JobID
		case "failed":
			t.Fatalf("training failed: %s", job.Error)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("training did not finish: %v", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func doJSON(t *testing.T, req *http.Request, into any) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// thirdScanID reads the scan id of the CSV's third data row.
func thirdScanID(t *testing.T, csv []byte) string {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(csv))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for i := 0; sc.Scan(); i++ {
		if i == 3 {
			id, _, _ := strings.Cut(sc.Text(), ",")
			return id
		}
	}
	t.Fatal("the CSV has fewer than 3 rows")
	return ""
}
