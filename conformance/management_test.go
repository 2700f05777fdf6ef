package conformance

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ramanserve/gen"
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
	if suite.app != nil && h.Status != "ok" {
		t.Errorf("in-process server status = %s (%v), want ok", h.Status, h.DegradedReasons)
	}
}

func TestHealthDegradedWhenRegistryNotWritable(t *testing.T) {
	needInProcess(t)
	// Move the registry directory away: the write probe then fails, as it
	// would on a full or read-only disk (root ignores permission bits).
	dir := suite.app.Registry.Dir()
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
	}{
		{"unknown route", "GET", "/no/such/route", "", nil, 404, "NOT_FOUND", "route"},
		{"wrong method", "DELETE", "/health", "", nil, 405, "METHOD_NOT_ALLOWED", "method"},
		{"wrong method on load", "GET", "/model/load", "", nil, 405, "METHOD_NOT_ALLOWED", "method"},
		{"body too large", "POST", "/model/load", "application/json", big, 413, "PAYLOAD_TOO_LARGE", "limit"},
		{"malformed JSON", "POST", "/model/load", "application/json", []byte(`{"version":`), 400, "MALFORMED_JSON", "JSON"},
		{"wrong type names field", "POST", "/model/load", "application/json", []byte(`{"version":12}`), 400, "INVALID_REQUEST", "version"},
		{"missing field names it", "POST", "/model/load", "application/json", []byte(`{"source":"staged"}`), 400, "INVALID_REQUEST", "version"},
		{"bad enum names field", "POST", "/model/load", "application/json", []byte(`{"version":"a","source":"disk"}`), 400, "INVALID_REQUEST", "source"},
		{"unknown property", "POST", "/model/load", "application/json", []byte(`{"version":"a","colour":"red"}`), 400, "INVALID_REQUEST", "colour"},
		{"bad version pattern", "POST", "/model/load", "application/json", []byte(`{"version":"../etc"}`), 400, "INVALID_REQUEST", "version"},
		{"file without path", "POST", "/model/load", "application/json", []byte(`{"version":"a","source":"file"}`), 400, "INVALID_REQUEST", "path"},
		{"wrong content type", "POST", "/model/load", "text/plain", []byte(`{"version":"a"}`), 415, "UNSUPPORTED_MEDIA_TYPE", "json"},
		{"unknown version", "POST", "/model/load", "application/json", []byte(`{"version":"never-trained"}`), 400, "MODEL_NOT_FOUND", "never-trained"},
		{"unknown job", "GET", "/training/no-such-job", "", nil, 404, "JOB_NOT_FOUND", "no-such-job"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := raw(t, tc.method, tc.path, tc.ctype, bytes.NewReader(tc.body))
			e := errorCode(t, body)
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
	if suite.app != nil {
		base, _ := emptyServer(t)
		c = apiAt(t, base)
	} else if h := must(c.GetHealthWithResponse(context.Background()))(t); h.JSON200.ModelLoaded != nil && *h.JSON200.ModelLoaded {
		t.Skip("the external server has a model loaded")
	}
	res := must(c.GetModelInfoWithResponse(context.Background()))(t)
	if res.StatusCode() != 404 || res.JSON404 == nil || res.JSON404.Code != "MODEL_NOT_LOADED" {
		t.Fatalf("status %d body %s", res.StatusCode(), res.Body)
	}
	list := must(c.ListModelsWithResponse(context.Background()))(t)
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
			res := must(api(t).LoadModelWithResponse(context.Background(), gen.LoadModelJSONRequestBody{Version: "escape-try", Source: &src, Path: &tc.path}))(t)
			if res.StatusCode() != 400 || res.JSON400 == nil || res.JSON400.Code != tc.code {
				t.Fatalf("got %d %s", res.StatusCode(), res.Body)
			}
		})
	}
	// Nothing was copied into the registry.
	list := must(api(t).ListModelsWithResponse(context.Background()))(t)
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
			before := must(api(t).ListModelsWithResponse(context.Background()))(t).JSON200
			res := must(api(t).LoadModelWithResponse(context.Background(), gen.LoadModelJSONRequestBody{Version: version, Source: &src, Path: &p}))(t)
			if res.StatusCode() != 400 || res.JSON400.Code != tc.code || res.JSON400.Message == "" {
				t.Fatalf("got %d %s, want 400 %s", res.StatusCode(), res.Body, tc.code)
			}
			after := must(api(t).ListModelsWithResponse(context.Background()))(t).JSON200
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
