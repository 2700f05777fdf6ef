package conformance

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/gen"
	"ramanserve/server"
)

func TestHealth(t *testing.T) {
	res := must(api(t).GetHealthWithResponse(context.Background()))(t)
	if res.StatusCode() != 200 || res.JSON200 == nil {
		t.Fatalf("status %d", res.StatusCode())
	}
	h := res.JSON200
	if h.ProtocolVersion == nil || *h.ProtocolVersion != 1 {
		t.Errorf("protocol_version = %v, want 1", h.ProtocolVersion)
	}
	if h.PythonVersion == nil || !strings.HasPrefix(*h.PythonVersion, "go1.") {
		t.Errorf("python_version = %v, want the Go runtime version", h.PythonVersion)
	}
	if h.ServerVersion == nil || *h.ServerVersion == "" {
		t.Errorf("server_version missing")
	}
	if suite.proc != nil && h.Status != "ok" {
		t.Errorf("in-process server status = %s (%v), want ok", h.Status, h.DegradedReasons)
	}
}

func TestHealthDegradedWhenRegistryNotWritable(t *testing.T) {
	needInProcess(t)
	// Move the registry directory away: the write probe then fails, as it
	// would on a full or read-only disk (root ignores permission bits).
	dir := suite.proc.Registry.Dir()
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	res, err := api(t).GetHealthWithResponse(context.Background())
	if rerr := os.Rename(moved, dir); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != 200 || res.JSON200.Status != "degraded" || res.JSON200.DegradedReasons == nil {
		t.Fatalf("health = %d %+v, want 200 degraded with reasons", res.StatusCode(), res.JSON200)
	}
	res = must(api(t).GetHealthWithResponse(context.Background()))(t)
	if res.JSON200.Status != "ok" {
		t.Fatalf("health after restoring the registry = %s", res.JSON200.Status)
	}
}

func TestErrorEnvelopeOnEveryFailure(t *testing.T) {
	big := bytes.Repeat([]byte(" "), 2<<20)
	cases := []struct {
		name, method, path, ctype string
		body                      []byte
		status                    int
		code                      string
		msgContains               string
		chunked                   bool // send without a Content-Length
	}{
		{"unknown route", "GET", "/no/such/route", "", nil, 404, "NOT_FOUND", "route", false},
		{"wrong method", "DELETE", "/health", "", nil, 405, "METHOD_NOT_ALLOWED", "method", false},
		{"wrong method on load", "GET", "/model/load", "", nil, 405, "METHOD_NOT_ALLOWED", "method", false},
		{"body too large", "POST", "/model/load", "application/json", big, 413, "PAYLOAD_TOO_LARGE", "limit", false},
		{"malformed JSON", "POST", "/model/load", "application/json", []byte(`{"version":`), 400, "MALFORMED_JSON", "JSON", false},
		{"wrong type names field", "POST", "/model/load", "application/json", []byte(`{"version":12}`), 400, "INVALID_REQUEST", "version", false},
		{"missing field names it", "POST", "/model/load", "application/json", []byte(`{"source":"staged"}`), 400, "INVALID_REQUEST", "version", false},
		{"bad enum names field", "POST", "/model/load", "application/json", []byte(`{"version":"a","source":"disk"}`), 400, "INVALID_REQUEST", "source", false},
		{"unknown property", "POST", "/model/load", "application/json", []byte(`{"version":"a","colour":"red"}`), 400, "INVALID_REQUEST", "colour", false},
		{"bad version pattern", "POST", "/model/load", "application/json", []byte(`{"version":"../etc"}`), 400, "INVALID_REQUEST", "version", false},
		{"file without path", "POST", "/model/load", "application/json", []byte(`{"version":"a","source":"file"}`), 400, "INVALID_REQUEST", "path", false},
		{"wrong content type", "POST", "/model/load", "text/plain", []byte(`{"version":"a"}`), 415, "UNSUPPORTED_MEDIA_TYPE", "json", false},
		{"unknown version", "POST", "/model/load", "application/json", []byte(`{"version":"never-trained"}`), 400, "MODEL_NOT_FOUND", "never-trained", false},
		{"unknown job", "GET", "/training/no-such-job", "", nil, 404, "JOB_NOT_FOUND", "no-such-job", false},
		{"unknown prediction", "GET", "/predictions/0192f0c4-5f1e-7000-8000-000000000000", "", nil, 404, "PREDICTION_NOT_FOUND", "0192f0c4-5f1e-7000-8000-000000000000", false},
		{"malformed prediction id", "GET", "/predictions/no-such-id", "", nil, 400, "INVALID_REQUEST", "predictionId", false},
		{"chunked body too large", "POST", "/model/load", "application/json", big, 413, "PAYLOAD_TOO_LARGE", "limit", true},
		{"data after the JSON value", "POST", "/model/load", "application/json", []byte(`{"version":"never-trained"} ]]] not json`), 400, "MALFORMED_JSON", "after the JSON value", false},
		{"a second JSON value", "POST", "/model/load", "application/json", []byte(`{"version":"never-trained"}{"version":"x"}`), 400, "MALFORMED_JSON", "after the JSON value", false},
		{"media type in upper case is JSON", "POST", "/model/load", "APPLICATION/JSON; charset=utf-8", []byte(`{"version":"never-trained"}`), 400, "MODEL_NOT_FOUND", "never-trained", false},
		{"null source names the field", "POST", "/model/load", "application/json", []byte(`{"version":"a","source":null}`), 400, "INVALID_REQUEST", "source", false},
		{"unrepresentable number names the field", "POST", "/model/load", "application/json", []byte(`{"version":"a","path":1` + strings.Repeat("0", 400) + `}`), 400, "INVALID_REQUEST", `"path": value is not a valid string`, false},
		{"over-long job id names the parameter", "GET", "/training/" + strings.Repeat("j", 129), "", nil, 400, "INVALID_REQUEST", `parameter "jobId"`, false},
		{"non-integer limit names the parameter", "GET", "/training?limit=abc", "", nil, 400, "INVALID_REQUEST", `parameter "limit"`, false},
		{"repeated limit names the parameter", "GET", "/training?limit=1&limit=2", "", nil, 400, "INVALID_REQUEST", "parameter limit", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length: chunked encoding
			}
			resp, respBody := raw(t, tc.method, tc.path, tc.ctype, body)
			e := errorCode(t, respBody)
			if resp.StatusCode != tc.status || e.Code != tc.code {
				t.Fatalf("got %d %s (%s), want %d %s", resp.StatusCode, e.Code, e.Message, tc.status, tc.code)
			}
			if !strings.Contains(strings.ToLower(e.Message), strings.ToLower(tc.msgContains)) {
				t.Errorf("message %q does not mention %q", e.Message, tc.msgContains)
			}
			if e.Retryable == nil || *e.Retryable {
				t.Errorf("retryable = %v, want false", e.Retryable)
			}
		})
	}
}

