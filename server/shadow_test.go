package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/evidence/shadow"
	"ramanserve/inference"
	"ramanserve/registry"
)

// stageEPAModel stages a one-target (EPA) PLS model on a 6-point axis
// whose prediction is intercept + coef . x.
func stageEPAModel(t *testing.T, reg *registry.Registry, intercept float64) string {
	t.Helper()
	return stageEPAModelOn(t, reg, []float64{500, 600, 700, 800, 900, 1000}, intercept)
}

// stageEPAModelOn stages stageEPAModel's model on another 6-point axis.
func stageEPAModelOn(t *testing.T, reg *registry.Registry, axis []float64, intercept float64) string {
	t.Helper()
	p := &inference.PLSParams{
		Meta:    inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA}, XMean: make([]float64, 6), XScale: []float64{1, 1, 1, 1, 1, 1},
		Coef: mat.NewDense(6, 1, []float64{1, -2, 3, -1, 0.5, 2}), Intercept: []float64{intercept},
	}
	v, _, err := reg.AddStaged(context.Background(), registry.StagedModel{
		Ext: ".npz", TrainedAt: time.Now(), Algorithm: "PLS2-NIPALS",
		Write: func(_ string, w io.Writer) error { return inference.WriteArtifact(w, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type shadowFixture struct {
	reg    *registry.Registry
	scorer *shadow.Scorer
	url    string
	active string
}

func newShadowFixture(t *testing.T, follow bool) (*shadowFixture, string) {
	t.Helper()
	reg, err := registry.Open(context.Background(), t.TempDir(), registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	active := stageEPAModel(t, reg, 4)
	candidate := stageEPAModel(t, reg, 4.5)
	if _, err := reg.Load(context.Background(), registry.LoadRequest{Version: active}); err != nil {
		t.Fatal(err)
	}
	scorer := shadow.New(shadow.Options{})
	t.Cleanup(func() { scorer.Close(context.Background()) })
	if follow {
		if err := reg.FollowShadow(scorer); err != nil {
			t.Fatal(err)
		}
	}
	h, err := NewHTTPHandler(&API{Registry: reg, Shadow: scorer}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &shadowFixture{reg: reg, scorer: scorer, url: srv.URL, active: active}, candidate
}

// do sends a request and returns the status and the decoded JSON body.
func (f *shadowFixture) do(t *testing.T, method, path, body string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out, string(bytes.TrimSpace(raw))
}

// offer hands spectra to the scorer the way the channel does after a
// reply, and waits until the shadow has scored them.
func (f *shadowFixture) offer(t *testing.T, n int) {
	t.Helper()
	m := f.reg.Active()
	for i := range n {
		spec := &inference.Spectrum{Wavenumbers: []float64{500, 600, 700, 800, 900, 1000}, Intensities: []float64{1, 2, 3, 4, 5, float64(i)}}
		var p inference.Prediction
		if err := m.Predict(spec, &p); err != nil {
			t.Fatal(err)
		}
		if !f.scorer.Offer(shadow.PredictionID{byte(i)}, time.Now(), m, spec, &p, nil) {
			t.Fatalf("spectrum %d not queued", i)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); f.scorer.Status().Comparison.N < int64(n); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("scored %d of %d", f.scorer.Status().Comparison.N, n)
		}
	}
}

func TestShadowRoutes(t *testing.T) {
	f, candidate := newShadowFixture(t, true)

	if code, _, raw := f.do(t, http.MethodGet, "/model/shadow", ""); code != 200 || raw != `{"version":null}` {
		t.Fatalf("GET without a shadow: %d %s", code, raw)
	}
	if code, body, raw := f.do(t, http.MethodPost, "/model/shadow", ""); code != 405 || body["code"] != "METHOD_NOT_ALLOWED" {
		t.Fatalf("POST /model/shadow: %d %s", code, raw)
	}
	for _, tc := range []struct {
		body       string
		status     int
		code, says string
	}{
		{`{"version":"no-such-version"}`, 400, "MODEL_NOT_FOUND", "no-such-version"},
		{`{"version":"` + f.active + `"}`, 409, "SHADOW_IS_ACTIVE", f.active},
		{`{"version":`, 400, "MALFORMED_JSON", ""},
		{`{}`, 400, "INVALID_REQUEST", ""},
	} {
		code, body, raw := f.do(t, http.MethodPut, "/model/shadow", tc.body)
		if code != tc.status || body["code"] != tc.code || !strings.Contains(raw, tc.says) {
			t.Errorf("PUT %s: %d %s, want %d %s", tc.body, code, raw, tc.status, tc.code)
		}
	}

	code, body, raw := f.do(t, http.MethodPut, "/model/shadow", `{"version":"`+candidate+`"}`)
	if code != 200 || body["version"] != candidate || body["since"] == nil {
		t.Fatalf("PUT: %d %s", code, raw)
	}
	cmp := body["comparison"].(map[string]any)
	epa := cmp["analytes"].(map[string]any)["EPA"].(map[string]any)
	if cmp["n"] != 0.0 || epa["n"] != 0.0 || epa["mean_difference"] != nil || epa["rmsd"] != nil || epa["disagree_share"] != nil {
		t.Fatalf("a fresh shadow's comparison has figures: %s", raw)
	}

	const n = 5
	f.offer(t, n)
	_, body, raw = f.do(t, http.MethodGet, "/model/shadow", "")
	cmp = body["comparison"].(map[string]any)
	analytes := cmp["analytes"].(map[string]any)
	epa = analytes["EPA"].(map[string]any)
	// The candidate's intercept is 0.5 g/L above the active's: every
	// difference is 0.5 (to rounding).
	md, _ := epa["mean_difference"].(float64)
	rmsd, _ := epa["rmsd"].(float64)
	if cmp["n"] != float64(n) || epa["n"] != float64(n) || math.Abs(md-0.5) > 1e-9 || math.Abs(rmsd-0.5) > 1e-9 || epa["disagree_share"] == nil || cmp["dropped"] != 0.0 {
		t.Fatalf("comparison after %d spectra: %s", n, raw)
	}
	// Neither model predicts DHA: n is 0 and the figures are absent.
	if dha := analytes["DHA"].(map[string]any); dha["n"] != 0.0 || len(dha) != 1 {
		t.Fatalf("DHA, predicted by neither: %v", dha)
	}

	// Promoting the shadow clears it.
	if code, _, raw := f.do(t, http.MethodPost, "/model/load", `{"version":"`+candidate+`","source":"staged"}`); code != 200 {
		t.Fatalf("load: %d %s", code, raw)
	}
	if code, _, raw := f.do(t, http.MethodGet, "/model/shadow", ""); code != 200 || raw != `{"version":null}` {
		t.Fatalf("GET after promoting the shadow: %d %s", code, raw)
	}
	if st := f.scorer.Status(); st.Version != "" {
		t.Fatalf("scorer still runs %q", st.Version)
	}

	// The former active, now archived, can shadow; DELETE clears, twice.
	if code, _, raw := f.do(t, http.MethodPut, "/model/shadow", `{"version":"`+f.active+`"}`); code != 200 {
		t.Fatalf("PUT archived: %d %s", code, raw)
	}
	for range 2 {
		if code, _, raw := f.do(t, http.MethodDelete, "/model/shadow", ""); code != 200 || raw != `{"version":null}` {
			t.Fatalf("DELETE: %d %s", code, raw)
		}
	}
	if f.reg.Shadow() != "" || f.scorer.Status().Version != "" {
		t.Fatalf("after DELETE: registry %q, scorer %q", f.reg.Shadow(), f.scorer.Status().Version)
	}
}

// TestShadowFailedCount: a shadow on another axis refuses every spectrum
// the active model scores; GET /model/shadow shows them as failed, not in n.
func TestShadowFailedCount(t *testing.T) {
	f, _ := newShadowFixture(t, true)
	other := stageEPAModelOn(t, f.reg, []float64{1500, 1600, 1700, 1800, 1900, 2000}, 4)
	if code, _, raw := f.do(t, http.MethodPut, "/model/shadow", `{"version":"`+other+`"}`); code != 200 {
		t.Fatalf("PUT: %d %s", code, raw)
	}
	const n = 4
	m := f.reg.Active()
	for i := range n {
		spec := &inference.Spectrum{Wavenumbers: []float64{500, 600, 700, 800, 900, 1000}, Intensities: []float64{1, 2, 3, 4, 5, float64(i)}}
		var p inference.Prediction
		if err := m.Predict(spec, &p); err != nil {
			t.Fatalf("the active model refuses spectrum %d: %v", i, err)
		}
		if !f.scorer.Offer(shadow.PredictionID{byte(i)}, time.Now(), m, spec, &p, nil) {
			t.Fatalf("spectrum %d not queued", i)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); f.scorer.Status().Comparison.Failed < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the shadow failed %d of %d", f.scorer.Status().Comparison.Failed, n)
		}
	}
	code, body, raw := f.do(t, http.MethodGet, "/model/shadow", "")
	cmp, _ := body["comparison"].(map[string]any)
	if code != 200 || cmp == nil || cmp["failed"] != float64(n) || cmp["n"] != 0.0 {
		t.Fatalf("GET /model/shadow after %d refused spectra: %d %s", n, code, raw)
	}
}

// TestShadowNamedWithoutFigures: when the scorer does not run the
// registry's shadow (it failed to restore, or no scorer is wired), GET
// names the version and shows no comparison rather than another model's.
func TestShadowNamedWithoutFigures(t *testing.T) {
	f, candidate := newShadowFixture(t, false)
	if code, _, raw := f.do(t, http.MethodPut, "/model/shadow", `{"version":"`+candidate+`"}`); code != 200 || raw != `{"version":"`+candidate+`"}` {
		t.Fatalf("PUT with the scorer not following: %d %s", code, raw)
	}
}
