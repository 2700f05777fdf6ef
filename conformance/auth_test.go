package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/server"
	"ramanserve/server/auth"
)

// newToken is a fresh random bearer token.
func newToken(t *testing.T) string {
	t.Helper()
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// tokenLine is the tokens file line of token: role sha256(token) name.
func tokenLine(role, token, name string) string {
	return auth.FileLine(auth.Role(role), token, name)
}

// writeTokens writes a tokens file (replacing it whole, as an operator's
// editor or config management would: a new file renamed over the old).
func writeTokens(t *testing.T, path string, lines ...string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte("# role sha256(token) name\n"+strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// authTokens are the tokens of an auth-on server.
type authTokens struct {
	read, operate string
}

// authServer starts an in-process server with -auth-tokens (a read token
// "dashboard" and an operate token "console-ci") and health as given.
func authServer(t *testing.T, health bool) (*app.App, authTokens) {
	t.Helper()
	return authServerWith(t, health, app.EvidenceConfig{})
}

// authServerWith is authServer with the evidence configuration ev.
func authServerWith(t *testing.T, health bool, ev app.EvidenceConfig) (*app.App, authTokens) {
	t.Helper()
	tok := authTokens{read: newToken(t), operate: newToken(t)}
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, tokenLine("read", tok.read, "dashboard"), tokenLine("operate", tok.operate, "console-ci"))
	proc := extraServer(t, app.Config{Auth: server.AuthConfig{TokensFile: file, Health: health}, Evidence: ev})
	return proc, tok
}

// asToken sends a request with Authorization: Bearer token ("" for none)
// through the validating doer.
func asToken(t *testing.T, token, method, url, contentType string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	return withAuthorization(t, bearer(token), method, url, contentType, body)
}

func bearer(token string) string {
	if token == "" {
		return ""
	}
	return "Bearer " + token
}

// withAuthorization sends a request with the given Authorization header
// value ("" for none) through the validating doer.
func withAuthorization(t *testing.T, authorization, method, url, contentType string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	if body == nil {
		return sendWithAuthorization(t, authorization, method, url, contentType, nil)
	}
	// A training upload refused 507 because the write probe outlasted its
	// timeout on a disk busy with the other tests is sent again, as a client
	// honouring "retryable" would (multipartUpload does the same): each
	// attempt reads its own copy of the body.
	data, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		resp, b := sendWithAuthorization(t, authorization, method, url, contentType, bytes.NewReader(data))
		if resp.StatusCode != http.StatusInsufficientStorage || !bytes.Contains(b, []byte("did not answer")) || time.Now().After(deadline) {
			return resp, b
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func sendWithAuthorization(t *testing.T, authorization, method, url, contentType string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := validatingDoer{client: httpClient()}.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// tokenClient is the generated client for base, sending token on every
// request and validating every response.
func tokenClient(t *testing.T, base, token string) *gen.ClientWithResponses {
	t.Helper()
	c, err := gen.NewClientWithResponses(base, gen.WithHTTPClient(validatingDoer{client: httpClient()}),
		gen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantUnauthorized checks a 401: UNAUTHORIZED envelope (the doer has
// validated it against the operation's 401) and the Bearer challenge,
// with error="invalid_token" exactly when invalidToken.
func wantUnauthorized(t *testing.T, what string, resp *http.Response, body []byte, invalidToken bool) {
	t.Helper()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("%s: %d %s, want 401", what, resp.StatusCode, body)
	}
	if e := errorCode(t, body); e.Code != "UNAUTHORIZED" {
		t.Errorf("%s: code %s, want UNAUTHORIZED", what, e.Code)
	}
	want := `Bearer realm="ramanserve"`
	if invalidToken {
		want += `, error="invalid_token"`
	}
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Errorf("%s: WWW-Authenticate %q, want %q", what, got, want)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s: 401 without X-Request-Id", what)
	}
}

// authFixtures are what every operation of the contract needs to succeed
// once on an auth-on server.
type authFixtures struct {
	active, toLoad, toDelete string // model versions: the active one, a staged one to load, a staged one to delete
	doneJob, toCancel        string // a done job (its report); a job still queued or running
	// labBatch has logged predictions (spectra included) with scan_seq
	// 1 and 2: what re-scoring, the lab post and the export need.
	labBatch, labSampleID string
	// predictionID is the id of one of labBatch's predictions.
	predictionID string
}

// trainAs uploads a synthetic set with token and waits for its job; it
// returns the job id and the staged version.
func trainAs(t *testing.T, base string, c *gen.ClientWithResponses, token string, seed uint64) (jobID, version string) {
	t.Helper()
	id := submitAs(t, base, token, seed, trainingSamples)
	job := waitJob(t, c, id, 3*time.Minute)
	if job.Status != gen.Done || job.Result == nil {
		t.Fatalf("job %s ended %s: %+v", id, job.Status, job.Error)
	}
	return id, job.Result.NewVersion
}

// submitAs uploads n synthetic rows with token and returns the job id.
func submitAs(t *testing.T, base, token string, seed uint64, n int) string {
	t.Helper()
	ct, body := client.TrainingBody([]byte(`{"operator":"jdoe"}`), bytes.NewReader(syntheticCSV(t, seed, n)))
	resp, b := asToken(t, token, http.MethodPost, base+"/training/start", ct, body)
	id := acceptedID(t, resp, b)
	if id == "" {
		t.Fatalf("POST /training/start: %d %s", resp.StatusCode, b)
	}
	return id
}

func setUpAuthFixtures(t *testing.T, base, zmq string, tok authTokens) authFixtures {
	t.Helper()
	c := tokenClient(t, base, tok.operate)
	var fx authFixtures
	fx.doneJob, fx.active = trainAs(t, base, c, tok.operate, 21)
	_, fx.toLoad = trainAs(t, base, c, tok.operate, 22)
	_, fx.toDelete = trainAs(t, base, c, tok.operate, 23)
	loadVersion(t, c, fx.active)
	fx.toCancel = fx.doneJob // until the operate round submits one to cancel
	// Logged predictions for the evidence operations.
	fx.labBatch, fx.labSampleID = uniqueBatch("auth"), "HPLC-auth-"+newToken(t)[:8]
	wn, samples := evidenceSamples(27, 2)
	sendPredicts(t, zmq, fx.labBatch, 1, wn, samples)
	logged := waitLogged(t, c, fx.labBatch, map[gen.PredictionRole]int{gen.PredictionRoleActive: 2})
	fx.predictionID = logged[gen.PredictionRoleActive][0].PredictionId
	return fx
}

// contractOperation is one operation of api/openapi.yaml.
type contractOperation struct {
	id, method, path string
}

// contractOperations lists every operation of the contract, from the
// document itself, so that an operation added later is in the matrix
// without anyone remembering to add it.
func contractOperations() []contractOperation {
	var ops []contractOperation
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			// oapi-codegen's embedded document capitalises operation ids.
			id := strings.ToLower(op.OperationID[:1]) + op.OperationID[1:]
			ops = append(ops, contractOperation{id: id, method: method, path: path})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

// request is the operation's request against the fixtures: URL, content
// type and body. A fresh body each call (a body is read once).
func (fx authFixtures) request(t *testing.T, base string, op contractOperation) (url, contentType string, body io.Reader) {
	t.Helper()
	path := op.path
	switch op.id {
	case "deleteModel":
		path = strings.ReplaceAll(path, "{version}", fx.toDelete)
	case "cancelTrainingJob":
		path = strings.ReplaceAll(path, "{jobId}", fx.toCancel)
	}
	path = strings.ReplaceAll(path, "{version}", fx.active)
	path = strings.ReplaceAll(path, "{jobId}", fx.doneJob)
	path = strings.ReplaceAll(path, "{batch_id}", fx.labBatch)
	path = strings.ReplaceAll(path, "{predictionId}", fx.predictionID)
	if strings.Contains(path, "{") {
		t.Fatalf("%s: no fixture for a parameter of %s", op.id, op.path)
	}
	switch op.id {
	case "loadModel":
		return base + path, "application/json", strings.NewReader(`{"version":"` + fx.toLoad + `"}`)
	case "setShadow":
		// Mutations run after the load: the first active model is then
		// archived, and may be the shadow.
		return base + path, "application/json", strings.NewReader(`{"version":"` + fx.active + `"}`)
	case "postLabResults":
		return base + path, "application/json", strings.NewReader(`[{"lab_sample_id":"` + fx.labSampleID + `","batch_id":"` + fx.labBatch + `","scan_seq":1,"EPA":150.5,"DHA":80.25}]`)
	case "listPredictions":
		return base + path + "?batch_id=" + fx.labBatch, "", nil
	case "startTraining":
		ct, b := client.TrainingBody([]byte(`{"operator":"jdoe"}`), bytes.NewReader(syntheticCSV(t, 26, trainingSamples)))
		return base + path, ct, b
	}
	return base + path, "", nil
}

// isMutation: every method but GET changes something; the contract lists
// 403 on exactly those.
func isMutation(t *testing.T, op contractOperation) bool {
	t.Helper()
	mutation := op.method != http.MethodGet
	_, has403 := spec.Paths.Find(op.path).GetOperation(op.method).Responses.Map()["403"]
	if has403 != mutation {
		t.Errorf("%s %s: the contract lists 403: %v, but it is a mutation: %v", op.method, op.path, has403, mutation)
	}
	return mutation
}

// TestAuthEveryOperation: with -auth-tokens, every operation of the
// contract answers 401 without a token (with the Bearer challenge), a
// read token gets 403 on the mutations and 2xx on every GET, and an
// operate token gets 2xx on every operation, each mutation really taking
// effect on its fixture. Every response is validated against the
// contract, 401 and 403 included.
func TestAuthEveryOperation(t *testing.T) {
	t.Parallel() // its own process: runs beside the others
	// A ramanserve process, not a server in the test binary: the matrix
	// trains models and renders every page three times over, which the
	// race detector would slow several times over, and the suite's other
	// tests run the same handlers under it.
	tok := authTokens{read: newToken(t), operate: newToken(t)}
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, tokenLine("read", tok.read, "dashboard"), tokenLine("operate", tok.operate, "console-ci"))
	proc := startProcess(t, t.TempDir(), "-auth-tokens", file, "-auth-health", "-log-spectra")
	base := "http://" + proc.httpAddr
	fx := setUpAuthFixtures(t, base, proc.zmq, tok)
	ops := contractOperations()
	if len(ops) < 15 {
		t.Fatalf("the contract lists %d operations", len(ops))
	}
	mutations := 0
	for _, op := range ops {
		url, ct, body := fx.request(t, base, op)
		resp, b := asToken(t, "", op.method, url, ct, body)
		wantUnauthorized(t, op.id+" without a token", resp, b, false)

		url, ct, body = fx.request(t, base, op)
		resp, b = asToken(t, tok.read, op.method, url, ct, body)
		if isMutation(t, op) {
			mutations++
			if resp.StatusCode != http.StatusForbidden || errorCode(t, b).Code != "FORBIDDEN" || !strings.Contains(errorCode(t, b).Message, "operate") {
				t.Errorf("%s with the read token: %d %s, want 403 FORBIDDEN naming the operate role", op.id, resp.StatusCode, b)
			}
		} else if resp.StatusCode/100 != 2 {
			t.Errorf("%s with the read token: %d %s, want 2xx", op.id, resp.StatusCode, b)
		}
	}
	t.Logf("auth matrix: %d operations of the contract x {no token, read, operate}, %d of them mutations", len(ops), mutations)
	if mutations != 10 {
		t.Errorf("%d mutations in the contract, want 10 (load, delete, train, cancel, set and clear the shadow, rescore, lab results, mark and unmark a reference batch)", mutations)
	}
	// The operate round, mutations last, so that every GET still finds
	// its fixture; then each mutation's effect is checked.
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].method == http.MethodGet && ops[j].method != http.MethodGet })
	var accepted, rescoreJob string
	for _, op := range ops {
		if op.id == "cancelTrainingJob" {
			// A job large enough to be queued or running still when the
			// cancel arrives right after its upload was accepted.
			fx.toCancel = submitAs(t, base, tok.operate, 25, 1500)
		}
		url, ct, body := fx.request(t, base, op)
		resp, b := asToken(t, tok.operate, op.method, url, ct, body)
		if resp.StatusCode/100 != 2 {
			t.Errorf("%s with the operate token: %d %s, want 2xx", op.id, resp.StatusCode, b)
		}
		switch op.id {
		case "startTraining":
			accepted = acceptedID(t, resp, b)
		case "rescoreModel":
			rescoreJob = acceptedID(t, resp, b)
		case "postLabResults":
			var out gen.LabResultsOutcome
			if err := json.Unmarshal(b, &out); err != nil || out.Matched != 1 {
				t.Errorf("lab post with the operate token: %s, want 1 matched", b)
			}
		}
	}
	c := tokenClient(t, base, tok.read)
	ctx := context.Background()
	if info := must(c.GetModelInfoWithResponse(ctx, nil))(t).JSON200; info == nil || info.ActiveVersion != fx.toLoad {
		t.Errorf("active model after the load: %+v, want %s", info, fx.toLoad)
	}
	if res := must(c.GetModelWithResponse(ctx, fx.toDelete, nil))(t); res.StatusCode() != http.StatusNotFound {
		t.Errorf("deleted %s: GET answers %d", fx.toDelete, res.StatusCode())
	}
	if job := must(c.GetTrainingJobWithResponse(ctx, fx.toCancel))(t).JSON200; fx.toCancel == fx.doneJob || job.Status != gen.Failed || job.Error == nil || job.Error.Code != "CANCELLED" {
		t.Errorf("cancelled job reads %+v", job)
	}
	// The evidence mutations: the shadow set after the clear, the
	// re-scoring job queued, the lab result counted.
	if sh := must(c.GetShadowWithResponse(ctx))(t).JSON200; sh == nil || sh.Version == nil || *sh.Version != fx.active {
		t.Errorf("shadow after PUT /model/shadow: %+v, want %s", sh, fx.active)
	}
	if rescoreJob == "" {
		t.Error("the re-scoring job was not accepted")
	} else if job := waitJob(t, c, rescoreJob, 2*time.Minute); job.Status != gen.Done || job.Kind == nil || *job.Kind != gen.TrainingJobKindRescore {
		t.Errorf("re-scoring job: %s kind %v error %+v", job.Status, job.Kind, job.Error)
	}
	if perf := must(c.GetModelPerformanceWithResponse(ctx, fx.active, nil))(t).JSON200; perf == nil || perf.Analytes.EPA == nil || perf.Analytes.EPA.N < 1 {
		t.Errorf("performance of %s after the lab post: %+v", fx.active, perf)
	}
	// The reference mark, unmarked and marked again (DELETE sorts before
	// PUT), in the operate token's name.
	if refs := must(c.ListBatchesWithResponse(ctx, nil))(t).JSON200; refs == nil || !slices.ContainsFunc(refs.Batches, func(b gen.BatchSummary) bool { return b.BatchId == fx.labBatch && b.Reference }) {
		t.Errorf("GET /batches after the mark: %+v, want %s a reference batch", refs, fx.labBatch)
	}
	if accepted == "" {
		t.Fatal("the operate upload was not accepted")
	}
	// Every job the console uploaded names it beside the operator.
	if job := must(c.GetTrainingJobWithResponse(ctx, accepted))(t).JSON200; job.AuthenticatedAs == nil || *job.AuthenticatedAs != "console-ci" || job.Meta == nil || job.Meta.Operator != "jdoe" {
		t.Errorf("job uploaded with the operate token: authenticated_as %v, meta %+v", job.AuthenticatedAs, job.Meta)
	}
}

// TestAuthenticatedAsInLineage: the token's name is recorded beside the
// self-declared operator in the job record (also on disk), in the lineage
// of the model the job trained, and in the lineage of a file import.
func TestAuthenticatedAsInLineage(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	proc, tok := authServer(t, false)
	base := "http://" + proc.HTTPAddr()
	c := tokenClient(t, base, tok.read)
	ctx := context.Background()
	jobID, version := trainAs(t, base, tokenClient(t, base, tok.operate), tok.operate, 31)

	job := must(c.GetTrainingJobWithResponse(ctx, jobID))(t).JSON200
	if job.AuthenticatedAs == nil || *job.AuthenticatedAs != "console-ci" || job.Meta.Operator != "jdoe" {
		t.Errorf("job: authenticated_as %v beside operator %q", job.AuthenticatedAs, job.Meta.Operator)
	}
	if l := job.Result.Lineage; l == nil || l.AuthenticatedAs == nil || *l.AuthenticatedAs != "console-ci" {
		t.Errorf("job result lineage: %+v", l)
	}
	// The record on disk (what the next start reads) keeps it in its meta.
	raw, err := os.ReadFile(filepath.Join(proc.Registry.Dir(), "jobs", jobID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Meta struct {
			AuthenticatedAs string `json:"authenticated_as"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Meta.AuthenticatedAs != "console-ci" {
		t.Errorf("job record on disk: %v, authenticated_as %q", err, rec.Meta.AuthenticatedAs)
	}
	model := must(c.GetModelWithResponse(ctx, version, nil))(t).JSON200
	if a := model.Lineage.AuthenticatedAs; a == nil || *a != "console-ci" || model.Lineage.Operator == nil || *model.Lineage.Operator != "jdoe" {
		t.Errorf("trained model's lineage: %+v", model.Lineage)
	}

	// A file import, with the operate token.
	data, err := os.ReadFile(filepath.Join(sklearnFixtures, "plain_scaled.joblib"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(proc.Registry.Dir(), "import", "lab.joblib")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(gen.LoadModelRequest{Version: "lab-import", Source: ptrTo(gen.LoadModelRequestSource("file")), Path: &path})
	resp, b := asToken(t, tok.operate, http.MethodPost, base+"/model/load", "application/json", bytes.NewReader(body))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("import: %d %s", resp.StatusCode, b)
	}
	imported := must(c.GetModelWithResponse(ctx, "lab-import", nil))(t).JSON200
	if a := imported.Lineage.AuthenticatedAs; a == nil || *a != "console-ci" {
		t.Errorf("imported model's lineage: %+v", imported.Lineage)
	}

	// Without auth, the field is absent.
	plain := extraServer(t, app.Config{})
	pbase := "http://" + plain.HTTPAddr()
	pc := apiAt(t, pbase)
	pjob, pversion := trainAs(t, pbase, pc, "", 32)
	if j := must(pc.GetTrainingJobWithResponse(ctx, pjob))(t); bytes.Contains(j.Body, []byte("authenticated_as")) {
		t.Errorf("job without auth: %s", j.Body)
	}
	if m := must(pc.GetModelWithResponse(ctx, pversion, nil))(t); bytes.Contains(m.Body, []byte("authenticated_as")) {
		t.Errorf("model without auth: %s", m.Body)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestAuthRefusals: an unknown token is 401 with error="invalid_token";
// another scheme, a bare token, an empty bearer and two Authorization
// headers are 401 without it; unknown routes and wrong methods answer 401
// before routing; GET /health is open unless -auth-health; a CORS
// preflight needs no token.
func TestAuthRefusals(t *testing.T) {
	proc, tok := authServer(t, false)
	base := "http://" + proc.HTTPAddr()

	resp, b := asToken(t, newToken(t), http.MethodGet, base+"/model/list", "", nil)
	wantUnauthorized(t, "unknown token", resp, b, true)
	for _, h := range []string{"Basic " + tok.operate, tok.operate, "Bearer", "Bearer ", "Token " + tok.operate} {
		resp, b := withAuthorization(t, h, http.MethodGet, base+"/model/list", "", nil)
		wantUnauthorized(t, fmt.Sprintf("Authorization %.12q...", h), resp, b, false)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/model/list", nil)
	req.Header.Add("Authorization", "Bearer "+tok.operate)
	req.Header.Add("Authorization", "Bearer "+tok.operate)
	resp2, err := validatingDoer{client: httpClient()}.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(resp2.Body)
	wantUnauthorized(t, "two Authorization headers", resp2, b2, false)

	// Before routing: no route, wrong method.
	resp, b = asToken(t, "", http.MethodGet, base+"/no/such/route", "", nil)
	wantUnauthorized(t, "unknown route", resp, b, false)
	resp, b = asToken(t, "", http.MethodPut, base+"/model/list", "", nil)
	wantUnauthorized(t, "wrong method", resp, b, false)
	resp, b = asToken(t, tok.operate, http.MethodGet, base+"/no/such/route", "", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown route with a token: %d %s", resp.StatusCode, b)
	}
	// Before the body: a big upload without a token is refused at once.
	resp, b = asToken(t, "", http.MethodPost, base+"/training/start", "multipart/form-data; boundary=x", bytes.NewReader(make([]byte, 8<<20)))
	wantUnauthorized(t, "upload without a token", resp, b, false)

	// GET /health: open without -auth-health, with any role or none.
	for _, token := range []string{"", tok.read, newToken(t)} {
		if resp, b := asToken(t, token, http.MethodGet, base+"/health", "", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /health without -auth-health, token %v: %d %s", token != "", resp.StatusCode, b)
		}
	}
	// With -auth-health: a token is needed, any role.
	guarded, gtok := authServer(t, true)
	gbase := "http://" + guarded.HTTPAddr()
	resp, b = asToken(t, "", http.MethodGet, gbase+"/health", "", nil)
	wantUnauthorized(t, "GET /health with -auth-health", resp, b, false)
	if resp, b := asToken(t, gtok.read, http.MethodGet, gbase+"/health", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health with -auth-health and the read token: %d %s", resp.StatusCode, b)
	}
}

// TestAuthCORSPreflight: a browser's preflight carries no token; it is
// answered without one, and the request that follows needs the token.
func TestAuthCORSPreflight(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "tokens")
	token := newToken(t)
	writeTokens(t, tokFile, tokenLine("operate", token, "console"))
	const origin = "https://console.plant.example"
	proc := extraServer(t, app.Config{Auth: server.AuthConfig{TokensFile: tokFile}, HTTP: server.HTTPConfig{CORSOrigins: []string{origin}}})
	base := "http://" + proc.HTTPAddr()
	req, _ := http.NewRequest(http.MethodOptions, base+"/model/load", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "authorization") {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	r, b := asToken(t, "", http.MethodGet, base+"/model/list", "", nil)
	wantUnauthorized(t, "after the preflight, without a token", r, b, false)
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		// No Origin sent on this one: no CORS header either way.
		t.Errorf("CORS header without Origin")
	}
}

// TestAuthTokenRotationBySIGHUP: against a real process, a token works;
// the file is rewritten with a new token and SIGHUP sent; the new token
// works and the old one gets 401, without a restart. A file that does
// not parse is refused on SIGHUP and the tokens in force stay.
func TestAuthTokenRotationBySIGHUP(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	old, rotated := newToken(t), newToken(t)
	writeTokens(t, file, tokenLine("operate", old, "console"))
	p := startProcess(t, filepath.Join(dir, "registry"), "-auth-tokens", file)
	base := "http://" + p.httpAddr
	pid := p.cmd.Process.Pid
	list := func(token string) (*http.Response, []byte) {
		return asToken(t, token, http.MethodGet, base+"/model/list", "", nil)
	}
	if resp, b := list(old); resp.StatusCode != http.StatusOK {
		t.Fatalf("old token before the rotation: %d %s", resp.StatusCode, b)
	}
	writeTokens(t, file, tokenLine("operate", rotated, "console"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLogMsg(t, "SIGHUP: reloaded", 1)
	if resp, b := list(rotated); resp.StatusCode != http.StatusOK {
		t.Fatalf("new token after SIGHUP: %d %s", resp.StatusCode, b)
	}
	resp, b := list(old)
	wantUnauthorized(t, "old token after SIGHUP", resp, b, true)

	// A broken file: refused whole, the rotated token stays in force.
	writeTokens(t, file, tokenLine("operate", newToken(t), "console"), "admin "+strings.Repeat("0", 64)+" root\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	failed := p.waitLogMsg(t, "SIGHUP: reload failed; what failed keeps its previous value, the rest took effect", 1)
	if msg := fmt.Sprint(failed[0]["err"]); !strings.Contains(msg, "line 3") || !strings.Contains(msg, "unknown role") {
		t.Errorf("reload error %q does not name the line", msg)
	}
	if resp, b := list(rotated); resp.StatusCode != http.StatusOK {
		t.Fatalf("rotated token after a refused reload: %d %s", resp.StatusCode, b)
	}
	if p.cmd.Process.Pid != pid || p.cmd.ProcessState != nil {
		t.Fatal("the process was restarted")
	}
	// No token ever reaches the log; the access log names the token.
	named := false
	for _, line := range p.logLines() {
		if strings.Contains(line, old) || strings.Contains(line, rotated) {
			t.Fatalf("a token in the log: %s", line)
		}
		named = named || strings.Contains(line, `"authenticated_as":"console"`)
	}
	if !named {
		t.Error("no access-log line names the token")
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// TestAuthStartRefusesBadTokensFile: a tokens file that does not parse
// stops the start, and the error names the line.
func TestAuthStartRefusesBadTokensFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, tokenLine("read", newToken(t), "a"), "read not-a-hash b\n")
	_, err := app.Start(context.Background(), app.Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: t.TempDir(), Auth: server.AuthConfig{TokensFile: file}})
	if err == nil || !strings.Contains(err.Error(), "line 3") || strings.Contains(err.Error(), "not-a-hash") {
		t.Fatalf("start with a bad tokens file: %v", err)
	}
}
