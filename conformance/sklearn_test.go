package conformance

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
)

// sklearnFixture is an entry of inference/sklearn/testdata/fixtures.json:
// a model file made by Debian's scikit-learn, inputs, and scikit-learn's
// predictions for them.
type sklearnFixture struct {
	File   string      `json:"file"`
	Target *string     `json:"target"`
	X      [][]float64 `json:"x"`
	Y      [][]float64 `json:"y"`
}

const sklearnFixtures = "../inference/sklearn/testdata"

// TestScikitLearnModelsServeTheSameNumbers loads every scikit-learn
// fixture through POST /model/load (source file) and predicts its inputs
// through the prediction channel: the answers must equal scikit-learn's to
// 1e-9.
func TestScikitLearnModelsServeTheSameNumbers(t *testing.T) {
	needInProcess(t)
	b, err := os.ReadFile(filepath.Join(sklearnFixtures, "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fixtures []sklearnFixture
	if err := json.Unmarshal(b, &fixtures); err != nil {
		t.Fatal(err)
	}
	importDir := filepath.Join(suite.regDir, "import")
	c := dialZMQ(t, suite.zmq)
	worst := 0.0
	for _, fx := range fixtures {
		t.Run(fx.File, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(sklearnFixtures, fx.File))
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(strings.TrimSuffix(fx.File, ".joblib"), ".pkl") + ".joblib"
			path := filepath.Join(importDir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if fx.Target != nil {
				os.WriteFile(path+".json", []byte(`{"target":"`+*fx.Target+`"}`), 0o644)
			}
			version := "sk-" + strings.ReplaceAll(strings.TrimSuffix(name, ".joblib"), "_", "-")
			src := gen.LoadModelRequestSource("file")
			res := must(api(t).LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: version, Source: &src, Path: &path}))(t)
			if res.StatusCode() != 200 {
				t.Fatalf("load: %d %s", res.StatusCode(), res.Body)
			}
			if res.JSON200.LoadedVersion != version || res.JSON200.Algorithm == nil || !strings.HasPrefix(*res.JSON200.Algorithm, "sklearn-") {
				t.Errorf("load response %+v", res.JSON200)
			}
			worst = math.Max(worst, predictLikeScikitLearn(t, c, version, fx.X, fx.Y))
		})
	}
	t.Logf("scikit-learn parity through HTTP load and the prediction channel: max |diff| %.3g over %d files", worst, len(fixtures))
}

// TestHostileModelFileIsRefused: a pickle that would run a shell command
// is refused with UNSAFE_MODEL and the command never runs.
func TestHostileModelFileIsRefused(t *testing.T) {
	needInProcess(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	payload := []byte{0x80, 4, 'c'}
	payload = append(payload, "os\nsystem\n"...)
	cmd := "touch " + marker
	payload = append(payload, 0x8c, byte(len(cmd)))
	payload = append(payload, cmd...)
	payload = append(payload, 0x85, 'R', '.')
	path := filepath.Join(suite.regDir, "import", "evil.joblib")
	if err := os.WriteFile(path, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	src := gen.LoadModelRequestSource("file")
	res := must(api(t).LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: "evil", Source: &src, Path: &path}))(t)
	if res.StatusCode() != 400 || res.JSON400 == nil || res.JSON400.Code != "UNSAFE_MODEL" || !strings.Contains(res.JSON400.Message, "os.system") {
		t.Fatalf("got %d %s", res.StatusCode(), res.Body)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the marker exists: the payload ran")
	}
}

// sklearnPipelineFixture is an entry of
// inference/sklearn/testdata/pipelines.json: an accepted
// Pipeline(FunctionTransformer..., PLSRegression) with scikit-learn's
// predictions, or a refused one with its code.
type sklearnPipelineFixture struct {
	File      string      `json:"file"`
	Algorithm string      `json:"algorithm"`
	X         [][]float64 `json:"x"`
	Y         [][]float64 `json:"y"`
	Error     string      `json:"error"`
	Message   string      `json:"message"`
}

