package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"ramanserve/gen"
	"ramanserve/server/metrics"
)

const (
	listedOrigin   = "https://console.plant.example:8443"
	unlistedOrigin = "https://evil.example"
)

// logBuffer collects a server's log lines; the server writes them while
// the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the JSON log lines whose msg is msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not one JSON object: %v: %q", err, l)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// accessLine waits for the access-log line of the request with id.
func (b *logBuffer) accessLine(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var found []map[string]any
		for _, l := range b.lines(t, "request") {
			if l["request_id"] == id {
				found = append(found, l)
			}
		}
		if len(found) > 1 {
			t.Fatalf("%d access-log lines for request %s, want 1: %v", len(found), id, found)
		}
		if len(found) == 1 {
			return found[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access-log line for request %s in:\n%s", id, b.buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// webServer serves the whole management handler with cfg on a real
// loopback port behind the connection limit, as Start does, and returns
// its base URL and its log.
func webServer(t *testing.T, cfg HTTPConfig) (string, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	h, err := newHTTPHandler(&API{Training: quietTraining{}}, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := servedBehindLimit(t, 16, h)
	return "http://" + addr, logs
}

// servedBehindLimit serves h (which has the health reserve's gate inside)
// on a loopback listener with max regular slots.
func servedBehindLimit(t *testing.T, max int, h http.Handler) (string, *connLimitListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(ln, max)
	srv := &http.Server{Handler: h, ConnContext: connContext, ConnState: trackState, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: maxHeaderBytes}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), l
}

func send(t *testing.T, method, url string, header http.Header, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// corsHeaders are the response's Access-Control-* headers.
func corsHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = v
		}
	}
	return out
}

func preflight(origin, method string) http.Header {
	return http.Header{
		"Origin":                         {origin},
		"Access-Control-Request-Method":  {method},
		"Access-Control-Request-Headers": {"content-type, x-request-id"},
	}
}

// TestPreflightFromListedOriginGetsAllowOrigin: a
// preflight from a -cors-origin origin gets 204 with
// Access-Control-Allow-Origin naming it, the route's methods, the allowed
// headers and a max age.
func TestPreflightFromListedOriginGetsAllowOrigin(t *testing.T) {
	base, _ := webServer(t, HTTPConfig{CORSOrigins: []string{listedOrigin}})
	resp, body := send(t, http.MethodOptions, base+"/model/load", preflight(listedOrigin, "POST"), nil)
	t.Logf("preflight OPTIONS /model/load from listed origin %s: %d, Access-Control-Allow-Origin: %q, -Methods: %q, -Headers: %q, -Max-Age: %q, Vary: %q",
		listedOrigin, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Methods"),
		resp.Header.Get("Access-Control-Allow-Headers"), resp.Header.Get("Access-Control-Max-Age"), resp.Header.Values("Vary"))
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("preflight: %d %q, want 204 and no body", resp.StatusCode, body)
	}
	if got := h.Get("Access-Control-Allow-Origin"); got != listedOrigin {
		t.Errorf("Access-Control-Allow-Origin %q, want %q", got, listedOrigin)
	}
	if got := h.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "POST") || strings.Contains(got, "GET") {
		t.Errorf("Access-Control-Allow-Methods %q, want /model/load's methods (POST)", got)
	}
	if got := h.Get("Access-Control-Allow-Headers"); !strings.Contains(got, "Content-Type") || !strings.Contains(got, "X-Request-Id") {
		t.Errorf("Access-Control-Allow-Headers %q", got)
	}
	if h.Get("Access-Control-Max-Age") == "" || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") || h.Get("X-Request-Id") == "" {
		t.Errorf("Max-Age %q, Vary %q, X-Request-Id %q", h.Get("Access-Control-Max-Age"), h.Values("Vary"), h.Get("X-Request-Id"))
	}
	// A route with a path parameter and two methods.
	resp, _ = send(t, http.MethodOptions, base+"/model/v7", preflight(listedOrigin, "DELETE"), nil)
	if got := resp.Header.Get("Access-Control-Allow-Methods"); resp.StatusCode != 204 || !strings.Contains(got, "GET") || !strings.Contains(got, "DELETE") {
		t.Errorf("preflight of /model/{version}: %d, methods %q", resp.StatusCode, got)
	}
}

