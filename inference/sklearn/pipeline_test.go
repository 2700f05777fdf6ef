package sklearn_test

import (
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/inference/sklearn"
)

// pipelineFixture is an entry of testdata/pipelines.json (made by
// make_pipeline_fixtures.py): an accepted file with scikit-learn's
// predictions, or a refused one with the code it must get.
type pipelineFixture struct {
	File      string      `json:"file"`
	Algorithm string      `json:"algorithm"`
	X         [][]float64 `json:"x"`
	Y         [][]float64 `json:"y"`
	Error     string      `json:"error"`
	Message   string      `json:"message"`
}

func pipelineFixtures(t testing.TB) []pipelineFixture {
	t.Helper()
	return readJSONFile[[]pipelineFixture](t, "testdata/pipelines.json")
}

// wantRecipes are the recipes make_pipeline_fixtures.py's pipelines spell,
// with the helper module's defaults filled in where kw_args leave them out.
var wantRecipes = map[string]preprocess.Recipe{
	"pipeline_savgol.joblib": {
		{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1},
	},
	"pipeline_despike_snv.joblib": {
		{Kind: preprocess.Despike, Threshold: 6, Width: 2},
		{Kind: preprocess.SNV},
	},
	"pipeline_every_step.joblib": {
		{Kind: preprocess.Despike, Threshold: 6, Width: 2},
		{Kind: preprocess.ALSBaseline, Lambda: 1e4, P: 0.02, Iterations: 8},
		{Kind: preprocess.Savgol, Window: 11, PolyOrder: 3},
		{Kind: preprocess.Normalize, Region: [2]float64{2500, 3200}},
	},
}

// TestPipelineRecipes: each accepted Pipeline becomes the recipe its
// FunctionTransformers spell, and Meta.Algorithm names its steps.
func TestPipelineRecipes(t *testing.T) {
	for _, fx := range pipelineFixtures(t) {
		if fx.Error != "" {
			continue
		}
		t.Run(fx.File, func(t *testing.T) {
			params, info, err := load(t, filepath.Join("testdata", fx.File), sklearn.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want, ok := wantRecipes[fx.File]
			if !ok {
				t.Fatalf("no expected recipe for %s", fx.File)
			}
			if !reflect.DeepEqual(params.Preprocessing, want) {
				t.Errorf("recipe %+v, want %+v", params.Preprocessing, want)
			}
			if params.Meta.Algorithm != fx.Algorithm {
				t.Errorf("algorithm %q, want %q", params.Meta.Algorithm, fx.Algorithm)
			}
			if !info.Pipeline || "sklearn-Pipeline("+strings.Join(info.Steps, ",")+")" != fx.Algorithm {
				t.Errorf("info %+v", info)
			}
			// normalize names the axis, which becomes the model's.
			hasNormalize := strings.Contains(fx.Algorithm, "normalize")
			if hasNormalize != (len(params.Meta.Wavenumbers) == len(params.XMean)) {
				t.Errorf("axis of %d points for %d features (normalize: %v)", len(params.Meta.Wavenumbers), len(params.XMean), hasNormalize)
			}
			if hasNormalize {
				if w := params.Meta.Wavenumbers; w[0] != 200 || w[len(w)-1] != 3200 {
					t.Errorf("axis %v..%v, want 200..3200", w[0], w[len(w)-1])
				}
			}
		})
	}
}

// TestPipelinesPredictLikeScikitLearn: the accepted pipelines, through
// inference.NewPLSModel (the server's path), predict scikit-learn's own
// numbers to 1e-9; a pipeline with an als_baseline step to 1e-6, because
// its ill-conditioned system is solved to about 1e-10 relative by any two
// correct solvers (api/artifact.md).
func TestPipelinesPredictLikeScikitLearn(t *testing.T) {
	worst := 0.0
	for _, fx := range pipelineFixtures(t) {
		if fx.Error != "" {
			continue
		}
		t.Run(fx.File, func(t *testing.T) {
			params, _, err := load(t, filepath.Join("testdata", fx.File), sklearn.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-9
			for _, st := range params.Preprocessing {
				if st.Kind == preprocess.ALSBaseline {
					tol = 1e-6
				}
			}
			w, _ := predictLikeScikitLearn(t, params, fx.X, fx.Y, tol)
			worst = math.Max(worst, w)
		})
	}
	t.Logf("max |ramanserve - scikit-learn| over the pipeline fixtures: %.3g", worst)
}

// TestPipelineRefusals: an unlisted function is UNSAFE_MODEL, a listed
// one with arguments outside the documented ones MODEL_UNSUPPORTED, and
// the message names the cause.
func TestPipelineRefusals(t *testing.T) {
	codes := map[string]error{"UNSAFE_MODEL": inference.ErrUnsafeModel, "MODEL_UNSUPPORTED": inference.ErrModelUnsupported}
	n := 0
	for _, fx := range pipelineFixtures(t) {
		if fx.Error == "" {
			continue
		}
		n++
		t.Run(fx.File, func(t *testing.T) {
			want, ok := codes[fx.Error]
			if !ok {
				t.Fatalf("unknown code %s", fx.Error)
			}
			_, _, err := load(t, filepath.Join("testdata", fx.File), sklearn.Options{})
			if !errors.Is(err, want) {
				t.Fatalf("err = %v, want %v", err, want)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), fx.Message) {
				t.Errorf("message %q does not mention %q", err, fx.Message)
			}
		})
	}
	if n < 10 {
		t.Fatalf("only %d refusal fixtures", n)
	}
}
