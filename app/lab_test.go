package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/gen"
	"ramanserve/inference"
)

// The lab routes through real HTTP, on a real App whose prediction log
// (a real SQLite file) holds known predictions.

var labT0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// labFixture is a running server whose log holds, for batch B-1, scans
// 0..9 logged at labT0 + 10 s * i, with the active version "vA" predicting
// EPA 100 + i + wobble(i), DHA 50 + i, and the staged version, as shadow,
// EPA 101 + 0.5 i.
type labFixture struct {
	app    *App
	base   string
	staged string
}

func wobble(i int) float64 { return 0.3 * math.Sin(float64(i)) }

func startLabFixture(t *testing.T) *labFixture {
	t.Helper()
	f := startLabServer(t, t.TempDir())
	f.staged = stageSmallModel(t, f.app.Registry, "op")
	f.logKnownPredictions(t)
	return f
}

// startLabServer starts a server on the registry in dir.
func startLabServer(t *testing.T, dir string) *labFixture {
	t.Helper()
	app, err := Start(context.Background(), Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Shutdown(context.Background()) })
	return &labFixture{app: app, base: "http://" + app.HTTPAddr()}
}

// logKnownPredictions records the fixture's predictions and waits until
// they are committed.
func (f *labFixture) logKnownPredictions(t *testing.T) {
	t.Helper()
	app := f.app
	for i := range 10 {
		id := predlog.NewPredictionID()
		active := &predlog.Record{PredictionID: id, Time: labT0.Add(time.Duration(i) * 10 * time.Second), ModelVersion: "vA", Role: predlog.RoleActive,
			ScanContext: inference.ScanContext{BatchID: "B-1", HasBatchID: true, ScanSeq: float64(i), HasScanSeq: true}}
		active.Concentrations.Set(inference.EPA, 100+float64(i)+wobble(i))
		active.Concentrations.Set(inference.DHA, 50+float64(i))
		shadow := &predlog.Record{PredictionID: id, Time: active.Time, ModelVersion: f.staged, Role: predlog.RoleShadow,
			ScanContext: inference.ScanContext{BatchID: "B-1", HasBatchID: true, ScanSeq: float64(i), HasScanSeq: true}}
		shadow.Concentrations.Set(inference.EPA, 101+0.5*float64(i))
		if !app.predlog.Record(active) || !app.predlog.Record(shadow) {
			t.Fatal("the log refused a record")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for app.predlog.Stats().Committed < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the log committed %d of 20 records", app.predlog.Stats().Committed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// do sends a request and decodes the JSON answer into out (if not nil).
func (f *labFixture) do(t *testing.T, method, path, contentType string, body []byte, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, f.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := validateAgainstContract(req, body, resp, data); err != nil {
		t.Errorf("%s %s: %d %s: the answer breaks the contract: %v", method, path, resp.StatusCode, data, err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp.StatusCode
}

// labPost: scans 0..5 by scan_seq with EPA and DHA, scan 6 by sampled_at
// (4 s after it), a record of an unknown batch, a scan_seq never logged,
// a sampled_at far from every scan.
const labPost = `[
 {"lab_sample_id": "L0", "batch_id": "B-1", "scan_seq": 0, "EPA": 100.5, "DHA": 50.2},
 {"lab_sample_id": "L1", "batch_id": "B-1", "scan_seq": 1, "EPA": 101.1, "DHA": 51.4},
 {"lab_sample_id": "L2", "batch_id": "B-1", "scan_seq": 2, "EPA": 102.9, "DHA": 51.9},
 {"lab_sample_id": "L3", "batch_id": "B-1", "scan_seq": 3, "EPA": 102.7, "DHA": 53.3},
 {"lab_sample_id": "L4", "batch_id": "B-1", "scan_seq": 4, "EPA": 104.6},
 {"lab_sample_id": "L5", "batch_id": "B-1", "scan_seq": 5, "EPA": 105.8, "DHA": 55.0},
 {"lab_sample_id": "L6", "batch_id": "B-1", "sampled_at": "2026-11-23T09:01:04+01:00", "EPA": 106.1},
 {"lab_sample_id": "X1", "batch_id": "B-404", "scan_seq": 1, "EPA": 1},
 {"lab_sample_id": "X2", "batch_id": "B-1", "scan_seq": 77, "EPA": 1},
 {"lab_sample_id": "X3", "batch_id": "B-1", "sampled_at": "2026-11-23T12:00:00Z", "EPA": 1}
]`

// labEPA and labDHA are labPost's matched lab values by scan (NaN: none).
var (
	labEPA = []float64{100.5, 101.1, 102.9, 102.7, 104.6, 105.8, 106.1}
	labDHA = []float64{50.2, 51.4, 51.9, 53.3, math.NaN(), 55.0, math.NaN()}
)

func TestPostLabResultsMatchesAndIsIdempotent(t *testing.T) {
	f := startLabFixture(t)
	var out gen.LabResultsOutcome
	if code := f.do(t, "POST", "/lab-results", "application/json", []byte(labPost), &out); code != 200 {
		t.Fatalf("post: %d %+v", code, out)
	}
	want := gen.LabResultsOutcome{Received: 10, Matched: 7, Replaced: 0, Unmatched: []gen.UnmatchedLabResult{
		{Index: 7, LabSampleId: "X1", Reason: "unknown_batch"},
		{Index: 8, LabSampleId: "X2", Reason: "no_prediction_for_scan_seq"},
		{Index: 9, LabSampleId: "X3", Reason: "none_within_window"},
	}}
	for i := range out.Unmatched {
		if out.Unmatched[i].Message == "" {
			t.Errorf("unmatched %d has no message", i)
		}
		out.Unmatched[i].Message = ""
	}
	if fmt.Sprint(out) != fmt.Sprint(want) {
		t.Fatalf("post:\n got %+v\nwant %+v", out, want)
	}
	first := f.performance(t, "vA", "")

	// The same file again: all replaced, n unchanged.
	if code := f.do(t, "POST", "/lab-results", "application/json", []byte(labPost), &out); code != 200 || out.Replaced != 10 || out.Matched != 7 {
		t.Fatalf("second post: %d %+v", code, out)
	}
	again := f.performance(t, "vA", "")
	if mustJSON(t, again) != mustJSON(t, first) || first.Analytes.EPA.N != 7 || first.Analytes.DHA.N != 5 {
		t.Fatalf("after the second post: EPA %+v, first %+v", again.Analytes.EPA, first.Analytes.EPA)
	}

	// The same results as CSV (any column order, Text/CSV spelled
	// differently): replaced, still n 7.
	csv := "EPA,DHA,lab_sample_id,batch_id,scan_seq,sampled_at\n" +
		"100.5,50.2,L0,B-1,0,\n" +
		"106.1,,L6,B-1,,2026-11-23T08:01:04Z\n"
	if code := f.do(t, "POST", "/lab-results", "Text/CSV; charset=utf-8", []byte(csv), &out); code != 200 || out.Replaced != 2 || out.Matched != 2 || out.Received != 2 {
		t.Fatalf("csv post: %d %+v", code, out)
	}
	if p := f.performance(t, "vA", ""); p.Analytes.EPA.N != 7 || *p.Analytes.EPA.Rmsep != *first.Analytes.EPA.Rmsep {
		t.Fatalf("after the csv post: %+v", p.Analytes.EPA)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f *labFixture) performance(t *testing.T, version, query string) gen.ModelPerformance {
	t.Helper()
	var p gen.ModelPerformance
	if code := f.do(t, "GET", "/model/"+version+"/performance"+query, "", nil, &p); code != 200 {
		t.Fatalf("performance of %s%s: %d %+v", version, query, code, p)
	}
	return p
}

// TestModelPerformanceExact: the statistics of the active and the shadow
// version equal a plain computation from the known values, the batch
// series and the roles are there, and since/until cut the spectra.
func TestModelPerformanceExact(t *testing.T) {
	f := startLabFixture(t)
	if code := f.do(t, "POST", "/lab-results", "application/json", []byte(labPost), nil); code != 200 {
		t.Fatalf("post: %d", code)
	}
	active := func(i int) float64 { return 100 + float64(i) + wobble(i) }
	shadow := func(i int) float64 { return 101 + 0.5*float64(i) }

	p := f.performance(t, "vA", "")
	checkStats(t, "vA EPA", p.Analytes.EPA, active, labEPA, 0, 7)
	checkStats(t, "vA DHA", p.Analytes.DHA, func(i int) float64 { return 50 + float64(i) }, labDHA, 0, 7)
	if p.Analytes.DPA != nil && p.Analytes.DPA.N != 0 {
		t.Errorf("DPA: %+v", p.Analytes.DPA)
	}
	if len(p.Models) != 2 || p.Models[0].Version != "vA" || fmt.Sprint(p.Models[0].Roles) != "[active]" ||
		p.Models[1].Version != f.staged || fmt.Sprint(p.Models[1].Roles) != "[shadow]" {
		t.Fatalf("models: %+v", p.Models)
	}
	checkStats(t, "shadow EPA in vA's report", p.Models[1].Analytes.EPA, shadow, labEPA, 0, 7)
	if len(p.Batches) != 1 || p.Batches[0].BatchId != "B-1" || p.Batches[0].N != 7 || !p.Batches[0].FirstSampledAt.Equal(labT0) ||
		math.Abs(*p.Batches[0].Bias.EPA-*p.Analytes.EPA.Bias) > 1e-12 {
		t.Fatalf("batches: %+v", p.Batches)
	}

	// The staged version (in the registry) as the one asked for.
	s := f.performance(t, f.staged, "")
	checkStats(t, "shadow EPA", s.Analytes.EPA, shadow, labEPA, 0, 7)
	if len(s.Models) != 2 || s.Models[0].Version != f.staged || s.Models[1].Version != "vA" {
		t.Fatalf("models of the shadow's report: %+v", s.Models)
	}

	// Half-open range: scans 2 (20 s) .. 4 (40 s), 50 s excluded.
	q := "?since=" + url.QueryEscape(labT0.Add(20*time.Second).Format(time.RFC3339)) + "&until=" + url.QueryEscape(labT0.Add(50*time.Second).Format(time.RFC3339))
	r := f.performance(t, "vA", q)
	checkStats(t, "vA EPA [20 s, 50 s)", r.Analytes.EPA, active, labEPA, 2, 5)
	if r.Since == nil || !r.Since.Equal(labT0.Add(20*time.Second)) || r.Until == nil {
		t.Fatalf("since/until not echoed: %v %v", r.Since, r.Until)
	}

	// A version only in the log (vA) was found above; one in neither is 404.
	var e gen.ErrorResponse
	if code := f.do(t, "GET", "/model/nope/performance", "", nil, &e); code != 404 || e.Code != "MODEL_NOT_FOUND" {
		t.Fatalf("unknown version: %d %+v", code, e)
	}
	// Known version, nothing matched in the range: n 0, no models.
	empty := f.performance(t, "vA", "?since=2030-01-01T00:00:00Z")
	if empty.Analytes.EPA == nil || empty.Analytes.EPA.N != 0 || empty.Analytes.EPA.Rmsep != nil || len(empty.Models) != 0 || len(empty.Batches) != 0 {
		t.Fatalf("empty range: %+v", empty)
	}
	for _, q := range []string{"?since=2026-11-23T08:00:00Z&until=2026-11-23T08:00:00Z", "?since=2026-11-23T09:00:00Z&until=2026-11-23T08:00:00Z", "?since=yesterday"} {
		if code := f.do(t, "GET", "/model/vA/performance"+q, "", nil, &e); code != 400 || e.Code != "INVALID_REQUEST" {
			t.Errorf("%s: %d %+v", q, code, e)
		}
	}
}

// checkStats compares a reported AnalytePerformance with n, RMSEP, bias
// and the least-squares line of lab on predicted over scans [from, to)
// with a lab value, as NumPy computes them (the reconcile package's
// independent reference, evidence/reconcile/testdata/stats_numpy.py):
// the endpoint's figures must equal it to 1e-9.
func checkStats(t *testing.T, name string, got *gen.AnalytePerformance, pred func(int) float64, lab []float64, from, to int) {
	t.Helper()
	ps, ls := []float64{}, []float64{}
	for i := from; i < to; i++ {
		if !math.IsNaN(lab[i]) {
			ps, ls = append(ps, pred(i)), append(ls, lab[i])
		}
	}
	want := numpyStats(t, ps, ls)
	if got == nil || got.N != len(ps) || got.Rmsep == nil || got.Bias == nil || got.Slope == nil || got.Intercept == nil {
		t.Fatalf("%s: %+v, want n %d with every statistic", name, got, len(ps))
	}
	for k, v := range map[string]float64{"rmsep": *got.Rmsep, "bias": *got.Bias, "slope": *got.Slope, "intercept": *got.Intercept} {
		if want[k] == nil || !(math.Abs(v-*want[k]) <= 1e-9) {
			t.Errorf("%s %s: %.15g, NumPy %v", name, k, v, want[k])
		}
	}
}

// numpyStats runs the NumPy reference on one set of pairs.
func numpyStats(t *testing.T, predicted, lab []float64) map[string]*float64 {
	t.Helper()
	in := filepath.Join(t.TempDir(), "cases.json")
	body, err := json.Marshal(map[string]any{"cases": []any{map[string]any{"name": "x", "predicted": predicted, "lab": lab}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", filepath.Join("..", "evidence", "reconcile", "testdata", "stats_numpy.py"), in).Output()
	if err != nil {
		t.Fatalf("NumPy reference: %v", err)
	}
	var res []struct {
		RMSEP, Bias, Slope, Intercept *float64
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
		t.Fatalf("NumPy reference said %q: %v", out, err)
	}
	r := res[0]
	return map[string]*float64{"rmsep": r.RMSEP, "bias": r.Bias, "slope": r.Slope, "intercept": r.Intercept}
}

func TestPostLabResultsRefusals(t *testing.T) {
	f := startLabFixture(t)
	if code := f.do(t, "POST", "/lab-results", "application/json", []byte(labPost), nil); code != 200 {
		t.Fatalf("post: %d", code)
	}
	for _, c := range []struct {
		name, contentType, body string
		status                  int
		code, mentions          string
	}{
		{"no scan_seq nor sampled_at", "application/json", `[{"lab_sample_id":"L0","batch_id":"B-1","scan_seq":0,"EPA":1},{"lab_sample_id":"Z","batch_id":"B-1","EPA":1}]`,
			400, "INVALID_LAB_RESULTS", "record 1"},
		{"no analyte", "application/json", `[{"lab_sample_id":"Z","batch_id":"B-1","scan_seq":1}]`, 400, "INVALID_LAB_RESULTS", "record 0"},
		{"an id twice", "application/json", `[{"lab_sample_id":"L0","batch_id":"B-1","scan_seq":0,"EPA":9},{"lab_sample_id":"L0","batch_id":"B-1","scan_seq":1,"EPA":9}]`,
			400, "INVALID_LAB_RESULTS", "lab_sample_id"},
		{"an id with white space", "application/json", `[{"lab_sample_id":" L0","batch_id":"B-1","scan_seq":0,"EPA":9}]`, 400, "INVALID_LAB_RESULTS", "lab_sample_id"},
		{"empty array", "application/json", `[]`, 400, "INVALID_LAB_RESULTS", ""},
		{"unknown key", "application/json", `[{"lab_sample_id":"L0","batch_id":"B-1","scan_seq":0,"epa":9}]`, 400, "INVALID_REQUEST", "epa"},
		{"negative", "application/json", `[{"lab_sample_id":"L0","batch_id":"B-1","scan_seq":0,"EPA":-9}]`, 400, "INVALID_REQUEST", "EPA"},
		{"not an array", "application/json", `{"lab_sample_id":"L0"}`, 400, "INVALID_REQUEST", ""},
		{"malformed", "application/json", `[{"lab_sample_id":`, 400, "MALFORMED_JSON", ""},
		{"csv bad number", "text/csv", "lab_sample_id,batch_id,scan_seq,EPA\nL0,B-1,0,9\nL1,B-1,1,x\n", 400, "INVALID_LAB_RESULTS", "record 1"},
		{"csv ragged", "text/csv", "lab_sample_id,batch_id,scan_seq,EPA\nL0,B-1,0,9,7\n", 400, "INVALID_LAB_RESULTS", ""},
		{"csv bad header", "text/csv", "lab_sample_id,batch,scan_seq,EPA\nL0,B-1,0,9\n", 400, "INVALID_LAB_RESULTS", "batch"},
		{"xml", "application/xml", `<x/>`, 415, "UNSUPPORTED_MEDIA_TYPE", "text/csv"},
		{"no type", "", `[]`, 415, "UNSUPPORTED_MEDIA_TYPE", "text/csv"},
		{"json over 4 MiB", "application/json", "[" + strings.Repeat(" ", reconcile.MaxInputBytes) + "]", 413, "PAYLOAD_TOO_LARGE", ""},
		{"csv over 4 MiB", "text/csv", "lab_sample_id,batch_id,scan_seq,EPA\n" + strings.Repeat("L0,B-1,0,9\n", reconcile.MaxInputBytes/11+1), 413, "PAYLOAD_TOO_LARGE", ""},
	} {
		var e gen.ErrorResponse
		code := f.do(t, "POST", "/lab-results", c.contentType, []byte(c.body), &e)
		t.Logf("%s: %d %s: %s", c.name, code, e.Code, e.Message)
		if code != c.status || e.Code != c.code || !strings.Contains(e.Message, c.mentions) {
			t.Errorf("%s: %d %+v, want %d %s mentioning %q", c.name, code, e, c.status, c.code, c.mentions)
		}
	}
	// Nothing of the refused posts was stored: L0 still has its EPA.
	p := f.performance(t, "vA", "")
	checkStats(t, "after refusals", p.Analytes.EPA, func(i int) float64 { return 100 + float64(i) + wobble(i) }, labEPA, 0, 7)
}

// TestPostLabResultsLargeCSV: a post of reconcile.MaxRecords records
// over the 1 MiB limit of other JSON bodies but under 4 MiB is taken.
func TestPostLabResultsLargeCSV(t *testing.T) {
	f := startLabFixture(t)
	var b strings.Builder
	b.WriteString("lab_sample_id,batch_id,scan_seq,EPA\n")
	for i := range reconcile.MaxRecords {
		fmt.Fprintf(&b, "%s-%05d,B-1,%d,%d\n", strings.Repeat("S", 100), i, i%20, 100+i%7)
	}
	if b.Len() <= 1<<20 || b.Len() > reconcile.MaxInputBytes {
		t.Fatalf("a post of %d bytes tests nothing", b.Len())
	}
	var out gen.LabResultsOutcome
	if code := f.do(t, "POST", "/lab-results", "text/csv", []byte(b.String()), &out); code != 200 ||
		out.Received != reconcile.MaxRecords || out.Matched != reconcile.MaxRecords/2 || len(out.Unmatched) != reconcile.MaxRecords/2 {
		t.Fatalf("large post: %d received %d matched %d unmatched %d", code, out.Received, out.Matched, len(out.Unmatched))
	}
	one := strings.Replace(b.String(), "\n", "\nextra,B-1,1,1\n", 1)
	var e gen.ErrorResponse
	if code := f.do(t, "POST", "/lab-results", "text/csv", []byte(one), &e); code != 400 || e.Code != "INVALID_LAB_RESULTS" {
		t.Fatalf("one record over MaxRecords: %d %+v", code, e)
	}
}

// validateAgainstContract checks an answer (status, headers, body)
// against api/openapi.yaml.
func validateAgainstContract(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
	router, err := contractRouter()
	if err != nil {
		return err
	}
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		return err
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
}

// TestLabResultsSurviveRestart: the App closes the lab store in its
// shutdown and opens it again on start: the results and the statistics
// are the same after a restart.
func TestLabResultsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	f := startLabServer(t, dir)
	f.logKnownPredictions(t)
	if code := f.do(t, "POST", "/lab-results", "application/json", []byte(labPost), nil); code != 200 {
		t.Fatalf("post: %d", code)
	}
	before := mustJSON(t, f.performance(t, "vA", ""))
	if err := f.app.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	f = startLabServer(t, dir)
	if after := mustJSON(t, f.performance(t, "vA", "")); after != before {
		t.Fatalf("after a restart:\n%s\nbefore:\n%s", after, before)
	}
	var out gen.LabResultsOutcome
	if code := f.do(t, "POST", "/lab-results", "application/json", []byte(labPost), &out); code != 200 || out.Replaced != 10 {
		t.Fatalf("the same post after a restart: %d %+v", code, out)
	}
}

// TestConcurrentLabPostsEachWhole: posts at once, of the same ids with
// other values, are each stored whole or not at all: after every round,
// the stored values are all one post's, and exactly one post of a round
// replaced what the other had just stored.
func TestConcurrentLabPostsEachWhole(t *testing.T) {
	f := startLabFixture(t)
	postOf := func(epa float64) []byte {
		var b strings.Builder
		b.WriteString("lab_sample_id,batch_id,scan_seq,EPA\n")
		for i := range 10 {
			for k := range 100 {
				fmt.Fprintf(&b, "C%d-%d,B-1,%d,%g\n", i, k, i, epa)
			}
		}
		return []byte(b.String())
	}
	for round := range 5 {
		a, b := float64(2*round+1), float64(2*round+2)
		results := make(chan gen.LabResultsOutcome, 2)
		for _, epa := range []float64{a, b} {
			go func() {
				var out gen.LabResultsOutcome
				if code := f.do(t, "POST", "/lab-results", "text/csv", postOf(epa), &out); code != 200 {
					t.Errorf("round %d: post of EPA %g: %d", round, epa, code)
				}
				results <- out
			}()
		}
		first, second := <-results, <-results
		if t.Failed() {
			t.FailNow()
		}
		// Each post replaced all 1000 ids of the round before, if any;
		// the one committed second also all of the other's.
		replacedBefore := 1000 * min(round, 1)
		if got := []int{first.Replaced, second.Replaced}; !(got[0] == 1000 && got[1] == replacedBefore || got[1] == 1000 && got[0] == replacedBefore) {
			t.Fatalf("round %d: replaced %v, want 1000 and %d", round, got, replacedBefore)
		}
		stored, err := f.app.labstore.Range(context.Background(), time.Time{}, time.Time{}, 2000)
		if err != nil {
			t.Fatal(err)
		}
		values := map[float64]int{}
		for _, r := range stored {
			if strings.HasPrefix(r.LabSampleID, "C") {
				values[r.Lab.Value[inference.EPA]]++
			}
		}
		if len(values) != 1 || (values[a] != 1000 && values[b] != 1000) {
			t.Fatalf("round %d: the stored EPA values are %v, want one post's (%g or %g) on all 1000", round, values, a, b)
		}
	}
}

// contractRouter parses api/openapi.yaml and builds its router once per
// test binary: doing it for every answer took seconds under -race.
var contractRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := gen.GetSwagger()
	if err != nil {
		return nil, err
	}
	doc.Servers = nil
	return gorillamux.NewRouter(doc)
})

// TestLabAgreementGaugesSurviveRestart: a post that matches sets the
// lab's gauges of a registered version; the App computes them again at
// start from the stored results, so a restart leaves no gap; and a
// version deleted from the registry loses them.
func TestLabAgreementGaugesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	f := startLabServer(t, dir)
	version := stageSmallModel(t, f.app.Registry, "op")
	// Three spectra of batch B-NOW logged a minute ago, within the
	// window: the version reads EPA 2 g/L high on each.
	now := time.Now().UTC()
	for i := range 3 {
		rec := &predlog.Record{PredictionID: predlog.NewPredictionID(), Time: now.Add(time.Duration(i-60) * time.Second), ModelVersion: version, Role: predlog.RoleActive,
			ScanContext: inference.ScanContext{BatchID: "B-NOW", HasBatchID: true, ScanSeq: float64(i), HasScanSeq: true}}
		rec.Concentrations.Set(inference.EPA, 102+float64(i))
		if !f.app.predlog.Record(rec) {
			t.Fatal("the log refused a record")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.app.predlog.Stats().Committed < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the log committed %d of 3 records", f.app.predlog.Stats().Committed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var post strings.Builder
	post.WriteString("lab_sample_id,batch_id,scan_seq,sampled_at,EPA,DHA,DPA\n")
	for i := range 3 {
		fmt.Fprintf(&post, "L-%d,B-NOW,%d,,%d,,\n", i, i, 100+i)
	}
	var out gen.LabResultsOutcome
	if code := f.do(t, "POST", "/lab-results", "text/csv", []byte(post.String()), &out); code != 200 || out.Matched != 3 {
		t.Fatalf("post: %d %+v", code, out)
	}
	// value is the EPA series of name for the version, as /metrics
	// writes it, or "absent".
	value := func(name string) string {
		t.Helper()
		_, body := httpDo(t, f.app, "GET", "/metrics", "", "")
		prefix := fmt.Sprintf("%s{analyte=%q,version=%q} ", name, "EPA", version)
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				return v
			}
		}
		return "absent"
	}
	check := func(when string) {
		t.Helper()
		for name, want := range map[string]string{"ramanserve_lab_bias": "2", "ramanserve_lab_rmsep": "2", "ramanserve_lab_pairs": "3"} {
			if got := value(name); got != want {
				t.Errorf("%s: %s = %s, want %s", when, name, got, want)
			}
		}
	}
	check("after the post")
	if err := f.app.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	f = startLabServer(t, dir)
	check("after a restart, before any post")
	if err := f.app.Registry.Delete(context.Background(), version); err != nil {
		t.Fatal(err)
	}
	if got := value("ramanserve_lab_rmsep"); got != "absent" {
		t.Errorf("after deleting %s: ramanserve_lab_rmsep = %s, want absent", version, got)
	}
}
