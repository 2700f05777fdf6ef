package sklearn_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/inference/sklearn"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"

	"gonum.org/v1/gonum/mat"
)

// exportCase is a model to export and the spectra to predict with it.
type exportCase struct {
	name    string
	params  *inference.PLSParams
	spectra [][]float64
	axis    []float64 // the axis the spectra are on
	// tol bounds |scikit-learn - ramanserve| in g/L.
	tol float64
}

var twoRegions = [][2]float64{{600, 1800}, {2800, 3100}}

// trainedCase trains a small model on synthetic spectra with the recipe
// and regions, as POST /training/start would.
func trainedCase(t testing.TB, name string, recipe preprocess.Recipe, regions [][2]float64, autoscale bool, tol float64) exportCase {
	t.Helper()
	g := synth.New(synth.Config{Seed: 71})
	res, err := trainer.Train(context.Background(), g.Dataset(60), trainer.Options{
		Seed: 1, MaxComponents: 5, Folds: 3, Preprocessing: recipe, Regions: regions, Autoscale: autoscale,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var spectra [][]float64
	for i := range 6 {
		x := g.Next().Intensities
		if i%2 == 0 { // a cosmic spike of two points for despike to repair
			x[300+97*i] += 3000
			x[301+97*i] += 1500
		}
		spectra = append(spectra, x)
	}
	for _, s := range recipe {
		if s.Kind != preprocess.Despike {
			continue
		}
		pl, err := preprocess.Compile(recipe, synth.Axis())
		if err != nil {
			t.Fatal(err)
		}
		repaired := 0
		for _, x := range spectra {
			st, err := pl.Apply(slices.Clone(x), pl.NewWorkspace())
			if err != nil {
				t.Fatal(err)
			}
			repaired += st.Repaired
		}
		if repaired == 0 {
			t.Fatal("no spike was repaired: the despike step would go untested")
		}
	}
	return exportCase{name: name, params: res.Params, spectra: spectra, axis: synth.Axis(), tol: tol}
}

// importedCase reads a scikit-learn fixture and the spectra made for it.
func importedCase(t testing.TB, file string, x [][]float64, tol float64) exportCase {
	t.Helper()
	params, _, err := load(t, filepath.Join("testdata", file), sklearn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	axis := params.Meta.Wavenumbers
	if axis == nil {
		axis = linearAxis(len(x[0]))
	}
	return exportCase{name: "imported " + file, params: params, spectra: x, axis: axis, tol: tol}
}

func exportCases(t testing.TB) []exportCase {
	t.Helper()
	pipelineX := map[string][][]float64{}
	for _, fx := range pipelineFixtures(t) {
		pipelineX[fx.File] = fx.X
	}
	plainX := map[string][][]float64{}
	for _, fx := range fixtures(t) {
		plainX[fx.File] = fx.X
	}
	return []exportCase{
		trainedCase(t, "raw", nil, nil, false, 1e-9),
		trainedCase(t, "savgol snv, two regions", preprocess.Recipe{
			{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1}, {Kind: preprocess.SNV},
		}, twoRegions, false, 1e-9),
		trainedCase(t, "despike normalize", preprocess.Recipe{
			{Kind: preprocess.Despike, Threshold: 6, Width: 2}, {Kind: preprocess.Normalize, Region: [2]float64{1400, 1500}},
		}, nil, false, 1e-9),
		trainedCase(t, "als_baseline, autoscaled, one region", preprocess.Recipe{
			{Kind: preprocess.ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10},
		}, [][2]float64{{600, 1800}}, true, 1e-6),
		importedCase(t, "plain_scaled.joblib", plainX["plain_scaled.joblib"], 1e-9),
		importedCase(t, "pipeline_despike_snv.joblib", pipelineX["pipeline_despike_snv.joblib"], 1e-9),
		importedCase(t, "pipeline_every_step.joblib", pipelineX["pipeline_every_step.joblib"], 1e-6),
	}
}

// predictions returns, per spectrum, the concentrations of the model's
// targets, then T2 and Q (NaN where the model has none).
func predictions(t testing.TB, p *inference.PLSParams, c *exportCase) [][]float64 {
	t.Helper()
	opts := inference.ModelOptions{}
	if p.Meta.Wavenumbers == nil {
		opts.InstrumentAxis = c.axis
	}
	m, err := inference.NewPLSModel(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(c.spectra))
	for i, x := range c.spectra {
		var pr inference.Prediction
		if err := m.Predict(&inference.Spectrum{Wavenumbers: c.axis, Intensities: slices.Clone(x)}, &pr); err != nil {
			t.Fatalf("spectrum %d: %v", i, err)
		}
		for _, a := range p.Targets {
			out[i] = append(out[i], pr.Concentrations.Value[a])
		}
		t2, q := math.NaN(), math.NaN()
		if pr.Diagnostics.HasT2 {
			t2 = pr.Diagnostics.T2
		}
		if pr.Diagnostics.HasQ {
			q = pr.Diagnostics.Q
		}
		out[i] = append(out[i], t2, q)
	}
	return out
}

// smallModel is a model of 24 points with every part an export writes:
// a recipe of every step, two regions, scaling, latent structure and
// training scores (a small fuzz seed).
func smallModel() *inference.PLSParams {
	const points, q, a, n = 24, 3, 2, 6
	axis := linearAxis(points)
	regions := [][2]float64{{200, 900}, {2000, 2700}}
	sel, err := preprocess.SelectRegions(axis, regions)
	if err != nil {
		panic(err)
	}
	p := len(sel)
	fill := func(r, c int, seed float64) *mat.Dense {
		m := mat.NewDense(r, c, nil)
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				m.Set(i, j, math.Sin(seed+float64(i*c+j)))
			}
		}
		return m
	}
	params := &inference.PLSParams{
		Meta:    inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: a, Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA, inference.DHA, inference.DPA},
		Preprocessing: preprocess.Recipe{
			{Kind: preprocess.Despike, Threshold: 6, Width: 2},
			{Kind: preprocess.ALSBaseline, Lambda: 1e3, P: 0.02, Iterations: 3},
			{Kind: preprocess.Savgol, Window: 5, PolyOrder: 2, Deriv: 1},
			{Kind: preprocess.Normalize, Region: [2]float64{1000, 1500}},
			{Kind: preprocess.SNV},
		},
		Regions:   regions,
		XMean:     make([]float64, p),
		XScale:    make([]float64, p),
		Coef:      fill(p, q, 1),
		Intercept: []float64{1, 2, 3},
		Rotations: fill(p, a, 2),
		Loadings:  fill(p, a, 3),
		Review:    &inference.Review{Scores: fill(n, a, 4)},
	}
	for i := range params.XMean {
		params.XMean[i] = float64(i)
		params.XScale[i] = 1 + float64(i)/10
	}
	return params
}