// TestModelInfoWithoutModel: with no active model, GET /model/info is 404
// MODEL_NOT_LOADED, GET /model/list names no active model, and health is
// ok with model_loaded false.
func TestModelInfoWithoutModel(t *testing.T) {
	c := api(t)
	if suite.proc != nil {
		base, _ := emptyServer(t)
		c = apiAt(t, base)
	} else if h := must(c.GetHealthWithResponse(context.Background()))(t); h.JSON200.ModelLoaded != nil && *h.JSON200.ModelLoaded {
		t.Skip("the external server has a model loaded")
	}
	res := must(c.GetModelInfoWithResponse(context.Background(), nil))(t)
	if res.StatusCode() != 404 || res.JSON404 == nil || res.JSON404.Code != "MODEL_NOT_LOADED" {
		t.Fatalf("status %d body %s", res.StatusCode(), res.Body)
	}
	list := must(c.ListModelsWithResponse(context.Background(), nil))(t)
	if list.StatusCode() != 200 || list.JSON200.Active != nil || len(list.JSON200.Models) != 0 {
		t.Errorf("model list without a model: %d %s", list.StatusCode(), list.Body)
	}
	h := must(c.GetHealthWithResponse(context.Background()))(t)
	if h.StatusCode() != 200 || h.JSON200.Status != gen.Ok || h.JSON200.ModelLoaded == nil || *h.JSON200.ModelLoaded || h.JSON200.ActiveVersion != nil {
		t.Errorf("health without a model: %d %s", h.StatusCode(), h.Body)
	}
}

func TestFileLoadPathRules(t *testing.T) {
	needInProcess(t)
	importDir := filepath.Join(suite.regDir, "import")
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.joblib")
	os.WriteFile(secret, []byte("not a model"), 0o644)
	os.Symlink(secret, filepath.Join(importDir, "escape.joblib"))
	os.WriteFile(filepath.Join(importDir, "notes.txt"), []byte("x"), 0o644)
	cases := []struct{ name, path, code string }{
		{"dot-dot", importDir + "/../../" + filepath.Base(outside) + "/secret.joblib", "PATH_NOT_ALLOWED"},
		{"symlink out of root", filepath.Join(importDir, "escape.joblib"), "PATH_NOT_ALLOWED"},
		{"relative path", "import/x.joblib", "PATH_NOT_ALLOWED"},
		{"not a .joblib", filepath.Join(importDir, "notes.txt"), "PATH_NOT_ALLOWED"},
		{"outside every root", secret, "PATH_NOT_ALLOWED"},
		{"missing file", filepath.Join(importDir, "missing.joblib"), "MODEL_NOT_FOUND"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := gen.LoadModelRequestSource("file")
			res := must(api(t).LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: "escape-try", Source: &src, Path: &tc.path}))(t)
			if res.StatusCode() != 400 || res.JSON400 == nil || res.JSON400.Code != tc.code {
				t.Fatalf("got %d %s", res.StatusCode(), res.Body)
			}
		})
	}
	// Nothing was copied into the registry.
	list := must(api(t).ListModelsWithResponse(context.Background(), nil))(t)
	for _, m := range list.JSON200.Models {
		if m.Version == "escape-try" {
			t.Fatalf("a refused file entered the registry")
		}
	}
}

