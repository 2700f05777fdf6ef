package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"ramanserve/client"
	"ramanserve/gen"
)

// Prism (@stoplight/prism-cli, pinned in testdata/prism/package-lock.json)
// is a validating proxy written from the OpenAPI document alone, by
// others: TestPrismProxy sends the suite's requests for every operation
// through `prism proxy --errors`, which answers a request or a response
// that departs from api/openapi.yaml with its own 422 or 500 and an
// sl-violations header instead of forwarding it. make test-prism installs
// Prism (npm ci) and names it in RAMANSERVE_TEST_PRISM.

// prismKnownMetaViolation is what Prism says of every training upload:
// it reads each multipart part as a string and validates it as one, so
// the meta part, an object sent as application/json (the contract's
// encoding), is "not an object" to it however the contract is written.
// The upload goes through a proxy without --errors, which forwards it and
// reports in sl-violations; that one violation is allowed there, no other.
func prismKnownMetaViolation(v prismViolation) bool {
	return strings.Join(v.Location, ".") == "request.body.meta" && v.Code == "type"
}

// prismAsText is b as Prism forwards a body it does not parse as JSON:
// decoded as UTF-8 text the way the Encoding standard decodes it (each
// maximal run of bytes that begins a valid sequence but does not finish
// it, and each byte that begins none, replaced by U+FFFD), and encoded
// again. A binary body (the model export, application/octet-stream)
// therefore does not come through Prism intact; its bytes are checked
// against the server directly (TestExportRoundTripThroughAProcess checks
// them against the registry).
func prismAsText(b []byte) []byte {
	out := make([]byte, 0, len(b))
	var cp rune
	needed, seen := 0, 0
	lower, upper := byte(0x80), byte(0xBF)
	for i := 0; i < len(b); i++ {
		c := b[i]
		if needed == 0 {
			switch {
			case c < 0x80:
				out = append(out, c)
			case c >= 0xC2 && c <= 0xDF:
				needed, cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					lower = 0xA0
				} else if c == 0xED {
					upper = 0x9F
				}
				needed, cp = 2, rune(c&0x0F)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					lower = 0x90
				} else if c == 0xF4 {
					upper = 0x8F
				}
				needed, cp = 3, rune(c&0x07)
			default:
				out = utf8.AppendRune(out, utf8.RuneError)
			}
			continue
		}
		if c < lower || c > upper {
			// The sequence ends short: one U+FFFD for it, and this
			// byte is read again as the start of the next.
			needed, seen, cp = 0, 0, 0
			lower, upper = 0x80, 0xBF
			out = utf8.AppendRune(out, utf8.RuneError)
			i--
			continue
		}
		lower, upper = 0x80, 0xBF
		cp = cp<<6 | rune(c&0x3F)
		if seen++; seen == needed {
			out = utf8.AppendRune(out, cp)
			needed, seen, cp = 0, 0, 0
		}
	}
	if needed != 0 {
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return out
}

// TestPrismAsText: prismAsText replaces what the Encoding standard
// replaces, one U+FFFD per maximal subpart (the answers are Python's
// bytes.decode("utf-8", "replace"), which follows the same practice).
func TestPrismAsText(t *testing.T) {
	const r = "\xef\xbf\xbd"
	for in, want := range map[string]string{
		"plain":                     "plain",
		"\xe2\x82A":                 r + "A",
		"\xf0\x9f\x98":              r,
		"\xed\xa0\x80":              r + r + r,
		"\xc0\xaf":                  r + r,
		"\xe0\x80\xafA":             r + r + r + "A",
		"\xf4\x90\x80\x80":          r + r + r + r,
		"\x80\xff\xfe":              r + r + r,
		"\xf0\x9f\x98\x80\xe2\x82":  "\xf0\x9f\x98\x80" + r,
		"\xce\xbcm \xe2\x80\x94 ok": "\xce\xbcm \xe2\x80\x94 ok",
	} {
		if got := string(prismAsText([]byte(in))); got != want {
			t.Errorf("prismAsText(%q) = %q, want %q", in, got, want)
		}
	}
}

// prismViolation is one entry of Prism's sl-violations header.
type prismViolation struct {
	Location []string `json:"location"`
	Severity string   `json:"severity"`
	Code     any      `json:"code"` // a keyword, or an HTTP status
	Message  string   `json:"message"`
}

