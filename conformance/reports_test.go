package conformance

import (
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
)

// The contract's report pages are text/html and GET /openapi.yaml is
// YAML text (string schemas); the response validator has no decoder for
// the first and would parse the second into a map unless told, so both
// are read as plain text.
func init() {
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
}

// TestReportRoutes: the review pages of a trained version and of the job
// that trained it are HTML documents under a Content Security Policy that
// lets nothing load or run, validated against the contract like every
// response of the suite; an unknown version or job is 404 with its code.
func TestReportRoutes(t *testing.T) {
	a, _ := twoModels(t)
	detail := must(api(t).GetModelWithResponse(t.Context(), a, nil))(t)
	if detail.JSON200 == nil || detail.JSON200.Lineage.JobId == nil {
		t.Fatalf("GET /model/%s: %s", a, detail.Body)
	}
	job := *detail.JSON200.Lineage.JobId
	for _, path := range []string{"/model/" + a + "/report", "/training/" + job + "/report"} {
		resp, body := raw(t, http.MethodGet, path, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		page := string(body)
		for _, want := range []string{"<!DOCTYPE html>", a, `id="cv-curve"`, `id="t2-q"`, `id="regression-vectors"`, "<svg"} {
			if !strings.Contains(page, want) {
				t.Errorf("GET %s: the page lacks %q", path, want)
			}
		}
		if strings.Contains(strings.ToLower(page), "<script") {
			t.Errorf("GET %s: the page holds a script", path)
		}
	}
	for path, code := range map[string]string{
		"/model/no-such-version/report": "MODEL_NOT_FOUND",
		"/training/no-such-job/report":  "JOB_NOT_FOUND",
	} {
		resp, body := raw(t, http.MethodGet, path, "", nil)
		wantError(t, "GET "+path, http.StatusNotFound, body, resp.StatusCode, code)
	}
}
