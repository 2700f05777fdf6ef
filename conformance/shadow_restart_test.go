package conformance

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ramanserve/gen"
)

func shadowOf(t *testing.T, c *gen.ClientWithResponses) gen.ShadowStatus {
	t.Helper()
	res := must(c.GetShadowWithResponse(context.Background()))(t)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
		t.Fatalf("GET /model/shadow: %d %s", res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

func degradedReasons(h *gen.HealthStatus) string {
	if h.DegradedReasons == nil {
		return ""
	}
	return strings.Join(*h.DegradedReasons, "\n")
}

// TestShadowSurvivesKill9: a real ramanserve process sets a shadow and is
// killed (SIGKILL); the next process runs the same shadow, from the index
// alone. When the shadow's file no longer holds the bytes the registry
// recorded, the next start keeps serving the active model, names the shadow
// in GET /model/shadow without figures, says why in health (degraded), and
// DELETE /model/shadow clears it.
func TestShadowSurvivesKill9(t *testing.T) {
	dir := t.TempDir()
	models := filepath.Join(dir, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	// Files copied in by hand are adopted at start-up as archived, named
	// after their stems.
	writeArtifact(t, filepath.Join(models, "live-a.npz"), "live-a")
	writeArtifact(t, filepath.Join(models, "cand-b.npz"), "cand-b")
	ctx := context.Background()

	p := startProcess(t, dir)
	c := p.client(t)
	archived := gen.LoadModelRequestSourceArchived
	if res := must(c.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: "live-a", Source: &archived}))(t); res.StatusCode() != 200 {
		t.Fatalf("load: %d %s", res.StatusCode(), res.Body)
	}
	if res := must(c.SetShadowWithResponse(ctx, gen.SetShadowJSONRequestBody{Version: "cand-b"}))(t); res.StatusCode() != 200 {
		t.Fatalf("PUT /model/shadow: %d %s", res.StatusCode(), res.Body)
	}
	p.kill()

	p = startProcess(t, dir)
	c = p.client(t)
	st := shadowOf(t, c)
	if st.Version == nil || *st.Version != "cand-b" || st.Comparison == nil || st.Since == nil {
		t.Fatalf("after kill -9 and restart: %+v, want cand-b running", st)
	}
	if h := healthOf(t, c); h.Status != gen.Ok {
		t.Fatalf("health after restoring the shadow: %s %s", h.Status, degradedReasons(h))
	}
	p.kill()

	// The shadow's file is replaced (same name, other bytes): its
	// checksum fails at the next start.
	writeArtifact(t, filepath.Join(models, "cand-b.npz"), "cand-b-other")
	p = startProcess(t, dir)
	c = p.client(t)
	if res := must(c.GetModelInfoWithResponse(ctx, nil))(t); res.StatusCode() != 200 || res.JSON200.ActiveVersion != "live-a" {
		t.Fatalf("active model after a shadow that failed to restore: %d %s", res.StatusCode(), res.Body)
	}
	st = shadowOf(t, c)
	if st.Version == nil || *st.Version != "cand-b" || st.Comparison != nil || st.Since != nil {
		t.Fatalf("a shadow that failed to restore: %+v, want named without figures", st)
	}
	h := healthOf(t, c)
	if h.Status != gen.Degraded || !strings.Contains(degradedReasons(h), "shadow model cand-b not restored") {
		t.Fatalf("health: %s %q", h.Status, degradedReasons(h))
	}
	if res := must(c.ClearShadowWithResponse(ctx))(t); res.StatusCode() != 200 || res.JSON200.Version != nil {
		t.Fatalf("DELETE /model/shadow: %d %s", res.StatusCode(), res.Body)
	}
	if h := healthOf(t, c); strings.Contains(degradedReasons(h), "shadow") {
		t.Fatalf("health still names the cleared shadow: %q", degradedReasons(h))
	}
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
}
