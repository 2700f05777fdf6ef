package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOpenAPIDocumentsServed: GET /openapi.yaml is api/openapi.yaml byte
// for byte and GET /openapi.json its JSON rendering, both validated
// against the contract and both with an X-Request-Id.
func TestOpenAPIDocumentsServed(t *testing.T) {
	want, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := api(t)
	y := must(c.GetOpenAPIYAMLWithResponse(context.Background()))(t)
	if y.StatusCode() != 200 || !strings.HasPrefix(y.HTTPResponse.Header.Get("Content-Type"), "application/yaml") ||
		y.HTTPResponse.Header.Get("X-Request-Id") == "" {
		t.Fatalf("/openapi.yaml: %d %q id %q", y.StatusCode(), y.HTTPResponse.Header.Get("Content-Type"), y.HTTPResponse.Header.Get("X-Request-Id"))
	}
	if suite.proc != nil && !bytes.Equal(y.Body, want) { // an external server may run another build
		t.Fatalf("/openapi.yaml (%d bytes) is not api/openapi.yaml (%d bytes)", len(y.Body), len(want))
	}
	j := must(c.GetOpenAPIJSONWithResponse(context.Background()))(t)
	if j.StatusCode() != 200 || j.JSON200 == nil || (*j.JSON200)["openapi"] == nil || (*j.JSON200)["paths"] == nil {
		t.Fatalf("/openapi.json: %d %.200s", j.StatusCode(), j.Body)
	}
}

