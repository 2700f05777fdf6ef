// Package prometheus tests ramanserve's metrics with Debian's Prometheus
// and promtool as the consumers they are written for.
//
// A real Prometheus process scrapes an in-process server that runs with
// bearer-token authentication on, and evaluates the shipped alert and
// recording rules. The test sends traffic (predicts, one outside the
// calibration domain and one invalid, a lab post that matches, a
// training job), reads the number of predicts back through Prometheus's
// query API, and runs every query of the Grafana dashboard
// (deploy/grafana/ramanserve.json), each of which must return data.
// promtool lints the /metrics output, checks deploy/prometheus/alerts.yml
// and recording.yml and runs their unit tests (alerts_test.yml, which
// proves each alert fires, and recording_test.yml).
//
// It runs under `make test-prometheus` (which installs prometheus first),
// not as part of the plain `go test ./...`: RAMANSERVE_TEST_PROMETHEUS=1
// or CI=true enables it, and then a missing prometheus or promtool is a
// failure, not a skip. RAMANSERVE_PROMETHEUS and RAMANSERVE_PROMTOOL name
// the binaries (default: on PATH).
package prometheus

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/server"
	"ramanserve/server/auth"
	"ramanserve/trainer/synth"
)

// predicts is how many predicts of in-domain spectra the test sends;
// with one outside the domain and one invalid, Prometheus must report
// exactly predicts+2.
const predicts = 37

// alertsDir holds the shipped alert and recording rules and their unit
// tests.
const alertsDir = "../../deploy/prometheus"

// ruleFiles are the rule files Prometheus loads, as an operator would.
var ruleFiles = []string{"alerts.yml", "recording.yml"}

// dashboardFile is the shipped Grafana dashboard.
const dashboardFile = "../../deploy/grafana/ramanserve.json"

func TestPrometheus(t *testing.T) {
	tools := needTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	srv := startServer(t)
	srv.requireAuthOn(ctx, t)
	srv.activateModel(ctx, t)
	prom := startPrometheus(ctx, t, tools.prometheus, srv)

	t.Run("scrape", func(t *testing.T) {
		prom.waitForScrape(ctx, t, "ramanserve")
		// The same target without the token: with auth on, every scrape
		// of it fails, so a pass above is the token's doing.
		prom.requireTargetRefused(ctx, t, "ramanserve-no-token")
	})
	if t.Failed() {
		return
	}
	before := prom.predictionsTotal(ctx, t)
	if before != 0 {
		t.Fatalf("sum(ramanserve_predictions_total) = %v before any predict, want 0", before)
	}
	srv.predict(ctx, t, predicts)
	srv.predictOutsideDomain(ctx, t)
	srv.predictInvalid(ctx, t)

	t.Run("predictions read back through the query API", func(t *testing.T) {
		prom.waitForPredictions(ctx, t, predicts+2)
	})
	srv.postLabResults(ctx, t)
	t.Run("every query of the dashboard returns data", func(t *testing.T) {
		queries := dashboardQueries(t)
		for _, q := range queries {
			res, ok := prom.poll(ctx, t, q.expr, func(res []sample) bool { return hasFinite(t, res) })
			if !ok {
				t.Errorf("panel %q: %s: no finite sample after 20 s (got %v)", q.panel, q.expr, res)
			}
		}
		t.Logf("%d queries of %s answered with data", len(queries), dashboardFile)
	})
	t.Run("the lab's agreement names the active version", func(t *testing.T) {
		expr := fmt.Sprintf(`ramanserve_lab_rmsep{job="ramanserve", version=%q}`, srv.version)
		if res, ok := prom.poll(ctx, t, expr, func(res []sample) bool { return len(res) == 3 }); !ok {
			t.Errorf("%s: %v, want one series per analyte", expr, res)
		}
	})
	t.Run("every series the alert rules read is scraped", func(t *testing.T) {
		sels := alertSelectors(t)
		for _, sel := range sels {
			if res := prom.query(ctx, t, fmt.Sprintf(`count(%s)`, sel)); len(res) == 0 {
				t.Errorf("alerts.yml reads %s, which the server's scrape does not have", sel)
			}
		}
		t.Logf("every selector of alerts.yml has series: %s", strings.Join(sels, ", "))
	})
	t.Run("promtool check metrics", func(t *testing.T) {
		exposition := srv.metrics(ctx, t)
		out, err := tools.run(ctx, exposition, "check", "metrics")
		if err != nil {
			t.Fatalf("promtool check metrics: %v\n%s", err, out)
		}
		t.Logf("promtool check metrics: no problem in %d metric families (%d bytes)%s",
			bytes.Count(exposition, []byte("\n# TYPE ")), len(exposition), strings.TrimSpace(out))
	})
}

