package app

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// TestPredictionRecordAndPage: an exceedance predicted over the channel
// without options is logged with the contributions the writer computed
// (the 10 largest and the region sums, adding up to the logged T2 and
// Q); GET /predictions/{id} returns them, and the page of the spectrum
// draws it; an unknown id is 404 PREDICTION_NOT_FOUND and a malformed
// one 400.
func TestPredictionRecordAndPage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := Start(ctx, Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: filepath.Join(dir, "registry"), Evidence: EvidenceConfig{LogSpectra: true, ExplainExceedances: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	res, err := trainer.Train(ctx, synth.New(synth.Config{Seed: 4}).Dataset(60), trainer.Options{Seed: 1, MaxComponents: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	version, _, err := a.Registry.AddStaged(ctx, registry.StagedModel{
		Ext: ".npz", TrainedAt: time.Now(), Algorithm: "PLS2-NIPALS", Operator: "op",
		Write: func(_ string, w io.Writer) error { return inference.WriteArtifact(w, res.Params) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := httpDo(t, a, "POST", "/model/load", `{"version":"`+version+`"}`, ""); resp.StatusCode != 200 {
		t.Fatalf("load: %d %s", resp.StatusCode, body)
	}
	odd := append([]float64(nil), synth.New(synth.Config{Seed: 5}).Next().Intensities...)
	for j := 900; j < 940; j++ {
		odd[j] *= 3
	}
	c, err := client.DialPrediction(ctx, a.ZMQEndpoint(), client.PredictionOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	reply, err := c.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: odd, ScanSeq: 1}, &client.ScanContext{BatchID: "B-odd"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Diagnostics["q_reduced"] <= 1 {
		t.Fatalf("the odd spectrum is within the Q limit: %v", reply.Diagnostics)
	}

	// The record is committed within the commit interval; wait for it.
	var logged []gen.LoggedPrediction
	deadline := time.Now().Add(10 * time.Second)
	for len(logged) == 0 {
		logged = listPredictions(t, a, map[string][]string{"batch_id": {"B-odd"}})
		if len(logged) == 0 && time.Now().After(deadline) {
			t.Fatal("the prediction was not logged within 10 s")
		}
		if len(logged) == 0 {
			waitLog(t, a)
		}
	}
	if logged[0].Contributions != nil {
		t.Error("GET /predictions lists contributions; only GET /predictions/{id} has them")
	}
	id := logged[0].PredictionId
	resp, body := httpDo(t, a, "GET", "/predictions/"+id, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /predictions/%s: %d %s", id, resp.StatusCode, body)
	}
	var got gen.PredictionRecords
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.PredictionId != id || !got.SpectrumLogged || len(got.Records) != 1 {
		t.Fatalf("GET /predictions/%s: %s", id, body)
	}
	ct := got.Records[0].Contributions
	if ct == nil || ct.Q == nil || ct.T2 == nil {
		t.Fatalf("the exceedance's record has no contributions: %s", body)
	}
	if len(ct.Q.Top) != 10 || ct.Q.Total != reply.Diagnostics["q"] || ct.T2.Total != reply.Diagnostics["t2"] {
		t.Fatalf("stored Q: %d largest, total %v (reply %v); T2 total %v (reply %v)", len(ct.Q.Top), ct.Q.Total, reply.Diagnostics["q"], ct.T2.Total, reply.Diagnostics["t2"])
	}
	if w := ct.Q.Top[0].Wavenumber; w < synth.Axis()[900] || w > synth.Axis()[939] {
		t.Errorf("the largest Q contribution is at %v cm-1, outside the band added at %v-%v", w, synth.Axis()[900], synth.Axis()[939])
	}

	// A predict that asks for contributions: the reply carries them (the
	// Go client's typed fields), and the log stores what it carried.
	normal := synth.New(synth.Config{Seed: 5}).Next().Intensities
	asked, err := c.PredictWithOptions(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: normal, ScanSeq: 2},
		&client.ScanContext{BatchID: "B-asked"}, &client.PredictOptions{Contributions: 5, HasContributions: true})
	if err != nil {
		t.Fatal(err)
	}
	if asked.Contributions == nil || asked.Contributions.Q == nil || len(asked.Contributions.Q.Top) != 5 || asked.Contributions.T2 == nil ||
		asked.Contributions.Q.Total != asked.Diagnostics["q"] || len(asked.Contributions.Q.Regions) != 1 {
		t.Fatalf("the reply's contributions: %+v", asked.Contributions)
	}
	var askedLog []gen.LoggedPrediction
	for deadline := time.Now().Add(10 * time.Second); len(askedLog) == 0; {
		if askedLog = listPredictions(t, a, map[string][]string{"batch_id": {"B-asked"}}); len(askedLog) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the asked prediction was not logged within 10 s")
			}
			waitLog(t, a)
		}
	}
	resp, body = httpDo(t, a, "GET", "/predictions/"+askedLog[0].PredictionId, "", "")
	var askedRecs gen.PredictionRecords
	if err := json.Unmarshal(body, &askedRecs); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /predictions/%s: %d %s", askedLog[0].PredictionId, resp.StatusCode, body)
	}
	stored := askedRecs.Records[0].Contributions
	if stored == nil || stored.Q == nil || len(stored.Q.Top) != 5 || stored.Q.Top[0].Wavenumber != asked.Contributions.Q.Top[0].Wavenumber ||
		stored.Q.Top[4].Value != asked.Contributions.Q.Top[4].Value || stored.T2.Total != asked.Contributions.T2.Total {
		t.Fatalf("stored %s, the reply carried %+v", body, asked.Contributions)
	}

	if _, metrics := httpDo(t, a, "GET", "/metrics", "", ""); !strings.Contains(string(metrics), `ramanserve_prediction_log_contributions_computed_total{result="stored"} 1`) {
		t.Error("the metrics do not count the one exceedance the writer explained")
	}

	resp, page := httpDo(t, a, "GET", "/predictions/"+id+"/report", "", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("the page: %d %v", resp.StatusCode, resp.Header)
	}
	for _, fig := range []string{`id="prediction-confidence"`, `id="prediction-limits"`, `id="spectrum-mean"`, `id="residual"`, `id="contributions-t2"`, `id="contributions-q"`} {
		if !strings.Contains(string(page), fig) {
			t.Errorf("the page has no %s", fig)
		}
	}
	if strings.Contains(string(page), "<script") {
		t.Error("the page holds a script")
	}

	for path, want := range map[string]struct {
		status int
		code   string
	}{
		"/predictions/0192f0c4-5f1e-7000-8000-000000000000":        {404, "PREDICTION_NOT_FOUND"},
		"/predictions/0192f0c4-5f1e-7000-8000-000000000000/report": {404, "PREDICTION_NOT_FOUND"},
		"/predictions/not-a-uuid":                                  {400, "INVALID_REQUEST"},
	} {
		resp, body := httpDo(t, a, "GET", path, "", "")
		if resp.StatusCode != want.status || !strings.Contains(string(body), want.code) {
			t.Errorf("GET %s: %d %s, want %d %s", path, resp.StatusCode, body, want.status, want.code)
		}
	}
}

// waitLog waits for the log's next commit, at most its commit interval
// and a commit's time.
func waitLog(t *testing.T, a *App) {
	t.Helper()
	before := a.predlog.Stats().Committed
	deadline := time.Now().Add(5 * time.Second)
	for a.predlog.Stats().Committed == before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
