package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/trainer/synth"
)

// scrape is one GET /metrics, validated against the contract and parsed
// as the Prometheus text format.
type scrape struct {
	raw  []byte
	fams map[string]*dto.MetricFamily
}

func scrapeMetrics(t *testing.T, base string) *scrape {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := validatingDoer{client: httpClient()}.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d %s", resp.StatusCode, buf.Bytes())
	}
	// Prometheus picks its parser by these parameters.
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics content type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("GET /metrics does not parse as the text format: %v", err)
	}
	return &scrape{raw: buf.Bytes(), fams: fams}
}

// find returns the series of name whose labels include want, nil if none.
func (s *scrape) find(name string, want ...string) *dto.Metric {
	f := s.fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == want[i] && l.GetValue() == want[i+1] }) {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is a counter's or gauge's value, a histogram's count; 0 for a
// series that does not exist.
func (s *scrape) value(name string, labels ...string) float64 {
	m := s.find(name, labels...)
	switch {
	case m == nil:
		return 0
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

// moved checks that each metric moved by its expected amount between
// two scrapes.
type moved struct {
	name   string
	labels []string
	by     float64
}

func checkMoved(t *testing.T, before, after *scrape, want []moved) {
	t.Helper()
	for _, w := range want {
		got := after.value(w.name, w.labels...) - before.value(w.name, w.labels...)
		if got != w.by {
			t.Errorf("%s%v moved by %v, want %v", w.name, w.labels, got, w.by)
		}
	}
}

// TestMetricsMove: on a server of its own, every metric moves when it
// should: model loads (failed and not), training jobs by status, the
// active model, predicts and other channel requests by code and type with
// their latency, the reduced T2, Q and confidence and the out-of-domain
// count, HTTP requests by route, method and status, and the open
// connections of both channels. Real TCP throughout; every /metrics
// answer is validated against the contract.
func TestMetricsMove(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	needInProcess(t)
	proc := extraServer(t, app.Config{})
	base := "http://" + proc.HTTPAddr()
	c := apiAt(t, base)

	s0 := scrapeMetrics(t, base)
	if s0.find("ramanserve_active_model_info") != nil || s0.value("ramanserve_model_loaded") != 0 {
		t.Fatal("an empty registry reports an active model")
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "ramanserve_open_connections", "ramanserve_training_jobs"} {
		if s0.fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}

	// A failed load, then a trained model loaded.
	res := must(c.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: "no-such-version"}))(t)
	if res.StatusCode() != http.StatusBadRequest {
		t.Fatalf("load of a missing version = %d", res.StatusCode())
	}
	s1 := scrapeMetrics(t, base)
	checkMoved(t, s0, s1, []moved{
		{"ramanserve_model_loads_total", []string{"result", "MODEL_NOT_FOUND"}, 1},
		{"ramanserve_model_loads_total", []string{"result", "OK"}, 0},
		{"ramanserve_http_requests_total", []string{"route", "/model/load", "method", "POST", "status", "400"}, 1},
		{"ramanserve_http_requests_total", []string{"route", "/metrics", "method", "GET", "status", "200"}, 1},
	})
	version := trainStaged(t, base, c, 303)
	s2 := scrapeMetrics(t, base)
	checkMoved(t, s1, s2, []moved{
		{"ramanserve_training_jobs", []string{"status", "done"}, 1},
		{"ramanserve_training_jobs", []string{"status", "failed"}, 0},
		{"ramanserve_http_requests_total", []string{"route", "/training/start", "method", "POST", "status", "202"}, 1},
	})
	loaded := loadVersion(t, c, version)
	s3 := scrapeMetrics(t, base)
	checkMoved(t, s2, s3, []moved{{"ramanserve_model_loads_total", []string{"result", "OK"}, 1}})
	info := s3.find("ramanserve_active_model_info", "version", version)
	if info == nil || info.GetGauge().GetValue() != 1 || s3.value("ramanserve_model_loaded") != 1 {
		t.Fatalf("active model info after loading %s: %v", version, info)
	}
	if loaded.Algorithm != nil && s3.find("ramanserve_active_model_info", "algorithm", *loaded.Algorithm) == nil {
		t.Errorf("active model info does not name the algorithm %s", *loaded.Algorithm)
	}

	// Predicts: in-domain spectra, out-of-domain ones (a contaminant
	// band), one invalid; a ping and a model_info.
	zc := dialZMQ(t, proc.ZMQEndpoint())
	wn, _ := testSpectrum()
	spectra := synth.New(synth.Config{Seed: 11})
	const predicts = 12
	outside := 0
	for i := range predicts {
		in := spectra.Next().Intensities
		if i%3 == 0 {
			in = withContaminant(in, 300+40*float64(i))
		}
		_, rep := predictOnce(t, zc, wn, in)
		if rep.Diagnostics["t2_reduced"] > 1 || rep.Diagnostics["q_reduced"] > 1 {
			outside++
		}
	}
	if outside == 0 || outside == predicts {
		t.Fatalf("%d of %d predicts outside the domain: the test needs both kinds", outside, predicts)
	}
	bad, _ := goScenarioFrame("predict", wn[:10], make([]float64, 10))
	var badCode string
	for _, frame := range [][]byte{bad, client.AppendPingRequest(nil, "p-1", 1), client.AppendModelInfoRequest(nil, "m-1", 1)} {
		raw, err := zc.roundTrip(frame, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rep := must(client.DecodeReply(raw))(t)
		switch {
		case rep.Error != nil && badCode == "":
			badCode = rep.Error.Code
		case rep.Error != nil:
			t.Fatalf("%s failed: %v", rep.Type, rep.Error)
		}
	}
	if badCode == "" {
		t.Fatal("a 10-point spectrum was predicted")
	}
	s4 := scrapeMetrics(t, base)
	checkMoved(t, s3, s4, []moved{
		{"ramanserve_predictions_total", []string{"code", "OK"}, predicts},
		{"ramanserve_predictions_total", []string{"code", badCode}, 1},
		{"ramanserve_prediction_duration_seconds", nil, predicts + 1},
		{"ramanserve_channel_requests_total", []string{"type", "predict", "code", "OK"}, predicts},
		{"ramanserve_channel_requests_total", []string{"type", "ping", "code", "OK"}, 1},
		{"ramanserve_channel_requests_total", []string{"type", "model_info", "code", "OK"}, 1},
		{"ramanserve_channel_request_duration_seconds", []string{"type", "ping"}, 1},
		{"ramanserve_channel_request_duration_seconds", []string{"type", "predict"}, predicts + 1},
		{"ramanserve_prediction_reduced_t2", nil, predicts},
		{"ramanserve_prediction_reduced_q", nil, predicts},
		{"ramanserve_prediction_confidence", []string{"analyte", "EPA"}, predicts},
		{"ramanserve_prediction_confidence", []string{"analyte", "DPA"}, predicts},
		{"ramanserve_predictions_outside_domain_total", nil, float64(outside)},
	})
	if got := s4.value("ramanserve_open_connections", "channel", "zmq"); got != 1 {
		t.Errorf("open zmq connections = %v with one client", got)
	}
	zc.cl.Close()
	waitFor(t, "the zmq connection to be counted closed", func() bool {
		return scrapeMetrics(t, base).value("ramanserve_open_connections", "channel", "zmq") == 0
	})
	if got := s4.value("ramanserve_open_connections", "channel", "http"); got < 1 {
		t.Errorf("open http connections = %v while scraping", got)
	}

	// No version in any other metric.
	for name, f := range s4.fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if name != "ramanserve_active_model_info" && strings.Contains(l.GetValue(), version) {
					t.Errorf("%s has the model version in label %s", name, l.GetName())
				}
			}
		}
	}
	lintScrape(t, s4)
}