// prismDoer sends requests through a Prism proxy, validates each answer
// against the contract (as every request of the suite is), and records
// what Prism reported.
type prismDoer struct {
	mu         sync.Mutex
	requests   int
	violations []string
}

func (d *prismDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := validatingDoer{client: httpClient()}.Do(req)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests++
	if err != nil {
		d.violations = append(d.violations, err.Error())
		return nil, err
	}
	if v := resp.Header.Get("sl-violations"); v != "" {
		d.violations = append(d.violations, fmt.Sprintf("%s %s: %s", req.Method, req.URL.Path, v))
	}
	return resp, nil
}

// startPrism runs `prism proxy` for api/openapi.yaml in front of upstream
// on a free loopback port, with extra flags, and returns its base URL
// once it listens. The process is stopped when the test ends.
func startPrism(t *testing.T, prism, upstream string, flags ...string) string {
	t.Helper()
	base, stop, err := runPrism(prism, upstream, flags...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return base
}

// runPrism starts `prism proxy` and waits until it listens; stop ends it.
func runPrism(prism, upstream string, flags ...string) (base string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	spec, err := filepath.Abs("../api/openapi.yaml")
	if err != nil {
		return "", nil, err
	}
	args := append([]string{"proxy", "-h", "127.0.0.1", "-p", fmt.Sprint(port)}, flags...)
	cmd := exec.Command(prism, append(args, spec, upstream)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	listening := make(chan struct{})
	var logged bytes.Buffer
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			logMu.Lock()
			logged.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if strings.Contains(sc.Text(), "Prism is listening on") {
				close(listening)
				io.Copy(io.Discard, out) // keep the pipe drained
				return
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(2 * time.Minute):
		stop()
		logMu.Lock()
		defer logMu.Unlock()
		return "", nil, fmt.Errorf("prism did not start listening within 2 minutes:\n%s", logged.String())
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port), stop, nil
}

// Through Prism, the suite itself: with RAMANSERVE_TEST_PRISM_SUITE
// naming Prism, the suite's server is reached through `prism proxy`
// without --errors, which forwards every request, the suite's
// deliberately invalid ones included, and reports what it finds in
// sl-violations. A violation in a response fails the request (see
// prismResponseViolations); one in a request is only counted, since the
// suite sends invalid requests on purpose. make test-prism runs the
// tests whose requests all go to the suite's server and whose checks
// hold behind a proxy (Prism adds CORS headers of its own, for one).
var prismSuite struct {
	responses, requestViolations atomic.Int64
}

// prismResponseViolations returns the violations Prism reported in a
// response header that concern the response, and counts the rest.
func prismResponseViolations(req *http.Request, h http.Header) ([]prismViolation, error) {
	v := h.Get("sl-violations")
	if os.Getenv("RAMANSERVE_TEST_PRISM_SUITE") != "" && "http://"+req.URL.Host == suite.httpBase {
		prismSuite.responses.Add(1)
	}
	if v == "" {
		return nil, nil
	}
	var list []prismViolation
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, fmt.Errorf("sl-violations %q: %w", v, err)
	}
	var out []prismViolation
	for _, one := range list {
		if len(one.Location) > 0 && one.Location[0] == "request" {
			prismSuite.requestViolations.Add(1)
			continue
		}
		out = append(out, one)
	}
	return out, nil
}

// TestPrismProxy: every operation of the contract, called as the suite
// calls it, through `prism proxy --errors` in front of a server with
// models, a shadow, logged predictions and lab results; Prism reports no
// violation of a request or a response. The training upload goes
// through a proxy without --errors (see prismKnownMetaViolation), whose
// answer is still checked for any other violation.
func TestPrismProxy(t *testing.T) {
	prism := os.Getenv("RAMANSERVE_TEST_PRISM")
	if prism == "" {
		t.Skip("run by `make test-prism`, which installs Prism first")
	}
	needInProcess(t)
	proc := extraServer(t, serverConfigWithSpectra())
	upstream := "http://" + proc.HTTPAddr()
	strict := startPrism(t, prism, upstream, "--errors")
	lenient := startPrism(t, prism, upstream)

	d := &prismDoer{}
	c, err := gen.NewClientWithResponses(strict, gen.WithHTTPClient(d))
	if err != nil {
		t.Fatal(err)
	}
	// The server itself, to compare what Prism forwards with.
	direct, err := gen.NewClientWithResponses(upstream, gen.WithHTTPClient(httpClient()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ops := map[string]bool{}
	call := func(op string, status int, got int, body []byte) {
		t.Helper()
		ops[op] = true
		if got != status {
			t.Errorf("%s: %d, want %d: %s", op, got, status, body)
		}
	}

	// Before any model.
	r0 := must(c.GetModelInfoWithResponse(ctx, nil))(t)
	call("getModelInfo", 404, r0.StatusCode(), r0.Body)

	// Two trained models, uploaded through the proxy without --errors.
	upload := func(seed uint64) string {
		ct, body := client.TrainingBody([]byte(`{"operator":"jdoe","notes":"through prism","cv_folds":5}`), bytes.NewReader(syntheticCSV(t, seed, trainingSamples)))
		req, err := http.NewRequest(http.MethodPost, lenient+"/training/start", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		resp, err := validatingDoer{client: httpClient()}.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if v := resp.Header.Get("sl-violations"); v != "" {
			var list []prismViolation
			if err := json.Unmarshal([]byte(v), &list); err != nil {
				t.Fatalf("POST /training/start: sl-violations %q: %v", v, err)
			}
			for _, one := range list {
				if !prismKnownMetaViolation(one) {
					t.Errorf("POST /training/start: Prism reports %+v", one)
				}
			}
		}
		id := acceptedID(t, resp, b)
		call("startTraining", 202, resp.StatusCode, b)
		return id
	}
	jobA, jobB := upload(61), upload(62)
	a := waitJob(t, c, jobA, 3*time.Minute).Result.NewVersion
	b := waitJob(t, c, jobB, 3*time.Minute).Result.NewVersion
	ops["getTrainingJob"] = true

	archived := gen.LoadModelRequestSource("archived")
	rl := must(c.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: a}))(t)
	call("loadModel", 200, rl.StatusCode(), rl.Body)
	rl = must(c.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: b}))(t)
	call("loadModel", 200, rl.StatusCode(), rl.Body)
	rl = must(c.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: a, Source: &archived}))(t)
	call("loadModel", 200, rl.StatusCode(), rl.Body)
	rl = must(c.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: "never-trained"}))(t)
	call("loadModel", 400, rl.StatusCode(), rl.Body)

	// b is archived now: it shadows a while predictions are logged.
	rs := must(c.SetShadowWithResponse(ctx, gen.SetShadowJSONRequestBody{Version: b}))(t)
	call("setShadow", 200, rs.StatusCode(), rs.Body)
	batch := uniqueBatch("prism")
	wn, samples := evidenceSamples(63, 3)
	sendPredicts(t, proc.ZMQEndpoint(), batch, 1, wn, samples)
	logged := waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: 3, gen.PredictionRoleShadow: 3})
	ops["listPredictions"] = true
	rg := must(c.GetShadowWithResponse(ctx))(t)
	call("getShadow", 200, rg.StatusCode(), rg.Body)

	seq := int64(2)
	lab := []gen.LabResult{labResult("HPLC-prism-1", batch, &seq, nil, [3]float64{30, 20, 5})}
	rp := must(c.PostLabResultsWithResponse(ctx, lab))(t)
	call("postLabResults", 200, rp.StatusCode(), rp.Body)
	csv := "lab_sample_id,batch_id,scan_seq,EPA\nHPLC-prism-2," + batch + ",3,31.5\n"
	rc := must(c.PostLabResultsWithBodyWithResponse(ctx, "text/csv", strings.NewReader(csv)))(t)
	call("postLabResults", 200, rc.StatusCode(), rc.Body)
	accept := func(ctx context.Context, req *http.Request) error { req.Header.Set("Accept", "text/csv"); return nil }
	rcsv := must(c.ListPredictionsWithResponse(ctx, &gen.ListPredictionsParams{BatchId: &batch}, accept))(t)
	call("listPredictions", 200, rcsv.StatusCode(), rcsv.Body)
	rperf := must(c.GetModelPerformanceWithResponse(ctx, a, &gen.GetModelPerformanceParams{}))(t)
	call("getModelPerformance", 200, rperf.StatusCode(), rperf.Body)
	rr := must(c.RescoreModelWithResponse(ctx, b, &gen.RescoreModelParams{}))(t)
	call("rescoreModel", 202, rr.StatusCode(), rr.Body)
	var rescore gen.TrainingJobAccepted
	if err := json.Unmarshal(rr.Body, &rescore); err == nil && rescore.JobId != "" {
		waitJob(t, c, rescore.JobId, 3*time.Minute)
	}
	rd := must(c.ClearShadowWithResponse(ctx))(t)
	call("clearShadow", 200, rd.StatusCode(), rd.Body)

	// The batch and one of its spectra, read back from the log.
	rbl := must(c.ListBatchesWithResponse(ctx, &gen.ListBatchesParams{}))(t)
	call("listBatches", 200, rbl.StatusCode(), rbl.Body)
	rbl = must(c.ListBatchesWithResponse(ctx, &gen.ListBatchesParams{Cursor: ptrTo("not-a-cursor")}))(t)
	call("listBatches", 400, rbl.StatusCode(), rbl.Body)
	bySeq := gen.ScanSeq
	rb := must(c.GetBatchWithResponse(ctx, batch, &gen.GetBatchParams{Maturity: &bySeq}))(t)
	call("getBatch", 200, rb.StatusCode(), rb.Body)
	noBatch := uniqueBatch("prism-none")
	rb = must(c.GetBatchWithResponse(ctx, noBatch, nil))(t)
	call("getBatch", 404, rb.StatusCode(), rb.Body)
	rmk := must(c.MarkReferenceBatchWithResponse(ctx, batch))(t)
	call("markReferenceBatch", 200, rmk.StatusCode(), rmk.Body)
	rmk = must(c.MarkReferenceBatchWithResponse(ctx, noBatch))(t)
	call("markReferenceBatch", 404, rmk.StatusCode(), rmk.Body)
	rbr := must(c.GetBatchReportWithResponse(ctx, batch, nil))(t)
	call("getBatchReport", 200, rbr.StatusCode(), rbr.Body)
	rbr = must(c.GetBatchReportWithResponse(ctx, noBatch, nil))(t)
	call("getBatchReport", 404, rbr.StatusCode(), rbr.Body)
	rum := must(c.UnmarkReferenceBatchWithResponse(ctx, batch))(t)
	call("unmarkReferenceBatch", 204, rum.StatusCode(), rum.Body)
	pid, err := uuid.Parse(logged[gen.PredictionRoleActive][0].PredictionId)
	if err != nil {
		t.Fatalf("prediction_id %q: %v", logged[gen.PredictionRoleActive][0].PredictionId, err)
	}
	rpr := must(c.GetPredictionWithResponse(ctx, pid))(t)
	call("getPrediction", 200, rpr.StatusCode(), rpr.Body)
	rpp := must(c.GetPredictionReportWithResponse(ctx, pid))(t)
	call("getPredictionReport", 200, rpp.StatusCode(), rpp.Body)
	// An HTML page is UTF-8 text: Prism forwards it unchanged.
	if page := must(direct.GetPredictionReportWithResponse(ctx, pid))(t); !bytes.Equal(rpp.Body, page.Body) {
		t.Errorf("getPredictionReport: %d bytes through Prism, %d from the server", len(rpp.Body), len(page.Body))
	}
	unknown := uuid.New()
	rpr = must(c.GetPredictionWithResponse(ctx, unknown))(t)
	call("getPrediction", 404, rpr.StatusCode(), rpr.Body)
	rpp = must(c.GetPredictionReportWithResponse(ctx, unknown))(t)
	call("getPredictionReport", 404, rpp.StatusCode(), rpp.Body)

	// Reading the registry and the jobs.
	for _, v := range []string{a, b} {
		r1 := must(c.GetModelWithResponse(ctx, v, nil))(t)
		call("getModel", 200, r1.StatusCode(), r1.Body)
		r2 := must(c.GetModelReviewWithResponse(ctx, v))(t)
		call("getModelReview", 200, r2.StatusCode(), r2.Body)
		r3 := must(c.GetModelReportWithResponse(ctx, v, nil))(t)
		call("getModelReport", 200, r3.StatusCode(), r3.Body)
		r4 := must(c.GetModelAxisWithResponse(ctx, v))(t)
		call("getModelAxis", 200, r4.StatusCode(), r4.Body)
		for _, f := range []gen.ExportModelParamsFormat{gen.Joblib, gen.Npz} {
			r5 := must(c.ExportModelWithResponse(ctx, v, &gen.ExportModelParams{Format: &f}))(t)
			call("exportModel", 200, r5.StatusCode(), nil)
			// Prism checks the status and the headers of the file's
			// answer but reads its body as UTF-8 text, which it forwards
			// re-encoded (see prismAsText): the file must be what the
			// server sends once read so.
			fromServer := must(direct.ExportModelWithResponse(ctx, v, &gen.ExportModelParams{Format: &f}))(t)
			if len(r5.Body) == 0 || !bytes.Equal(r5.Body, prismAsText(fromServer.Body)) {
				t.Errorf("exportModel %s %s: %d bytes through Prism, %d from the server (%d read as text)", v, f, len(r5.Body), len(fromServer.Body), len(prismAsText(fromServer.Body)))
			}
			if cd := r5.HTTPResponse.Header.Get("Content-Disposition"); cd != `attachment; filename="`+v+`.`+string(f)+`"` {
				t.Errorf("exportModel %s %s: Content-Disposition %q", v, f, cd)
			}
		}
	}
	rna := must(c.GetModelAxisWithResponse(ctx, "never-trained"))(t)
	call("getModelAxis", 404, rna.StatusCode(), rna.Body)
	rne := must(c.ExportModelWithResponse(ctx, "never-trained", nil))(t)
	call("exportModel", 404, rne.StatusCode(), rne.Body)
	r404 := must(c.GetModelWithResponse(ctx, "never-trained", nil))(t)
	call("getModel", 404, r404.StatusCode(), r404.Body)
	ri := must(c.GetModelInfoWithResponse(ctx, nil))(t)
	call("getModelInfo", 200, ri.StatusCode(), ri.Body)
	rlist := must(c.ListModelsWithResponse(ctx, nil))(t)
	call("listModels", 200, rlist.StatusCode(), rlist.Body)
	rj := must(c.ListTrainingJobsWithResponse(ctx, &gen.ListTrainingJobsParams{}))(t)
	call("listTrainingJobs", 200, rj.StatusCode(), rj.Body)
	rtr := must(c.GetTrainingReportWithResponse(ctx, jobA, nil))(t)
	call("getTrainingReport", 200, rtr.StatusCode(), rtr.Body)
	rcan := must(c.CancelTrainingJobWithResponse(ctx, jobA))(t)
	call("cancelTrainingJob", 409, rcan.StatusCode(), rcan.Body)
	rnj := must(c.GetTrainingJobWithResponse(ctx, "no-such-job"))(t)
	call("getTrainingJob", 404, rnj.StatusCode(), rnj.Body)

	// The server itself.
	rh := must(c.GetHealthWithResponse(ctx))(t)
	call("getHealth", 200, rh.StatusCode(), rh.Body)
	rlz := must(c.GetLivezWithResponse(ctx))(t)
	call("getLivez", 200, rlz.StatusCode(), rlz.Body)
	rrz := must(c.GetReadyzWithResponse(ctx))(t)
	call("getReadyz", 200, rrz.StatusCode(), rrz.Body)
	rm := must(c.GetMetricsWithResponse(ctx))(t)
	call("getMetrics", 200, rm.StatusCode(), rm.Body)
	rf := must(c.GetFleetWithResponse(ctx))(t)
	call("getFleet", 200, rf.StatusCode(), rf.Body)
	ry := must(c.GetOpenAPIYAMLWithResponse(ctx))(t)
	call("getOpenAPIYAML", 200, ry.StatusCode(), ry.Body)
	rjs := must(c.GetOpenAPIJSONWithResponse(ctx))(t)
	call("getOpenAPIJSON", 200, rjs.StatusCode(), rjs.Body)
	rdocs := must(c.GetDocsWithResponse(ctx))(t)
	call("getDocs", 200, rdocs.StatusCode(), rdocs.Body)

	// b was archived by the last load: it may go.
	rdel := must(c.DeleteModelWithResponse(ctx, b))(t)
	call("deleteModel", 204, rdel.StatusCode(), rdel.Body)

	for _, op := range contractOperations() {
		if !ops[op.id] {
			t.Errorf("%s %s (%s) was not sent through Prism", op.method, op.path, op.id)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.violations {
		t.Errorf("Prism: %s", v)
	}
	t.Logf("prism: %d requests over %d operations through prism proxy --errors, %d violations; 2 training uploads through prism proxy without --errors, no violation but Prism's reading of the meta part", d.requests, len(ops), len(d.violations))
}