// TestAlertRules checks the shipped rules with promtool: that they parse
// (check rules), that each alert fires on the series its unit tests feed
// it and stays quiet on the others, and that each recording rule records
// the value worked out by hand (test rules).
func TestAlertRules(t *testing.T) {
	tools := needTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"check", "rules", filepath.Join(alertsDir, "alerts.yml"), filepath.Join(alertsDir, "recording.yml")},
		{"test", "rules", filepath.Join(alertsDir, "alerts_test.yml"), filepath.Join(alertsDir, "recording_test.yml")},
	} {
		out, err := tools.run(ctx, nil, args...)
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), strings.TrimSpace(out))
	}
}

// selectorRE matches the series selectors of ramanserve metrics (and up)
// in the expressions of alerts.yml.
var selectorRE = regexp.MustCompile(`\b(ramanserve_[a-z0-9_]+|up)\b(\{[^}]*\})?`)

// alertSelectors returns the series selectors alerts.yml uses, so that a
// renamed metric or label value cannot leave a rule that never fires.
func alertSelectors(t *testing.T) []string {
	t.Helper()
	rules, err := os.ReadFile(filepath.Join(alertsDir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var sels []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(rules), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "summary:") || strings.HasPrefix(line, "description:") {
			continue
		}
		for _, m := range selectorRE.FindAllString(line, -1) {
			if !seen[m] {
				seen[m] = true
				sels = append(sels, m)
			}
		}
	}
	if len(sels) < 5 {
		t.Fatalf("found only %v in alerts.yml", sels)
	}
	return sels
}

// tools are the Prometheus binaries under test.
type tools struct {
	prometheus, promtool string
}

// needTools skips the test unless it is enabled (see the package comment)
// and fails it when a binary is missing then.
func needTools(t *testing.T) tools {
	t.Helper()
	if os.Getenv("RAMANSERVE_TEST_PROMETHEUS") == "" && os.Getenv("CI") != "true" {
		t.Skip("run by `make test-prometheus`, which installs prometheus first")
	}
	find := func(env, name string) string {
		if p := os.Getenv(env); p != "" {
			return p
		}
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s is not installed (make deps-prometheus): %v", name, err)
		}
		return p
	}
	return tools{prometheus: find("RAMANSERVE_PROMETHEUS", "prometheus"), promtool: find("RAMANSERVE_PROMTOOL", "promtool")}
}