func exportJoblib(t testing.TB, p *inference.PLSParams) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := sklearn.WriteJoblib(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExportRoundTrip: a model exported to scikit-learn and imported
// again (the reader of POST /model/load with source file) predicts what
// the model predicts, to 1e-12 g/L, with the same recipe, regions and
// axis. Q comes back to 1e-12 relative; T2 where the export holds the
// training scores (models trained here), which an imported model's file
// had but its parameters do not keep.
func TestExportRoundTrip(t *testing.T) {
	for _, c := range exportCases(t) {
		t.Run(c.name, func(t *testing.T) {
			b := exportJoblib(t, c.params)
			back, info, err := sklearn.Load(context.Background(), bytes.NewReader(b), sklearn.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !info.Pipeline || info.Compression != "none" {
				t.Errorf("read as %+v", info)
			}
			if !slices.Equal(back.Preprocessing, c.params.Preprocessing) {
				t.Errorf("recipe %+v, want %+v", back.Preprocessing, c.params.Preprocessing)
			}
			if !slices.Equal(back.Regions, c.params.Regions) {
				t.Errorf("regions %v, want %v", back.Regions, c.params.Regions)
			}
			// A raw model's export names no axis: its import gets the
			// instrument axis, as any scikit-learn file does.
			wantAxis := c.params.Meta.Wavenumbers
			if len(c.params.Preprocessing) == 0 && c.params.Regions == nil {
				wantAxis = nil
			}
			if !slices.Equal(back.Meta.Wavenumbers, wantAxis) {
				t.Errorf("axis of %d points, want %d", len(back.Meta.Wavenumbers), len(wantAxis))
			}
			want := predictions(t, c.params, &c)
			got := predictions(t, back, &c)
			q := len(c.params.Targets)
			keepsT2 := c.params.Review != nil && c.params.Review.Scores != nil
			worst := 0.0
			for i := range want {
				for k := range want[i] {
					w, g := want[i][k], got[i][k]
					d := math.Abs(g - w)
					switch {
					case k < q:
						worst = math.Max(worst, d)
					case k == q && !keepsT2:
						continue
					default:
						d /= math.Abs(w)
					}
					if !(d <= 1e-12) {
						t.Errorf("spectrum %d figure %d: %v after the round trip, %v before", i, k, g, w)
					}
				}
			}
			t.Logf("largest |round trip - model|: %.3g g/L", worst)
		})
	}
}

// TestExportPredictsInScikitLearn: Debian's scikit-learn loads each
// export with joblib.load and its Pipeline.predict gives the model's
// predictions to 1e-9 g/L (1e-6 through als_baseline, whose system any
// two correct solvers agree on only to about 1e-10 relative).
func TestExportPredictsInScikitLearn(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import joblib, sklearn, scipy.signal, scipy.linalg").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("joblib, scikit-learn and scipy are required in CI (make deps): %v", err)
		}
		t.Skip("Debian python3-sklearn/python3-joblib not available (make deps)")
	}
	helper, err := filepath.Abs(filepath.Join("..", "..", "examples", "python"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "export_predict.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range exportCases(t) {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			modelPath := filepath.Join(dir, "model.joblib")
			if err := os.WriteFile(modelPath, exportJoblib(t, c.params), 0o600); err != nil {
				t.Fatal(err)
			}
			// Spectra as text, each number in its shortest exact form.
			var text strings.Builder
			for _, x := range c.spectra {
				for j, v := range x {
					if j > 0 {
						text.WriteByte(' ')
					}
					text.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
				}
				text.WriteByte('\n')
			}
			specPath := filepath.Join(dir, "spectra.txt")
			if err := os.WriteFile(specPath, []byte(text.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(py, script, modelPath, specPath)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+helper)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python: %v\n%s", err, out)
			}
			want := predictions(t, c.params, &c)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != len(want) {
				t.Fatalf("python printed %d lines, want %d:\n%s", len(lines), len(want), out)
			}
			q := len(c.params.Targets)
			worst := 0.0
			for i, line := range lines {
				fields := strings.Fields(line)
				if len(fields) != q {
					t.Fatalf("line %d: %q, want %d values", i, line, q)
				}
				for k, s := range fields {
					v, err := strconv.ParseFloat(s, 64)
					if err != nil {
						t.Fatal(err)
					}
					d := math.Abs(v - want[i][k])
					worst = math.Max(worst, d)
					if !(d <= c.tol) {
						t.Errorf("spectrum %d %v: scikit-learn %v, ramanserve %v (|d| = %.3g)", i, c.params.Targets[k], v, want[i][k], d)
					}
				}
			}
			t.Logf("largest |scikit-learn - ramanserve|: %.3g g/L", worst)
		})
	}
}