// TestPreflightFromUnlistedOriginGetsNoCORSHeaders: a preflight from an origin not listed gets no
// Access-Control-* header at all, only what OPTIONS gets without CORS
// (204 with Allow); the same with CORS off.
func TestPreflightFromUnlistedOriginGetsNoCORSHeaders(t *testing.T) {
	for _, origins := range [][]string{{listedOrigin}, nil} {
		base, _ := webServer(t, HTTPConfig{CORSOrigins: origins})
		resp, _ := send(t, http.MethodOptions, base+"/model/load", preflight(unlistedOrigin, "POST"), nil)
		t.Logf("preflight OPTIONS /model/load from unlisted origin %s (listed: %q): %d, Access-Control-* headers: %v, Allow: %q",
			unlistedOrigin, origins, resp.StatusCode, corsHeaders(resp.Header), resp.Header.Get("Allow"))
		if c := corsHeaders(resp.Header); len(c) != 0 {
			t.Errorf("unlisted origin got CORS headers %v", c)
		}
		if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Allow"), "POST") {
			t.Errorf("OPTIONS: %d Allow %q, want what OPTIONS gets without CORS (204 with Allow)", resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// TestCORSActualResponses: responses to a listed origin, errors included
// (404, 405, a validation 400), carry Access-Control-Allow-Origin and
// expose X-Request-Id and Retry-After; an unlisted origin, a near-miss of
// a listed one and a request with two Origin headers get none. A preflight
// of a path that does not exist is the 404 envelope.
func TestCORSActualResponses(t *testing.T) {
	base, _ := webServer(t, HTTPConfig{CORSOrigins: []string{listedOrigin, "http://localhost:3000"}})
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/openapi.json", 200},
		{"GET", "/training/job-1", 200},
		{"GET", "/no/such/route", 404},
		{"DELETE", "/openapi.yaml", 405},
		{"POST", "/model/load", 400},
	} {
		var body io.Reader
		if c.method == "POST" {
			body = strings.NewReader(`{"version": 5}`)
		}
		h := http.Header{"Origin": {listedOrigin}, "Content-Type": {"application/json"}}
		resp, b := send(t, c.method, base+c.path, h, body)
		if resp.StatusCode != c.status {
			t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, b, c.status)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != listedOrigin {
			t.Errorf("%s %s (%d) from the listed origin: Access-Control-Allow-Origin %q", c.method, c.path, c.status, got)
		}
		if got := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(got, "X-Request-Id") || !strings.Contains(got, "Retry-After") || !strings.Contains(got, "ETag") || !strings.Contains(got, "Location") {
			t.Errorf("%s %s: Access-Control-Expose-Headers %q", c.method, c.path, got)
		}
		if !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Origin") {
			t.Errorf("%s %s: Vary %q", c.method, c.path, resp.Header.Values("Vary"))
		}
		for _, origin := range [][]string{{unlistedOrigin}, {listedOrigin + "/"}, {"https://console.plant.example:8443.evil.example"},
			{"HTTPS://CONSOLE.PLANT.EXAMPLE:8443"}, {"http://localhost:3001"}, {listedOrigin, listedOrigin}} {
			h := http.Header{"Origin": origin, "Content-Type": {"application/json"}}
			if c.method == "POST" {
				body = strings.NewReader(`{"version": 5}`)
			}
			resp, _ := send(t, c.method, base+c.path, h, body)
			if got := corsHeaders(resp.Header); len(got) != 0 {
				t.Errorf("%s %s from %q: CORS headers %v", c.method, c.path, origin, got)
			}
		}
	}
	resp, b := send(t, http.MethodOptions, base+"/no/such/route", preflight(listedOrigin, "GET"), nil)
	var e gen.ErrorResponse
	if json.Unmarshal(b, &e); resp.StatusCode != 404 || e.Code != "NOT_FOUND" || resp.Header.Get("Access-Control-Allow-Methods") != "" {
		t.Errorf("preflight of no route: %d %s, methods %q", resp.StatusCode, b, resp.Header.Get("Access-Control-Allow-Methods"))
	}
}

// TestPreflightAllowedHeaders: the requested headers are allowed when
// they are well-formed names a page may set; forbidden ones, method
// overrides and malformed ones are left out, and the list is bounded.
func TestPreflightAllowedHeaders(t *testing.T) {
	base, _ := webServer(t, HTTPConfig{CORSOrigins: []string{listedOrigin}})
	h := preflight(listedOrigin, "POST")
	h["Access-Control-Request-Headers"] = []string{"X-Trace, cookie, Sec-Fetch-Mode, x-http-method-override, bad header, proxy-authorization", "accept-language"}
	resp, _ := send(t, http.MethodOptions, base+"/model/load", h, nil)
	got := resp.Header.Get("Access-Control-Allow-Headers")
	if want := "Content-Type, X-Request-Id, x-trace, accept-language"; got != want {
		t.Errorf("Access-Control-Allow-Headers %q, want %q", got, want)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = fmt.Sprintf("x-h%d", i)
	}
	if got := allowedRequestHeaders([]string{strings.Join(many, ",")}); strings.Count(got, ",") != 2+maxExtraAllowedHeaders-1 {
		t.Errorf("100 requested headers allowed as %q", got)
	}
}

// TestRequestIDOnEveryResponse: a sane X-Request-Id comes back as sent;
// a missing, over-long, ill-formed or repeated one is replaced by a fresh
// id, on successes and errors (404, 405, 400, 413 from the body limit,
// 408 from the body deadline) alike, and the ids made are unique.
func TestRequestIDOnEveryResponse(t *testing.T) {
	base, _ := webServer(t, HTTPConfig{MaxJSONBodyBytes: 1024, JSONBodyTimeout: 300 * time.Millisecond})
	routes := []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/openapi.yaml", "", 200},
		{"GET", "/no/such/route", "", 404},
		{"PUT", "/openapi.json", "", 405},
		{"POST", "/model/load", `{"version":5}`, 400},
		{"POST", "/model/load", `{"version":"` + strings.Repeat("v", 2000) + `"}`, 413},
	}
	seen := map[string]bool{}
	for _, r := range routes {
		for _, c := range []struct {
			name string
			ids  []string
			echo bool
		}{
			{"sane", []string{"req-42.a_b:c"}, true},
			{"128 characters", []string{strings.Repeat("a", 128)}, true},
			{"none", nil, false},
			{"129 characters", []string{strings.Repeat("a", 129)}, false},
			{"space", []string{"a b"}, false},
			{"quote", []string{`a"b`}, false},
			{"not ASCII", []string{"é"}, false},
			{"empty", []string{""}, false},
			{"two", []string{"a", "b"}, false},
		} {
			h := http.Header{"Content-Type": {"application/json"}}
			if c.ids != nil {
				h["X-Request-Id"] = c.ids
			}
			var body io.Reader
			if r.body != "" {
				body = strings.NewReader(r.body)
			}
			resp, b := send(t, r.method, base+r.path, h, body)
			if resp.StatusCode != r.status {
				t.Fatalf("%s %s: %d %s, want %d", r.method, r.path, resp.StatusCode, b, r.status)
			}
			got := resp.Header.Values("X-Request-Id")
			switch {
			case len(got) != 1:
				t.Errorf("%s %s, %s id: X-Request-Id %q, want one", r.method, r.path, c.name, got)
			case c.echo && got[0] != c.ids[0]:
				t.Errorf("%s %s, %s id: X-Request-Id %q, want it echoed", r.method, r.path, c.name, got[0])
			case !c.echo && (!saneRequestID(got[0]) || seen[got[0]]):
				t.Errorf("%s %s, %s id: X-Request-Id %q, want a fresh sane one", r.method, r.path, c.name, got[0])
			case !c.echo:
				seen[got[0]] = true
			}
		}
	}

	// 408: a JSON body that does not arrive within its time limit.
	c, rd := dial(t, strings.TrimPrefix(base, "http://"))
	fmt.Fprintf(c, "POST /model/load HTTP/1.1\r\nHost: x\r\nX-Request-Id: slow-1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 408 || resp.Header.Get("X-Request-Id") != "slow-1" {
		t.Errorf("stalled body: %d with X-Request-Id %q, want 408 with slow-1", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
}

// TestRequestIDAndCORSOnTheHealthReserve: with every regular slot
// holding a request, a connection lands in the health reserve; its
// GET /health and its refused request (503 SERVER_BUSY) both carry
// X-Request-Id and, for a listed origin, Access-Control-Allow-Origin,
// and both are on the access log.
func TestRequestIDAndCORSOnTheHealthReserve(t *testing.T) {
	release := make(chan struct{})
	logs := &logBuffer{}
	web, err := newWebLayer(reserveGate(holdHandler(release)), []string{listedOrigin}, metrics.New(metrics.Sources{}).HTTP(), slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr, l := servedBehindLimit(t, 1, web)
	t.Cleanup(func() { close(release) })
	holdRequests(t, addr, 1)
	waitOpen(t, l, 1, 0)
	waitActive(t, l, 1)

	c, r := dial(t, addr)
	for _, q := range []struct {
		method, path string
		status       int
	}{{"GET", "/health", 200}, {"POST", "/model/load", 503}} {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		id := "reserve-" + q.method
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nX-Request-Id: %s\r\nContent-Length: 0\r\n\r\n", q.method, q.path, listedOrigin, id)
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != q.status || resp.Header.Get("X-Request-Id") != id || resp.Header.Get("Access-Control-Allow-Origin") != listedOrigin {
			t.Errorf("%s %s on the reserve: %d, X-Request-Id %q, Access-Control-Allow-Origin %q", q.method, q.path,
				resp.StatusCode, resp.Header.Get("X-Request-Id"), resp.Header.Get("Access-Control-Allow-Origin"))
		}
		if line := logs.accessLine(t, id); line["status"] != float64(q.status) {
			t.Errorf("access line %v", line)
		}
	}
}

// TestAccessLogLine: one line per request with the method, the route
// template (not the raw path), the status, the duration, the request id
// and the body bytes in and out; a path or id crafted to inject log lines
// injects none.
func TestAccessLogLine(t *testing.T) {
	base, logs := webServer(t, HTTPConfig{})

	_, b := send(t, "GET", base+"/training/job-42", http.Header{"X-Request-Id": {"job-read-1"}}, nil)
	line := logs.accessLine(t, "job-read-1")
	want := map[string]any{"method": "GET", "route": "/training/{jobId}", "status": float64(200), "bytes_in": float64(0), "bytes_out": float64(len(b))}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access line %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if d, ok := line["duration"].(float64); !ok || d <= 0 || line["level"] != "INFO" {
		t.Errorf("access line duration %v level %v", line["duration"], line["level"])
	}

	body := `{"version": 5}`
	_, b = send(t, "POST", base+"/model/load", http.Header{"X-Request-Id": {"load-1"}, "Content-Type": {"application/json"}}, strings.NewReader(body))
	line = logs.accessLine(t, "load-1")
	if line["route"] != "/model/load" || line["status"] != float64(400) || line["bytes_in"] != float64(len(body)) || line["bytes_out"] != float64(len(b)) {
		t.Errorf("access line of a refused load: %v", line)
	}

	// A path that decodes to a newline and a JSON line, and an id that
	// tries to close the JSON string: no raw path is logged, the id is
	// replaced, and no line but the request's appears.
	before := len(logs.lines(t, "request"))
	c, r := dial(t, strings.TrimPrefix(base, "http://"))
	fmt.Fprintf(c, "GET /nope%%0A%%7B%%22msg%%22:%%22injected%%22%%7D HTTP/1.1\r\nHost: x\r\nX-Request-Id: x\",\"msg\":\"injected\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	id := resp.Header.Get("X-Request-Id")
	line = logs.accessLine(t, id)
	if resp.StatusCode != 404 || !saneRequestID(id) || line["route"] != "" || line["status"] != float64(404) {
		t.Errorf("crafted request: %d id %q, line %v", resp.StatusCode, id, line)
	}
	if n := len(logs.lines(t, "request")); n != before+1 || len(logs.lines(t, "injected")) != 0 {
		t.Errorf("%d access lines after one request; injected lines %d", n-before, len(logs.lines(t, "injected")))
	}
}

// TestAccessLogFloodIsBounded: a burst of requests beyond the access
// log's rate is counted, not written: every request is either on its own
// line or in the suppressed count logged before the next line written.
//
// The flood lasts until it has sent 300 requests more than the limiter can
// have let through (the burst, and the rate over the time taken), so that
// a slow, busy machine floods as surely as an idle one; it gives up, as a
// failure, if requests come slower than the rate.
func TestAccessLogFloodIsBounded(t *testing.T) {
	base, logs := webServer(t, HTTPConfig{})
	client := &http.Client{Timeout: 10 * time.Second}
	const beyond, maxRequests = 300, 50 * accessLogBurst
	start := time.Now()
	n := 0
	for ; n < accessLogBurst+int(time.Since(start).Seconds()*accessLogLinesPerSecond)+beyond; n++ {
		if n == maxRequests {
			t.Fatalf("%d requests in %v, slower than the access log's %d lines a second: no flood", n, time.Since(start), accessLogLinesPerSecond)
		}
		resp, err := client.Get(base + "/no/such/route")
		if err != nil {
			t.Fatalf("request %d: %v", n, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	took := time.Since(start)
	// One more request, its line written once the limiter has a token
	// again, brings the suppressed count out.
	time.Sleep(time.Second / accessLogLinesPerSecond * 2)
	send(t, "GET", base+"/no/such/route", nil, nil)
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines := len(logs.lines(t, "request"))
		suppressed := 0
		for _, l := range logs.lines(t, "access log lines suppressed") {
			suppressed += int(l["lines"].(float64))
		}
		if lines+suppressed == n+1 {
			t.Logf("%d requests in %v: %d lines written, %d suppressed", n+1, took, lines, suppressed)
			if max := accessLogBurst + int(took.Seconds()*accessLogLinesPerSecond) + 50; suppressed == 0 || lines > max {
				t.Errorf("%d lines written, %d suppressed; at most %d expected", lines, suppressed, max)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lines + %d suppressed, want %d requests accounted for", lines, suppressed, n+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOpenAPIDocuments: GET /openapi.yaml is api/openapi.yaml byte for
// byte, as application/yaml; GET /openapi.json is application/json with
// the same content, compared through an independent YAML parser.
func TestOpenAPIDocuments(t *testing.T) {
	want, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := webServer(t, HTTPConfig{})
	resp, got := send(t, "GET", base+"/openapi.yaml", nil, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" || !bytes.Equal(got, want) {
		t.Fatalf("/openapi.yaml: %d %q, %d bytes, equal to api/openapi.yaml: %v", resp.StatusCode, resp.Header.Get("Content-Type"), len(got), bytes.Equal(got, want))
	}
	resp, got = send(t, "GET", base+"/openapi.json", nil, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi.json: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var fromJSON, fromYAML any
	if err := json.Unmarshal(got, &fromJSON); err != nil {
		t.Fatalf("/openapi.json does not parse: %v", err)
	}
	if err := yaml.Unmarshal(want, &fromYAML); err != nil {
		t.Fatal(err)
	}
	// Through JSON, so that numbers compare as JSON numbers.
	norm, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	var yamlAsJSON any
	json.Unmarshal(norm, &yamlAsJSON)
	if !reflect.DeepEqual(fromJSON, yamlAsJSON) {
		t.Fatal("/openapi.json differs in content from api/openapi.yaml")
	}
	if doc, ok := fromJSON.(map[string]any); !ok || doc["openapi"] == nil || doc["paths"] == nil {
		t.Fatalf("/openapi.json is not an OpenAPI document")
	}
}

// TestParseCORSOrigin: origins as browsers send them are accepted and
// normalised; anything else is refused with its reason.
func TestParseCORSOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://console.plant":       "https://console.plant",
		"HTTPS://Console.Plant:443":   "https://console.plant",
		"http://127.0.0.1:80":         "http://127.0.0.1",
		"http://localhost:3000":       "http://localhost:3000",
		"http://[::1]:8080":           "http://[::1]:8080",
		"https://console.plant:65535": "https://console.plant:65535",
		"app://console":               "app://console",
	} {
		if got, err := ParseCORSOrigin(in); err != nil || got != want {
			t.Errorf("ParseCORSOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"*":                               "not accepted",
		"null":                            "not accepted",
		"":                                "no scheme",
		"localhost:3000":                  "no scheme",
		"https://a.example/":              "has a path",
		"https://a.example/console":       "has a path",
		"https://a.example?x=1":           "character",
		"https://user@a.example":          "character",
		"https://a.example#x":             "character",
		"https://a.example:0":             "port",
		"https://a.example:65536":         "port",
		"https://a.example:":              "empty port",
		"https://":                        "no host",
		"https://a.example, https://b.ex": "character",
		"https://a%2eexample":             "character",
		"https://a.example\n":             "character",
		"https://*.example":               "character",
		"a://::1":                         "host",
		"http://[fe80::1%25eth0]":         "character",
		"http://[1.2.3.4]":                "IP-literal",
		"http://a~b.example":              "host",
	} {
		if _, err := ParseCORSOrigin(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseCORSOrigin(%q): %v, want an error saying %q", in, err, why)
		}
	}
	if _, err := newHTTPHandler(&API{}, HTTPConfig{CORSOrigins: []string{"*"}}, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "-cors-origin") {
		t.Errorf("a handler with origin *: %v", err)
	}
}

// FuzzParseCORSOrigin: what is accepted is an origin with no character
// that could split a header or a log line, and parsing it again gives it
// back.
func FuzzParseCORSOrigin(f *testing.F) {
	for _, s := range []string{"https://a.example", "HTTP://A:80", "http://[::1]:1", "*", "https://a/", "x://y:65535", "https://a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseCORSOrigin(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(got, "\r\n\t ,*%?#@") || !strings.Contains(got, "://") || strings.HasSuffix(got, "/") {
			t.Fatalf("ParseCORSOrigin(%q) accepted %q", s, got)
		}
		if again, err := ParseCORSOrigin(got); err != nil || again != got {
			t.Fatalf("ParseCORSOrigin(%q) = %q; again: %q, %v", s, got, again, err)
		}
	})
}

// FuzzAllowedRequestHeaders: whatever a preflight asks for, the answer is
// a comma-separated list of header-name tokens, bounded in length.
func FuzzAllowedRequestHeaders(f *testing.F) {
	for _, s := range []string{"content-type", "x-a, x-b", "cookie,sec-x", "a\r\nb: c", strings.Repeat("x,", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := allowedRequestHeaders([]string{s})
		if len(got) > 26+maxExtraAllowedHeaders*(maxAllowedHeaderLen+2) {
			t.Fatalf("%d bytes allowed", len(got))
		}
		for name := range strings.SplitSeq(got, ", ") {
			if !safeRequestHeader(strings.ToLower(name)) {
				t.Fatalf("allowed %q from %q", name, s)
			}
		}
	})
}

// BenchmarkWebLayer is the web layer's cost per request (id, CORS headers,
// access-log line to a discarding handler) around a handler that does
// nothing.
func BenchmarkWebLayer(b *testing.B) {
	web, err := newWebLayer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }),
		[]string{listedOrigin}, metrics.New(metrics.Sources{}).HTTP(), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	web.access.limit.SetLimit(1e9)
	web.access.limit.SetBurst(1e9)
	req, _ := http.NewRequest("GET", "/health", nil)
	req.Header.Set("Origin", listedOrigin)
	b.ReportAllocs()
	for b.Loop() {
		web.ServeHTTP(discardWriter{http.Header{}}, req)
	}
}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}