// TestScikitLearnSavgolPipelineThroughAProcess: a real ramanserve process
// imports Pipeline(FunctionTransformer(savgol_filter, window_length=15,
// polyorder=2, deriv=1, axis=1), PLSRegression), saved by joblib, through
// POST /model/load (source file); predictions on the channel equal
// scikit-learn's to 1e-9. The process refuses a savgol in another mode
// (MODEL_UNSUPPORTED) and a FunctionTransformer of os.system
// (UNSAFE_MODEL), and keeps serving the pipeline.
func TestScikitLearnSavgolPipelineThroughAProcess(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(sklearnFixtures, "pipelines.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fixtures []sklearnPipelineFixture
	if err := json.Unmarshal(b, &fixtures); err != nil {
		t.Fatal(err)
	}
	byFile := map[string]sklearnPipelineFixture{}
	for _, fx := range fixtures {
		byFile[fx.File] = fx
	}
	reg := t.TempDir()
	importDir := filepath.Join(reg, "import")
	if err := os.MkdirAll(importDir, 0o755); err != nil {
		t.Fatal(err)
	}
	place := func(file string) string {
		data, err := os.ReadFile(filepath.Join(sklearnFixtures, file))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(importDir, file)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	p := startProcess(t, reg)
	hc := p.client(t)
	src := gen.LoadModelRequestSource("file")

	fx := byFile["pipeline_savgol.joblib"]
	if fx.File == "" || len(fx.X) == 0 {
		t.Fatal("pipelines.json has no pipeline_savgol.joblib")
	}
	path := place(fx.File)
	const version = "sk-savgol"
	res := must(hc.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: version, Source: &src, Path: &path}))(t)
	if res.StatusCode() != 200 {
		t.Fatalf("load: %d %s", res.StatusCode(), res.Body)
	}
	if res.JSON200.Algorithm == nil || *res.JSON200.Algorithm != "sklearn-Pipeline(savgol_filter,PLSRegression)" {
		t.Errorf("algorithm %v, want sklearn-Pipeline(savgol_filter,PLSRegression)", res.JSON200.Algorithm)
	}

	c := dialZMQ(t, p.zmq)
	predictAll := func() float64 { return predictLikeScikitLearn(t, c, version, fx.X, fx.Y) }
	worst := predictAll()

	for _, refused := range []string{"refuse_savgol_nearest.joblib", "refuse_os_system.joblib"} {
		rf := byFile[refused]
		if rf.Error == "" {
			t.Fatalf("pipelines.json has no refusal %s", refused)
		}
		path := place(refused)
		res := must(hc.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: "refused", Source: &src, Path: &path}))(t)
		if res.StatusCode() != 400 || res.JSON400 == nil || res.JSON400.Code != rf.Error || !strings.Contains(res.JSON400.Message, rf.Message) {
			t.Errorf("%s: got %d %s, want 400 %s mentioning %q", refused, res.StatusCode(), res.Body, rf.Error, rf.Message)
		}
	}
	worst = math.Max(worst, predictAll())
	t.Logf("savgol pipeline through a ramanserve process: max |diff| to scikit-learn %.3g over %d spectra (twice)", worst, len(fx.X))
}

// predictLikeScikitLearn sends each of xs (on the default 200-3200 cm-1
// axis) on the prediction channel, checks the reply comes from version
// and equals scikit-learn's ys to 1e-9, and returns the largest
// difference.
func predictLikeScikitLearn(t *testing.T, c *zmqClient, version string, xs, ys [][]float64) float64 {
	t.Helper()
	worst := 0.0
	for i, x := range xs {
		wn := make([]float64, len(x))
		for k := range wn {
			wn[k] = 200 + 3000*float64(k)/float64(len(x)-1)
		}
		frame := client.AppendPredictRequest(nil, "sk", float64(i+1), &client.Spectrum{Wavenumbers: wn, Intensities: x}, nil)
		raw := must(c.roundTrip(frame, 10*time.Second))(t)
		rep := must(client.DecodeReply(raw))(t)
		if rep.Error != nil {
			t.Fatalf("predict: %v", rep.Error)
		}
		pr := must(client.DecodePredictReply(rep.Body))(t)
		if pr.ModelVersion != version {
			t.Fatalf("served by %s", pr.ModelVersion)
		}
		k := 0
		for a := range pr.Concentrations.Value {
			if !pr.Concentrations.Valid[a] {
				continue
			}
			d := math.Abs(pr.Concentrations.Value[a] - ys[i][k])
			worst = math.Max(worst, d)
			if d > 1e-9 {
				t.Errorf("sample %d analyte %d: %v, scikit-learn %v (|diff| %.3g)", i, a, pr.Concentrations.Value[a], ys[i][k], d)
			}
			k++
		}
		if k != len(ys[i]) {
			t.Errorf("reply has %d analytes, scikit-learn %d", k, len(ys[i]))
		}
	}
	return worst
}