// run runs promtool with stdin (nil: none) and returns what it printed.
func (tl tools) run(ctx context.Context, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, tl.promtool, args...)
	if stdin != nil {
		cmd.Stdin = strings.NewReader(string(stdin))
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// testServer is an in-process ramanserve with authentication on: one
// token of each role.
type testServer struct {
	proc         *app.App
	base         string
	operateToken string
	// version is the active model's, once activateModel has run.
	version string
	// readTokenFile holds the read token, as Prometheus's
	// credentials_file wants it.
	readTokenFile string
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	dir := t.TempDir()
	operate, read := newToken(t), newToken(t)
	tokens := auth.FileLine(auth.Operate, operate, "prometheus-test-operator") + auth.FileLine(auth.Read, read, "prometheus-scraper")
	tokensFile := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokensFile, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	readFile := filepath.Join(dir, "scrape-token")
	if err := os.WriteFile(readFile, []byte(read+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	proc, err := app.Start(context.Background(), app.Config{
		HTTPAddr:    "127.0.0.1:0",
		ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: filepath.Join(dir, "registry"),
		Auth:        server.AuthConfig{TokensFile: tokensFile},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := proc.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &testServer{proc: proc, base: "http://" + proc.HTTPAddr(), operateToken: operate, readTokenFile: readFile}
}

func newToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// requireAuthOn checks that the server refuses /metrics without a token,
// so that the scrape below proves the bearer token in the scrape config.
func (s *testServer) requireAuthOn(ctx context.Context, t *testing.T) {
	t.Helper()
	status, _ := s.get(ctx, t, "/metrics", "")
	if status != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without a token: %d, want 401 (authentication is not on)", status)
	}
}

// get fetches path with token as bearer ("" for none).
func (s *testServer) get(ctx context.Context, t *testing.T, path, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// metrics returns GET /metrics, read with the scraper's token.
func (s *testServer) metrics(ctx context.Context, t *testing.T) []byte {
	t.Helper()
	token, err := os.ReadFile(s.readTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	status, body := s.get(ctx, t, "/metrics", strings.TrimSpace(string(token)))
	if status != http.StatusOK {
		t.Fatalf("GET /metrics with the read token: %d\n%s", status, body)
	}
	return body
}

// activateModel trains a model on synthetic spectra and loads it, with
// the operate token.
func (s *testServer) activateModel(ctx context.Context, t *testing.T) {
	t.Helper()
	m, err := client.NewManagement(s.base, client.WithBearerToken(s.operateToken))
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(synth.New(synth.Config{Seed: 12}).WriteCSV(ctx, pw, 120)) }()
	job, err := m.StartTraining(ctx, gen.TrainingMeta{Operator: "prometheus-test"}, pr)
	if err != nil {
		t.Fatalf("start training: %v", err)
	}
	version := waitForJob(ctx, t, m, job.JobId)
	s.version = version
	load, err := m.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.HTTPError(load.HTTPResponse, load.Body); err != nil {
		t.Fatalf("load %s: %v", version, err)
	}
}

func waitForJob(ctx context.Context, t *testing.T, m *client.Management, id string) string {
	t.Helper()
	for {
		res, err := m.GetTrainingJobWithResponse(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.HTTPError(res.HTTPResponse, res.Body); err != nil {
			t.Fatal(err)
		}
		switch res.JSON200.Status {
		case gen.Done:
			return res.JSON200.Result.NewVersion
		case gen.Failed:
			t.Fatalf("training job %s failed: %s", id, res.JSON200.Error.Code)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("training job %s: %v", id, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// batchID is the batch of the test's predicts, and of its lab results.
const batchID = "B-PROM"

// dial opens a prediction client that sends each request once (no
// retries, so that the server sees exactly what the test sends).
func (s *testServer) dial(ctx context.Context, t *testing.T) *client.PredictionClient {
	t.Helper()
	c, err := client.DialPrediction(ctx, s.proc.ZMQEndpoint(), client.PredictionOptions{Timeout: 5 * time.Second, Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// predict sends n predicts of synthetic spectra, scan_seq 1 to n of
// batchID, and requires n answers.
func (s *testServer) predict(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	c := s.dial(ctx, t)
	scans := synth.New(synth.Config{Seed: 13})
	for i := range n {
		scan := scans.Next()
		_, err := c.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: scan.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: int64(i + 1)},
			&client.ScanContext{BatchID: batchID, Port: "P1"})
		if err != nil {
			t.Fatalf("predict %d of %d: %v", i+1, n, err)
		}
	}
}

// predictOutsideDomain sends one predict of a spectrum with a strong
// band the calibration never saw, and requires its reduced T2 or Q to be
// above 1.
func (s *testServer) predictOutsideDomain(ctx context.Context, t *testing.T) {
	t.Helper()
	in := synth.New(synth.Config{Seed: 14}).Next().Intensities
	peak := slices.Max(in)
	for i := range in {
		d := (float64(i) - 700) / 6
		in[i] += 3 * peak / (1 + d*d)
	}
	rep, err := s.dial(ctx, t).Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: in, Channel: 1, IntegrationMS: 500},
		&client.ScanContext{BatchID: batchID, Port: "P1"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diagnostics["t2_reduced"] <= 1 && rep.Diagnostics["q_reduced"] <= 1 {
		t.Fatalf("a spectrum with a contaminant band is inside the domain: %v", rep.Diagnostics)
	}
}

// predictInvalid sends one predict of a 10-point spectrum, which the
// server must refuse.
func (s *testServer) predictInvalid(ctx context.Context, t *testing.T) {
	t.Helper()
	_, err := s.dial(ctx, t).Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis()[:10], Intensities: make([]float64, 10), Channel: 1, IntegrationMS: 500}, nil)
	if err == nil {
		t.Fatal("a 10-point spectrum was predicted")
	}
}

// postLabResults posts lab results of scan_seq 1 to 3 of batchID and
// requires all three matched. The log commits predicts in batches off the
// reply path, so the post is repeated (it replaces itself, by
// lab_sample_id) until they are.
func (s *testServer) postLabResults(ctx context.Context, t *testing.T) {
	t.Helper()
	m, err := client.NewManagement(s.base, client.WithBearerToken(s.operateToken))
	if err != nil {
		t.Fatal(err)
	}
	csv := "lab_sample_id,batch_id,scan_seq,sampled_at,EPA,DHA,DPA\n"
	for seq := 1; seq <= 3; seq++ {
		csv += fmt.Sprintf("HPLC-%d,%s,%d,,%g,%g,%g\n", seq, batchID, seq, 180+float64(seq), 90-float64(seq), 20+0.5*float64(seq))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := m.PostLabResultsWithBodyWithResponse(ctx, "text/csv", strings.NewReader(csv))
		if err != nil {
			t.Fatal(err)
		}
		if err := client.HTTPError(res.HTTPResponse, res.Body); err != nil {
			t.Fatalf("lab post: %v", err)
		}
		if res.JSON200.Matched == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab post: %d of 3 matched after 20 s: %+v", res.JSON200.Matched, res.JSON200.Unmatched)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dashboardQuery is one PromQL expression of the dashboard.
type dashboardQuery struct {
	panel, expr string
}

// dashboardVariables are the values the test gives the dashboard's
// variables: every instance, and a rate window that covers the test's
// traffic. Any other variable fails the test.
var dashboardVariables = strings.NewReplacer("$__rate_interval", "5m", "$instance", ".+")

// labelValuesRE is Grafana's label_values(selector, label) of a variable's
// query, which the test runs as group by (label) (selector).
var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// dashboardQueries reads every expression of the dashboard: each
// panel's targets (rows' panels included) and each query variable,
// with the variables replaced.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []dashboardQuery
	add := func(where, expr string) {
		expr = dashboardVariables.Replace(expr)
		if strings.Contains(expr, "$") {
			t.Fatalf("%s: %s: a variable the test does not know: %s", dashboardFile, where, expr)
		}
		out = append(out, dashboardQuery{where, expr})
	}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					t.Fatalf("%s: panel %q has a target without an expression", dashboardFile, p.Title)
				}
				add(p.Title, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		text, _ := q["query"].(string)
		m := labelValuesRE.FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("%s: variable %s: query %v is not label_values(selector, label)", dashboardFile, v.Name, v.Query)
		}
		add("variable "+v.Name, fmt.Sprintf("group by (%s) (%s)", m[2], m[1]))
	}
	if len(out) < 20 {
		t.Fatalf("%s: only %d queries", dashboardFile, len(out))
	}
	// Every recorded series is on the dashboard, so that each is
	// evaluated here by a real Prometheus.
	rules, err := os.ReadFile(filepath.Join(alertsDir, "recording.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\s*- record: (\S+)$`).FindAllStringSubmatch(string(rules), -1) {
		if !bytes.Contains(raw, []byte(m[1]+"{")) {
			t.Errorf("%s does not read the recorded series %s", dashboardFile, m[1])
		}
	}
	return out
}

// hasFinite reports whether res holds a sample with a finite value: a
// ratio of zero rates (NaN) is not data.
func hasFinite(t *testing.T, res []sample) bool {
	t.Helper()
	for _, s := range res {
		if v := s.float(t); !math.IsNaN(v) && !math.IsInf(v, 0) {
			return true
		}
	}
	return false
}

// promServer is a running Prometheus process and its HTTP API.
type promServer struct {
	base string
	log  *syncBuffer
}

// scrapeConfig scrapes the server's /metrics every second twice: with
// the read token (job ramanserve) and without it (ramanserve-no-token),
// and evaluates the rule files every second.
const scrapeConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: %[3]s
scrape_configs:
  - job_name: ramanserve
    metrics_path: /metrics
    authorization:
      credentials_file: %[1]q
    static_configs:
      - targets: [%[2]q]
  - job_name: ramanserve-no-token
    metrics_path: /metrics
    static_configs:
      - targets: [%[2]q]
`

// startPrometheus starts a Prometheus process with its storage in a
// temporary directory, listening on a free loopback port, and stops it
// (SIGTERM, then SIGKILL) when the test ends.
func startPrometheus(ctx context.Context, t *testing.T, bin string, srv *testServer) *promServer {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	var rules []string
	for _, f := range ruleFiles {
		abs, err := filepath.Abs(filepath.Join(alertsDir, f))
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, strconv.Quote(abs))
	}
	yamlList := "[" + strings.Join(rules, ", ") + "]"
	if err := os.WriteFile(config, []byte(fmt.Sprintf(scrapeConfig, srv.readTokenFile, srv.proc.HTTPAddr(), yamlList)), 0o600); err != nil {
		t.Fatal(err)
	}
	// A port can be taken between freePort and the bind: try a few.
	for attempt := 0; attempt < 3; attempt++ {
		addr := freePort(t)
		p := &promServer{base: "http://" + addr, log: &syncBuffer{}}
		cmd := exec.Command(bin,
			"--config.file="+config,
			"--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr,
			"--log.level=warn",
		)
		cmd.Stdout, cmd.Stderr = p.log, p.log
		// Should the test binary die without running its cleanups (a
		// -timeout panic), the kernel kills Prometheus too, so that none
		// is left holding its port.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start prometheus: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { stop(t, cmd, exited, p.log) })
		if p.waitReady(ctx, exited) {
			return p
		}
		if !strings.Contains(p.log.String(), "address already in use") {
			t.Fatalf("prometheus did not get ready:\n%s", p.log.String())
		}
	}
	t.Fatal("prometheus found no free port")
	return nil
}

// stop ends Prometheus: SIGTERM, and SIGKILL after 10 s. Any way it ends
// is fine here; the point is that no process is left behind.
func stop(t *testing.T, cmd *exec.Cmd, exited <-chan error, log *syncBuffer) {
	select {
	case <-exited:
		return
	default:
	}
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Errorf("prometheus ignored SIGINT for 10 s and was killed\n%s", log.String())
	}
}

// waitReady polls /-/ready until it answers 200 or the process exits.
func (p *promServer) waitReady(ctx context.Context, exited <-chan error) bool {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-exited:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sample is one element of an instant vector from /api/v1/query.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) float(t *testing.T) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample value %v: %v", s.Value, err)
	}
	return v
}

// query evaluates expr now through the HTTP query API.
func (p *promServer) query(ctx context.Context, t *testing.T, expr string) []sample {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("query %s: %d, %v", expr, resp.StatusCode, err)
	}
	if body.Status != "success" || body.Data.ResultType != "vector" {
		t.Fatalf("query %s: status %q, type %q, error %q", expr, body.Status, body.Data.ResultType, body.Error)
	}
	return body.Data.Result
}

// poll evaluates expr every 250 ms until done accepts its result, and
// reports whether it did within 20 s (the scrape interval is 1 s); it
// returns the last result.
func (p *promServer) poll(ctx context.Context, t *testing.T, expr string, done func([]sample) bool) ([]sample, bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := p.query(ctx, t, expr)
		if done(res) {
			return res, true
		}
		if time.Now().After(deadline) {
			return res, false
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitForScrape waits until job's target has been scraped successfully.
func (p *promServer) waitForScrape(ctx context.Context, t *testing.T, job string) {
	t.Helper()
	expr := fmt.Sprintf(`up{job=%q}`, job)
	if res, ok := p.poll(ctx, t, expr, func(res []sample) bool {
		return len(res) == 1 && res[0].float(t) == 1
	}); !ok {
		t.Fatalf("%s: %v after 20 s; last scrape error: %q\nprometheus log:\n%s", expr, res, p.targetError(ctx, t, job), p.log.String())
	}
}

// requireTargetRefused waits for a scrape of job's target and requires it
// to have failed with 401.
func (p *promServer) requireTargetRefused(ctx context.Context, t *testing.T, job string) {
	t.Helper()
	expr := fmt.Sprintf(`up{job=%q}`, job)
	up, ok := p.poll(ctx, t, expr, func(res []sample) bool { return len(res) == 1 })
	if !ok {
		t.Fatalf("%s: %v after 20 s: no scrape", expr, up)
	}
	if up[0].float(t) != 0 {
		t.Fatalf("the scrape without a token succeeded: up = %v", up[0].Value)
	}
	if lastErr := p.targetError(ctx, t, job); !strings.Contains(lastErr, "401") {
		t.Fatalf("the scrape without a token failed with %q, want a 401", lastErr)
	}
}

// targetError is the last scrape error of job's target (/api/v1/targets).
func (p *promServer) targetError(ctx context.Context, t *testing.T, job string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/targets?state=active", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ActiveTargets []struct {
				ScrapePool string `json:"scrapePool"`
				LastError  string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	for _, tg := range body.Data.ActiveTargets {
		if tg.ScrapePool == job {
			return tg.LastError
		}
	}
	t.Fatalf("no active target in scrape pool %s", job)
	return ""
}

// predictionsExpr sums every code: each predict the server answered
// counts once, whatever its outcome.
const predictionsExpr = `sum(ramanserve_predictions_total{job="ramanserve"})`

// predictionsTotal is the current value of predictionsExpr; 0 when the
// counter has no series yet.
func (p *promServer) predictionsTotal(ctx context.Context, t *testing.T) float64 {
	t.Helper()
	res := p.query(ctx, t, predictionsExpr)
	if len(res) == 0 {
		return 0
	}
	return res[0].float(t)
}

// waitForPredictions waits until Prometheus reports want predictions,
// failing at once on a larger value, and then requires the value to hold
// over two more scrapes.
func (p *promServer) waitForPredictions(ctx context.Context, t *testing.T, want int) {
	t.Helper()
	res, ok := p.poll(ctx, t, predictionsExpr, func(res []sample) bool {
		if len(res) == 0 {
			return false
		}
		got := res[0].float(t)
		if got > float64(want) {
			t.Fatalf("%s = %v, want %d", predictionsExpr, got, want)
		}
		return got == float64(want)
	})
	if !ok {
		t.Fatalf("%s: %v after 20 s, want %d\nprometheus log:\n%s", predictionsExpr, res, want, p.log.String())
	}
	// Two more scrapes: the newest sample's scrape time moves on by two
	// intervals (1 s each).
	const scrapedAt = `max(timestamp(ramanserve_predictions_total{job="ramanserve"}))`
	first := p.query(ctx, t, scrapedAt)
	if len(first) == 0 {
		t.Fatalf("%s: no sample", scrapedAt)
	}
	since := first[0].float(t)
	if res, ok := p.poll(ctx, t, scrapedAt, func(res []sample) bool {
		return len(res) > 0 && res[0].float(t) >= since+2
	}); !ok {
		t.Fatalf("%s: %v after 20 s, want two scrapes after %v", scrapedAt, res, since)
	}
	if got := p.predictionsTotal(ctx, t); got != float64(want) {
		t.Fatalf("%s = %v two scrapes later, want %d", predictionsExpr, got, want)
	}
	t.Logf("%s = %d, read back through %s/api/v1/query", predictionsExpr, want, p.base)
}

// freePort returns a loopback address with a port that was free a moment
// ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer collects a process's output; the test reads it while the
// process writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestDashboardShape checks what Grafana needs of the dashboard beyond
// its queries (no Prometheus needed): panel ids unique, each panel within
// the 24 columns of the grid and on no other, and every panel reading the
// data source the dashboard asks for at import.
func TestDashboardShape(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type grid struct{ H, W, X, Y int }
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID         int            `json:"id"`
			Type       string         `json:"type"`
			Title      string         `json:"title"`
			GridPos    grid           `json:"gridPos"`
			Datasource map[string]any `json:"datasource"`
			Targets    []struct {
				Datasource map[string]any `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	if dash.UID == "" {
		t.Error("no uid: each import would make another copy")
	}
	ids := map[int]bool{}
	cells := map[[2]int]string{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, taken := cells[[2]int{x, y}]; taken {
					t.Fatalf("panel %q overlaps panel %q at (%d, %d)", p.Title, other, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource["uid"] != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Datasource["uid"] != "${datasource}" {
				t.Errorf("panel %q: a target reads data source %v", p.Title, tg.Datasource)
			}
		}
	}
}
