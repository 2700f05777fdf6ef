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
			res := must(api(t).LoadModelWithResponse(context.Background(), gen.LoadModelJSONRequestBody{Version: version, Source: &src, Path: &path}))(t)
			if res.StatusCode() != 200 {
				t.Fatalf("load: %d %s", res.StatusCode(), res.Body)
			}
			if res.JSON200.LoadedVersion != version || res.JSON200.Algorithm == nil || !strings.HasPrefix(*res.JSON200.Algorithm, "sklearn-") {
				t.Errorf("load response %+v", res.JSON200)
			}
			for i, x := range fx.X {
				wn := make([]float64, len(x))
				for k := range wn {
					wn[k] = 200 + 3000*float64(k)/float64(len(x)-1)
				}
				frame := client.AppendPredictRequest(nil, "sk", 1, &client.Spectrum{Wavenumbers: wn, Intensities: x}, nil)
				raw := must(c.roundTrip(frame, 5*time.Second))(t)
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
					d := math.Abs(pr.Concentrations.Value[a] - fx.Y[i][k])
					worst = math.Max(worst, d)
					if d > 1e-9 {
						t.Errorf("sample %d analyte %d: %v, scikit-learn %v", i, a, pr.Concentrations.Value[a], fx.Y[i][k])
					}
					k++
				}
				if k != len(fx.Y[i]) {
					t.Errorf("reply has %d analytes, scikit-learn %d", k, len(fx.Y[i]))
				}
			}
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
	res := must(api(t).LoadModelWithResponse(context.Background(), gen.LoadModelJSONRequestBody{Version: "evil", Source: &src, Path: &path}))(t)
	if res.StatusCode() != 400 || res.JSON400 == nil || res.JSON400.Code != "UNSAFE_MODEL" || !strings.Contains(res.JSON400.Message, "os.system") {
		t.Fatalf("got %d %s", res.StatusCode(), res.Body)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the marker exists: the payload ran")
	}
}