// TestCorruptFilesAreRefused: a corrupted file, a truncated model, and a
// wrong path each fail the load with their code, and the previous model
// stays active and keeps serving predictions with the same numbers.
func TestCorruptFilesAreRefused(t *testing.T) {
	needInProcess(t)
	active, _ := twoModels(t)
	importDir := filepath.Join(suite.regDir, "import")
	real, err := os.ReadFile(filepath.Join(sklearnFixtures, "realistic_2048.joblib"))
	if err != nil {
		t.Fatal(err)
	}
	wn, in := testSpectrum()
	zc := dialZMQ(t, suite.zmq)
	_, want := predictOnce(t, zc, wn, in)
	cases := []struct {
		name, content string
		path          string // "" writes content to a new file under import/
		code          string
	}{
		{"garbage", "this is not a pickle", "", "MODEL_CORRUPTED"},
		{"empty", "", "", "MODEL_CORRUPTED"},
		{"truncated zlib", "\x78\x9c\x01\x02", "", "MODEL_CORRUPTED"},
		{"truncated model", string(real[:len(real)/2]), "", "MODEL_CORRUPTED"},
		{"wrong path", "", filepath.Join(importDir, "no-such-model.joblib"), "MODEL_NOT_FOUND"},
		{"path outside the roots", "", "/etc/passwd.joblib", "PATH_NOT_ALLOWED"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			version := "corrupt-" + string(rune('a'+i))
			p := tc.path
			if p == "" {
				p = filepath.Join(importDir, version+".joblib")
				os.WriteFile(p, []byte(tc.content), 0o644)
			}
			src := gen.LoadModelRequestSource("file")
			before := must(api(t).ListModelsWithResponse(context.Background(), nil))(t).JSON200
			res := must(api(t).LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: version, Source: &src, Path: &p}))(t)
			if res.StatusCode() != 400 || res.JSON400.Code != tc.code || res.JSON400.Message == "" {
				t.Fatalf("got %d %s, want 400 %s", res.StatusCode(), res.Body, tc.code)
			}
			after := must(api(t).ListModelsWithResponse(context.Background(), nil))(t).JSON200
			if len(after.Models) != len(before.Models) || after.Active == nil || *after.Active != active {
				t.Fatalf("registry changed after a failed load: before %+v after %+v", before, after)
			}
			_, got := predictOnce(t, zc, wn, in)
			if got.ModelVersion != active || got.Concentrations != want.Concentrations {
				t.Fatalf("after the failed load: served by %s with %v, want %s with %v", got.ModelVersion, got.Concentrations, active, want.Concentrations)
			}
		})
	}
}

func TestHTTPNotAnHTMLBody(t *testing.T) {
	resp, body := raw(t, http.MethodGet, "/", "", nil)
	if resp.StatusCode != 404 || bytes.Contains(body, []byte("<html")) {
		t.Fatalf("GET / = %d %s", resp.StatusCode, body)
	}
}

// TestStalledBodyIsCutOff: a client that sends its headers and part of its
// body and then stalls gets 408 REQUEST_TIMEOUT once the body has been idle
// for the server's limit, on a JSON route and on the upload, and health is
// answered meanwhile.
func TestStalledBodyIsCutOff(t *testing.T) {
	needInProcess(t)
	proc := extraServer(t, app.Config{HTTP: server.HTTPConfig{BodyIdleTimeout: 300 * time.Millisecond}})
	stalled := []struct{ name, head, part string }{
		{"json", "POST /model/load HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", `{"vers`},
		{"upload", "POST /training/start HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n",
			"--b\r\nContent-Disposition: form-data; name=\"csv\"; filename=\"t.csv\"\r\n\r\nscan_id,wn_0"},
	}
	for _, tc := range stalled {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", proc.HTTPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.head+tc.part); err != nil {
				t.Fatal(err)
			}
			h := must(apiAt(t, "http://"+proc.HTTPAddr()).GetHealthWithResponse(context.Background()))(t)
			if h.StatusCode() != 200 {
				t.Fatalf("health while a body stalls: %d", h.StatusCode())
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to the stalled request: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if err := validateErrorEnvelope(resp, body); err != nil {
				failed.Add(1)
				t.Fatal(err)
			}
			validated.Add(1)
			if e := errorCode(t, body); resp.StatusCode != http.StatusRequestTimeout || e.Code != "REQUEST_TIMEOUT" {
				t.Fatalf("got %d %s %q, want 408 REQUEST_TIMEOUT", resp.StatusCode, e.Code, e.Message)
			}
		})
	}
}