// TestWebConventionsOnARealProcess runs ramanserve with -cors-origin and
// checks, over real TCP: a preflight from the listed origin gets 204 with
// Access-Control-Allow-Origin; one from an unlisted origin gets no CORS
// header; actual responses (validated against the contract) carry
// Access-Control-Allow-Origin for the listed origin only, and every one
// carries the request's X-Request-Id.
func TestWebConventionsOnARealProcess(t *testing.T) {
	const listed, unlisted = "http://console.plant.example:3000", "http://elsewhere.example"
	p := startProcess(t, t.TempDir(), "-cors-origin", listed, "-cors-origin", "https://second.plant.example")
	base := "http://" + p.httpAddr
	plain := &http.Client{Timeout: 10 * time.Second}

	for _, origin := range []string{listed, unlisted} {
		req, _ := http.NewRequest(http.MethodOptions, base+"/model/load", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		acao := resp.Header.Get("Access-Control-Allow-Origin")
		t.Logf("preflight OPTIONS /model/load from %s: %d, Access-Control-Allow-Origin: %q, Access-Control-Allow-Methods: %q, X-Request-Id: %q",
			origin, resp.StatusCode, acao, resp.Header.Get("Access-Control-Allow-Methods"), resp.Header.Get("X-Request-Id"))
		switch {
		case origin == listed && (resp.StatusCode != 204 || acao != listed || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST")):
			t.Errorf("preflight from the listed origin: %d, Access-Control-Allow-Origin %q", resp.StatusCode, acao)
		case origin == unlisted && hasCORSHeader(resp.Header):
			t.Errorf("preflight from an unlisted origin got CORS headers: %v", resp.Header)
		case resp.Header.Get("X-Request-Id") == "":
			t.Errorf("preflight without X-Request-Id")
		}
	}

	c := p.client(t)
	for _, origin := range []string{listed, unlisted} {
		id := "conf-" + strings.TrimPrefix(origin, "http://")
		id = strings.NewReplacer("/", "", ":", "-").Replace(id)
		withHeaders := func(ctx context.Context, req *http.Request) error {
			req.Header.Set("Origin", origin)
			req.Header.Set("X-Request-Id", id)
			return nil
		}
		var responses []*http.Response
		h := must(c.GetHealthWithResponse(context.Background(), withHeaders))(t)
		responses = append(responses, h.HTTPResponse)
		y := must(c.GetOpenAPIYAMLWithResponse(context.Background(), withHeaders))(t)
		responses = append(responses, y.HTTPResponse)
		j := must(c.GetOpenAPIJSONWithResponse(context.Background(), withHeaders))(t)
		responses = append(responses, j.HTTPResponse)
		m := must(c.GetModelInfoWithResponse(context.Background(), nil, withHeaders))(t) // 503 NO_MODEL_LOADED: an error
		responses = append(responses, m.HTTPResponse)
		if m.StatusCode() < 400 {
			t.Fatalf("model info on an empty registry: %d", m.StatusCode())
		}
		for _, resp := range responses {
			what := resp.Request.Method + " " + resp.Request.URL.Path
			if got := resp.Header.Get("X-Request-Id"); got != id {
				t.Errorf("%s: X-Request-Id %q, want %q", what, got, id)
			}
			if origin == listed && (resp.Header.Get("Access-Control-Allow-Origin") != listed || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id")) {
				t.Errorf("%s (%d) from the listed origin: %v", what, resp.StatusCode, resp.Header)
			}
			if origin == unlisted && hasCORSHeader(resp.Header) {
				t.Errorf("%s (%d) from an unlisted origin got CORS headers: %v", what, resp.StatusCode, resp.Header)
			}
		}
	}
	var doc map[string]any
	resp, err := plain.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || doc["openapi"] == nil {
		t.Fatalf("/openapi.json from the process: %v", err)
	}
	if err := p.terminate(t); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

func hasCORSHeader(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			return true
		}
	}
	return false
}

// TestBadCORSOriginRefusedAtStart: ramanserve with -cors-origin "*" or a
// value that is not an origin exits 1 before binding anything, saying why.
func TestBadCORSOriginRefusedAtStart(t *testing.T) {
	for value, why := range map[string]string{"*": `"*" is not accepted`, "https://console.example/": "has a path", "console:3000": "no scheme"} {
		cmd := exec.Command(serverBinary(t), "-http-addr", "127.0.0.1:0", "-zmq-addr", "tcp://127.0.0.1:0", "-registry", t.TempDir(), "-cors-origin", value)
		out, err := cmd.CombinedOutput()
		exit, ok := err.(*exec.ExitError)
		if !ok || exit.ExitCode() != 1 || !strings.Contains(string(out), why) || !strings.Contains(string(out), "-cors-origin") {
			t.Errorf("-cors-origin %q: %v, output %s", value, err, out)
		}
	}
}

// TestHostileRequestIDsAndPathsOnARealProcess: request ids that are too
// long, carry characters outside the safe set or come twice are replaced
// by a generated id, never echoed; the process's access log then has one
// line for the request, under the generated id, and neither an id nor a
// path can add a line or a field of its own.
func TestHostileRequestIDsAndPathsOnARealProcess(t *testing.T) {
	p := startProcess(t, t.TempDir())
	base := "http://" + p.httpAddr
	plain := &http.Client{Timeout: 10 * time.Second}
	generated := regexp.MustCompile(`^[0-9a-f]{16}-[0-9a-z]+$`)
	var answered []string
	for _, ids := range [][]string{
		{strings.Repeat("a", 4096)},
		{`x","msg":"forged","injected":"1`},
		{"one", "two"},
	} {
		req, err := http.NewRequest(http.MethodGet, base+"/health", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header["X-Request-Id"] = ids
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("X-Request-Id")
		if !generated.MatchString(got) {
			t.Errorf("X-Request-Id %q (sent %d bytes) answered %q, want a generated id", ids[0], len(ids[0]), got)
		}
		answered = append(answered, got)
	}
	resp, err := plain.Get(base + `/%0A%7B%22msg%22:%22forged%22%7D`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("injected path: %d, want 404", resp.StatusCode)
	}
	answered = append(answered, resp.Header.Get("X-Request-Id"))

	deadline := time.Now().Add(5 * time.Second)
	for {
		lines := p.logLines()
		perID := map[string]int{}
		forged := false
		for _, l := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("log line is not one JSON object: %q", l)
			}
			if rec["msg"] == "forged" || rec["injected"] != nil || strings.Contains(l, "forged") {
				forged = true
			}
			if rec["msg"] == "request" {
				id, _ := rec["request_id"].(string)
				perID[id]++
			}
		}
		if forged {
			t.Fatalf("a request added to the log:\n%s", strings.Join(lines, "\n"))
		}
		missing := 0
		for _, id := range answered {
			if perID[id] != 1 {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("access log lines per answered id %v: %v", answered, perID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