// withContaminant adds a strong narrow band at wavenumber index centre:
// something the calibration never saw.
func withContaminant(in []float64, centre float64) []float64 {
	out := slices.Clone(in)
	peak := slices.Max(in)
	for i := range out {
		d := (float64(i) - centre) / 6
		out[i] += 3 * peak / (1 + d*d)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lintScrape runs promtool's metric checks (promlint) on a scrape.
func lintScrape(t *testing.T, s *scrape) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(s.raw)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "ramanserve_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

// TestMetricsLabelsBounded: a client sending requests to random paths
// with random methods cannot create series: they all land in the
// "unmatched" route and the "other" method, and every route label is a
// template of the contract.
func TestMetricsLabelsBounded(t *testing.T) {
	needInProcess(t)
	proc := extraServer(t, app.Config{})
	base := "http://" + proc.HTTPAddr()
	count := func(s *scrape) int { return len(s.fams["ramanserve_http_requests_total"].GetMetric()) }
	send := func(method, path string) {
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// Warm up: one of each kind (a scrape too: it is counted once
	// answered), then count the series.
	scrapeMetrics(t, base)
	send("GET", "/no/such/path")
	send("BREW", "/no/such/path")
	send("BREW", "/health")
	send("GET", "/model/v-unknown")
	before := scrapeMetrics(t, base)
	rng := rand.New(rand.NewPCG(1, 2))
	const flood = 300
	for i := range flood {
		path := fmt.Sprintf("/%x/%x", rng.Uint64(), rng.Uint64())
		method := fmt.Sprintf("M%X", rng.Uint32())
		switch i % 4 {
		case 0:
			send("GET", path)
		case 1:
			send(method, path)
		case 2:
			send(method, "/health")
		case 3:
			send("GET", "/model/"+fmt.Sprintf("v%x", rng.Uint64())) // a route with a parameter
		}
	}
	after := scrapeMetrics(t, base)
	if count(after) != count(before) {
		t.Errorf("%d request series after %d requests to random paths and methods, %d before", count(after), flood, count(before))
	}
	checkMoved(t, before, after, []moved{
		{"ramanserve_http_requests_total", []string{"route", "unmatched", "method", "GET", "status", "404"}, flood / 4},
		{"ramanserve_http_requests_total", []string{"route", "unmatched", "method", "other", "status", "404"}, flood / 4},
		{"ramanserve_http_requests_total", []string{"route", "/health", "method", "other", "status", "405"}, flood / 4},
		{"ramanserve_http_requests_total", []string{"route", "/model/{version}", "method", "GET", "status", "404"}, flood / 4},
	})
	for _, name := range []string{"ramanserve_http_requests_total", "ramanserve_http_request_duration_seconds"} {
		for _, m := range after.fams[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && l.GetValue() != "unmatched" && spec.Paths.Find(l.GetValue()) == nil {
					t.Errorf("%s: route %q is not a template of the contract", name, l.GetValue())
				}
			}
		}
	}
}
