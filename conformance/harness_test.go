// Package conformance exercises both channels of a ramanserve server
// against the contract in api/.
//
// By default `go test ./conformance` starts an in-process server on free
// loopback ports with a temporary registry. With CONFORMANCE_HTTP (and
// CONFORMANCE_ZMQ for the prediction channel) it targets a running server
// instead; tests that need to control the server process or its files are
// skipped then. Every HTTP response is validated against api/openapi.yaml
// with kin-openapi, undocumented status codes included; the run ends by
// printing how many responses were validated and how many failed.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"ramanserve/app"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/registry"
)

// target is the server under test.
type target struct {
	httpBase string
	zmq      string
	proc     *app.App // nil for an external server
	regDir   string   // "" for an external server

	slowLoads atomic.Int64 // nanoseconds each model open waits (in-process only)
}

var (
	suite     *target
	validated atomic.Int64
	failed    atomic.Int64
	// failedByPrism counts the responses Prism found in violation, with
	// RAMANSERVE_TEST_PRISM_SUITE (prism_test.go).
	failedByPrism atomic.Int64
	spec          *openapi3.T
	router        routers.Router
)

func TestMain(m *testing.M) {
	code, err := runSuite(m)
	removeServerBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
	fmt.Printf("conformance: %d responses validated against api/openapi.yaml, %d failed\n", validated.Load(), failed.Load())
	if failed.Load() > 0 && code == 0 {
		code = 1
	}
	os.Exit(code)
}

func runSuite(m *testing.M) (int, error) {
	var err error
	spec, err = gen.GetSwagger()
	if err != nil {
		return 0, err
	}
	spec.Servers = nil
	if router, err = gorillamux.NewRouter(spec); err != nil {
		return 0, err
	}
	if base := os.Getenv("CONFORMANCE_HTTP"); base != "" {
		suite = &target{httpBase: strings.TrimRight(base, "/"), zmq: os.Getenv("CONFORMANCE_ZMQ")}
		return m.Run(), nil
	}
	dir, err := os.MkdirTemp("", "conformance-registry-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	suite = &target{regDir: dir}
	proc, err := app.Start(context.Background(), app.Config{
		HTTPAddr:    "127.0.0.1:0",
		ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: dir,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		WrapOpen:    suite.wrapOpen,
	})
	if err != nil {
		return 0, err
	}
	suite.proc = proc
	suite.httpBase = "http://" + proc.HTTPAddr()
	suite.zmq = proc.ZMQEndpoint()
	if prism := os.Getenv("RAMANSERVE_TEST_PRISM_SUITE"); prism != "" {
		base, stop, err := runPrism(prism, suite.httpBase)
		if err != nil {
			return 0, err
		}
		defer stop()
		suite.httpBase = base
		defer func() {
			fmt.Printf("prism: %d responses through prism proxy, %d response violations; %d requests it found invalid (the suite sends those on purpose)\n",
				prismSuite.responses.Load(), failedByPrism.Load(), prismSuite.requestViolations.Load())
		}()
	}
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return code, proc.Shutdown(ctx)
}

// wrapOpen makes model opens wait while slowLoads is set, so the test of
// concurrent loads has a load that is reliably in progress.
func (tg *target) wrapOpen(open registry.OpenFunc) registry.OpenFunc {
	return func(ctx context.Context, content *io.SectionReader, e registry.Entry) (inference.Model, error) {
		if d := time.Duration(tg.slowLoads.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return open(ctx, content, e)
	}
}

// emptyServer starts a second in-process server with an empty registry,
// for tests of the no-model answers once the suite's server has models.
// It returns the HTTP base address and the prediction endpoint.
func emptyServer(t *testing.T) (httpBase, zmqEndpoint string) {
	t.Helper()
	proc := extraServer(t, app.Config{})
	return "http://" + proc.HTTPAddr(), proc.ZMQEndpoint()
}

// extraServer starts an in-process server of the test's own, with cfg on
// free loopback ports and an empty temporary registry, and stops it when
// the test ends.
func extraServer(t *testing.T, cfg app.Config) *app.App {
	t.Helper()
	cfg.HTTPAddr, cfg.ZMQEndpoint, cfg.RegistryDir = "127.0.0.1:0", "tcp://127.0.0.1:0", t.TempDir()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	proc, err := app.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		proc.Shutdown(ctx)
	})
	return proc
}

