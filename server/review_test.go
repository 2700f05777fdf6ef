package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/trainer"
	"ramanserve/trainer/review"
)

// stageTrainedModel trains a small three-analyte model (two latent
// factors, 30 rows, 40 points) and stages it; it returns the version and
// the parameters as trained.
func stageTrainedModel(t *testing.T, reg *registry.Registry) (string, *inference.PLSParams) {
	t.Helper()
	const n, points = 30, 40
	rng := rand.New(rand.NewPCG(3, 4))
	ds := trainer.NewDataset(points, 3)
	for i := 0; i < n; i++ {
		u, v := rng.Float64(), rng.Float64()
		x := make([]float64, points)
		for j := range x {
			x[j] = u*math.Sin(float64(j)/5) + v*math.Cos(float64(j)/7) + 0.01*rng.NormFloat64()
		}
		ds.AppendRow(time.Duration(i).String(), x, []float64{1 + u, 2 + v, 3 + u - v + 0.01*rng.NormFloat64()})
	}
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Folds: 5, Components: 2,
		Wavenumbers: trainer.LinearAxis(400, 1800, points), Workers: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := reg.AddStaged(context.Background(), registry.StagedModel{
		Ext: ".npz", TrainedAt: time.Now(), Algorithm: "PLS2-NIPALS",
		Write: func(version string, w io.Writer) error {
			res.Params.Meta.Version = version
			return inference.WriteArtifact(w, res.Params)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, res.Params
}

func TestModelReviewRoute(t *testing.T) {
	reg, err := registry.Open(context.Background(), t.TempDir(), registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	trained, params := stageTrainedModel(t, reg)
	untrained := stageSmallModel(t, reg, "x")
	h, err := NewHTTPHandler(&API{Registry: reg}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}

	status, body := get("/model/" + trained + "/review")
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var got gen.ModelReview
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want, err := review.Compute(params)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != trained || len(got.Analytes) != 3 || got.Analytes[0] != "EPA" {
		t.Errorf("version %q analytes %v", got.Version, got.Analytes)
	}
	same := func(what string, a, b []float64) {
		t.Helper()
		if len(a) != len(b) {
			t.Fatalf("%s: %d values, want %d", what, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%s[%d] = %v, want %v", what, i, a[i], b[i])
			}
		}
	}
	same("vip", got.Vip, want.VIP)
	same("wavenumbers", got.Wavenumbers, want.Wavenumbers)
	same("leverage", got.Leverage, want.Leverage)
	same("rmsec", got.Rmsec, want.RMSEC)
	same("rmsecv", got.Rmsecv, want.RMSECV)
	if len(got.XWeights) != 2 || len(got.XLoadings) != 2 {
		t.Fatalf("%d weight and %d loading vectors, want 2 each", len(got.XWeights), len(got.XLoadings))
	}
	for a := range 2 {
		same("x_weights", got.XWeights[a], want.XWeights[a])
		same("x_loadings", got.XLoadings[a], want.XLoadings[a])
	}
	if len(got.Components) != 2 {
		t.Fatalf("%d components, want 2", len(got.Components))
	}
	for i, c := range got.Components {
		w := want.Components[i]
		if c.Components != i+1 || c.R2x != w.R2X || c.R2xCumulative != w.R2XCumulative || c.Q2 == nil {
			t.Errorf("component %d: %+v, want %+v", i, c, w)
			continue
		}
		same("r2y", c.R2y, w.R2Y)
		same("q2", *c.Q2, w.Q2)
	}
	// The numbers behind the scores and spectra plots.
	if got.Scores == nil || len(*got.Scores) != len(want.Leverage) {
		t.Fatalf("scores: %v rows, want one per training row (%d)", got.Scores, len(want.Leverage))
	}
	for i, row := range review.Scores(params) {
		same("scores", (*got.Scores)[i], row)
	}
	ts := review.Spectra(params)
	if got.Spectra == nil || ts == nil || got.Spectra.Preprocessed == nil {
		t.Fatalf("spectra: %+v, want the file's %+v", got.Spectra, ts)
	}
	if len(got.Spectra.Rows) != len(ts.Rows) || len(got.Spectra.Raw) != len(ts.Rows)+1 {
		t.Fatalf("spectra: rows %v and %d raw, want %v and %d", got.Spectra.Rows, len(got.Spectra.Raw), ts.Rows, len(ts.Rows)+1)
	}
	for i := range ts.Raw {
		same("spectra.raw", got.Spectra.Raw[i], ts.Raw[i])
		if pre := (*got.Spectra.Preprocessed)[i]; pre != nil && ts.Preprocessed[i] != nil {
			same("spectra.preprocessed", *pre, ts.Preprocessed[i])
		} else if (pre == nil) != (ts.Preprocessed[i] == nil) {
			t.Errorf("spectra.preprocessed[%d]: %v, want %v", i, pre, ts.Preprocessed[i])
		}
	}
	same("spectra.preprocessed[0] (x_mean)", *(*got.Spectra.Preprocessed)[0], params.XMean)

	for path, want := range map[string]struct {
		status int
		code   string
	}{
		"/model/nope/review":              {404, "MODEL_NOT_FOUND"},
		"/model/list/review":              {404, "MODEL_NOT_FOUND"},
		"/model/" + untrained + "/review": {409, "NO_TRAINING_RECORD"},
		// The page's scores plot: components the model lacks, the same
		// one twice, an unknown analyte.
		"/model/" + trained + "/report?scores_x=3":                  {400, "INVALID_REQUEST"},
		"/model/" + trained + "/report?scores_x=2&scores_y=2":       {400, "INVALID_REQUEST"},
		"/model/" + trained + "/report?scores_x=0":                  {400, "INVALID_REQUEST"},
		"/model/" + trained + "/report?scores_color=ALA":            {400, "INVALID_REQUEST"},
		"/model/" + trained + "/report?scores_y=1&scores_color=DPA": {200, ""},
	} {
		status, body := get(path)
		var e struct{ Code string }
		_ = json.Unmarshal(body, &e)
		if status != want.status || e.Code != want.code {
			t.Errorf("%s: %d %s, want %d %s", path, status, body, want.status, want.code)
		}
	}
}
