package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/trainer/synth"
)

// TestExportRoundTripThroughAProcess: a real process trains a model with
// a recipe and two regions; GET /model/{version}/export gives its
// scikit-learn Pipeline, which POST /model/load (source file) imports as
// a new version; on the prediction channel the import predicts what the
// trained model predicts, to 1e-12 g/L. format=npz is the registry's
// artifact byte for byte (the import's: its parameters as an artifact),
// and an unknown version is 404 MODEL_NOT_FOUND.
func TestExportRoundTripThroughAProcess(t *testing.T) {
	reg := t.TempDir()
	importDir := filepath.Join(reg, "import")
	if err := os.MkdirAll(importDir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, reg)
	hc := p.client(t)
	base := "http://" + p.httpAddr

	meta := optionMeta(`"preprocessing":[{"step":"savgol","window":15,"polyorder":2,"deriv":1},{"step":"snv"}],"regions":[[600,1800],[2800,3100]],"cv_folds":4,"max_components":4`)
	resp, body := multipartUpload(t, base, bytes.NewReader(renderCSV(csvRows(20))), meta)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	var accepted gen.TrainingJobAccepted
	if err := json.Unmarshal(body, &accepted); err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, hc, accepted.JobId, 2*time.Minute)
	if job.Status != gen.Done || job.Result == nil {
		t.Fatalf("job %s, error %+v", job.Status, job.Error)
	}
	trained := job.Result.NewVersion

	get := func(path string) (int, http.Header, []byte) {
		t.Helper()
		resp, err := httpClient().Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, b
	}
	// Through the generated client, whose responses are validated
	// against the contract.
	joblib := gen.ExportModelParamsFormat("joblib")
	er := must(hc.ExportModelWithResponse(context.Background(), trained, &gen.ExportModelParams{Format: &joblib}))(t)
	exported := er.Body
	if er.StatusCode() != http.StatusOK || er.HTTPResponse.Header.Get("Content-Disposition") != `attachment; filename="`+trained+`.joblib"` {
		t.Fatalf("export: %d %v %.200s", er.StatusCode(), er.HTTPResponse.Header, exported)
	}
	status, _, npz := get("/model/" + trained + "/export?format=npz")
	stored, err := os.ReadFile(filepath.Join(reg, "models", trained+".npz"))
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || !bytes.Equal(npz, stored) {
		t.Errorf("npz export: %d, %d bytes, the artifact %d", status, len(npz), len(stored))
	}
	status, _, b := get("/model/no-such-version/export")
	var env gen.ErrorResponse
	if err := json.Unmarshal(b, &env); err != nil || status != http.StatusNotFound || env.Code != "MODEL_NOT_FOUND" {
		t.Errorf("unknown version: %d %s, want 404 MODEL_NOT_FOUND", status, b)
	}

	path := filepath.Join(importDir, trained+".joblib")
	if err := os.WriteFile(path, exported, 0o644); err != nil {
		t.Fatal(err)
	}
	src := gen.LoadModelRequestSource("file")
	imported := "roundtrip-" + trained
	res := must(hc.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: imported, Source: &src, Path: &path}))(t)
	if res.StatusCode() != 200 || res.JSON200.Algorithm == nil ||
		*res.JSON200.Algorithm != "sklearn-Pipeline(savgol_filter,snv,select_regions,PLSRegression)" {
		t.Fatalf("import of the export: %d %s", res.StatusCode(), res.Body)
	}
	// The import's npz export is its parameters written as an artifact.
	status, _, importedNPZ := get("/model/" + imported + "/export?format=npz")
	if status != http.StatusOK {
		t.Fatalf("npz export of the import: %d %.200s", status, importedNPZ)
	}
	art, err := inference.ReadArtifact(bytes.NewReader(importedNPZ), int64(len(importedNPZ)))
	if err != nil {
		t.Fatalf("npz export of the import: %v", err)
	}
	if len(art.Preprocessing) != 2 || len(art.Regions) != 2 || art.Meta.Algorithm != *res.JSON200.Algorithm {
		t.Errorf("npz export of the import: recipe %v, regions %v, algorithm %q", art.Preprocessing, art.Regions, art.Meta.Algorithm)
	}
	c := dialZMQ(t, p.zmq)
	g := synth.New(synth.Config{Seed: 91})
	var spectra [][]float64
	for range 5 {
		spectra = append(spectra, g.Next().Intensities)
	}
	fromImport := predictEach(t, c, imported, spectra)
	staged := gen.LoadModelRequestSource("staged")
	res = must(hc.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: trained, Source: &staged}))(t)
	if res.StatusCode() != 200 {
		t.Fatalf("load %s: %d %s", trained, res.StatusCode(), res.Body)
	}
	fromTrained := predictEach(t, c, trained, spectra)
	worst := 0.0
	for i := range spectra {
		for a := range fromTrained[i] {
			d := math.Abs(fromImport[i][a] - fromTrained[i][a])
			worst = math.Max(worst, d)
			if !(d <= 1e-12) {
				t.Errorf("spectrum %d analyte %d: import of the export %v, trained model %v", i, a, fromImport[i][a], fromTrained[i][a])
			}
		}
	}
	t.Logf("export, import, predict: max |diff| %.3g g/L over %d spectra", worst, len(spectra))
}

// predictEach sends each spectrum (on the default axis) on the prediction
// channel, checks version answered, and returns the concentrations.
func predictEach(t *testing.T, c *zmqClient, version string, spectra [][]float64) [][3]float64 {
	t.Helper()
	out := make([][3]float64, len(spectra))
	for i, x := range spectra {
		frame := client.AppendPredictRequest(nil, "export", float64(i+1), &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: x}, nil)
		raw := must(c.roundTrip(frame, 10*time.Second))(t)
		rep := must(client.DecodeReply(raw))(t)
		if rep.Error != nil {
			t.Fatalf("predict: %v", rep.Error)
		}
		pr := must(client.DecodePredictReply(rep.Body))(t)
		if pr.ModelVersion != version {
			t.Fatalf("served by %s, want %s", pr.ModelVersion, version)
		}
		for a := range pr.Concentrations.Value {
			if !pr.Concentrations.Valid[a] {
				t.Fatalf("analyte %d missing", a)
			}
			out[i][a] = pr.Concentrations.Value[a]
		}
	}
	return out
}