// longProcessTest skips, in the inner loop (-short: make test-quick), a
// test whose point is a whole process under load, a tracer or a large
// training set; make test runs it in full. These few hold more than half
// of the suite's time under -short.
func longProcessTest(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: a long process test; make test runs it")
	}
}

// needInProcess skips tests that control the server's files or process.
func needInProcess(t *testing.T) {
	t.Helper()
	if suite.proc == nil {
		t.Skip("needs the in-process server (CONFORMANCE_HTTP is set)")
	}
}

func httpClient() *http.Client { return &http.Client{Timeout: 60 * time.Second} }

// replyTimeout is how long a test waits for a prediction channel reply it
// expects. A healthy server answers in milliseconds; the bound only stops
// a hung test, and is generous for -race on a machine busy with other
// test binaries.
const replyTimeout = time.Minute

// validatingDoer sends a request and validates its response against the
// contract. An invalid or undocumented response fails the call.
type validatingDoer struct{ client *http.Client }

func (d validatingDoer) Do(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if v, err := prismResponseViolations(req, resp.Header); err != nil || len(v) > 0 {
		failed.Add(1)
		failedByPrism.Add(1)
		return nil, fmt.Errorf("Prism finds the response to %s %s in violation of the contract: %v %+v\nbody: %s", req.Method, req.URL.Path, err, v, body)
	}
	if err := validateResponse(req, reqBody, resp, body); err != nil {
		failed.Add(1)
		return nil, fmt.Errorf("response to %s %s violates the contract: %w\nbody: %s", req.Method, req.URL.Path, err, body)
	}
	validated.Add(1)
	return resp, nil
}

func validateResponse(req *http.Request, reqBody []byte, resp *http.Response, body []byte) error {
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(vreq)
	if err != nil {
		// No route (404) or no such method (405), or, with -auth-tokens,
		// 401 (checked before routing): the body must still be the
		// ErrorResponse envelope.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("status %d for a request that matches no route", resp.StatusCode)
		}
		return validateErrorEnvelope(resp, body)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	if resp.StatusCode == http.StatusAccepted {
		// Every 202 names the job it accepted in Location, as status_url.
		var acc struct {
			StatusURL string `json:"status_url"`
		}
		if err := json.Unmarshal(body, &acc); err != nil {
			return fmt.Errorf("202 body: %w", err)
		}
		if loc := resp.Header.Get("Location"); loc == "" || loc != acc.StatusURL {
			return fmt.Errorf("202 with Location %q, want its status_url %q", loc, acc.StatusURL)
		}
	}
	if resp.StatusCode >= 400 {
		return validateErrorEnvelope(resp, body)
	}
	return nil
}

func validateErrorEnvelope(resp *http.Response, body []byte) error {
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error response has content type %q", ct)
	}
	schema := spec.Components.Schemas["ErrorResponse"].Value
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	if err := schema.VisitJSON(v); err != nil {
		return fmt.Errorf("error body is not an ErrorResponse: %w", err)
	}
	return nil
}

var (
	clientOnce sync.Once
	apiClient  *gen.ClientWithResponses
)

// api is the generated client, validating every response.
func api(t *testing.T) *gen.ClientWithResponses {
	t.Helper()
	clientOnce.Do(func() { apiClient = apiAt(t, suite.httpBase) })
	return apiClient
}

// apiAt is the generated client for the server at base, validating every
// response.
func apiAt(t *testing.T, base string) *gen.ClientWithResponses {
	t.Helper()
	c, err := gen.NewClientWithResponses(base, gen.WithHTTPClient(validatingDoer{client: httpClient()}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// raw sends a hand-made request (for cases the generated client cannot
// express) through the validating doer.
func raw(t *testing.T, method, path, contentType string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, suite.httpBase+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := validatingDoer{client: httpClient()}.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// errorCode decodes an ErrorResponse body.
func errorCode(t *testing.T, body []byte) gen.ErrorResponse {
	t.Helper()
	var e gen.ErrorResponse
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not an ErrorResponse: %v: %s", err, body)
	}
	return e
}

// must turns a (value, error) pair into the value, failing the test on
// error: must(call())(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
