package inference_test

import (
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
	"ramanserve/trainer/synth"
)

// TestArtifactAlonePredictsInPython: testdata/artifact_predict.py, written
// from api/artifact.md with NumPy and SciPy only, reads the artifact and
// reproduces the server's predictions to 1e-10 g/L (and T2 and Q to 1e-9
// relative) for the recipe with two regions; through an ALS
// baseline, whose ill-conditioned system two correct solvers agree on
// only to about 1e-10 relative (api/artifact.md), to 1e-6 g/L (and 1e-6
// relative).
func TestArtifactAlonePredictsInPython(t *testing.T) {
	numericOnly(t)
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy, scipy.signal, scipy.linalg, scipy.sparse").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("numpy and scipy are required in CI (make deps): %v", err)
		}
		t.Skip("Debian python3-numpy/python3-scipy not available (make deps)")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "artifact_predict.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		recipe  preprocess.Recipe
		regions [][2]float64
		// tol bounds |python - server| in g/L; T2 and Q get tol*10 relative.
		tol float64
	}{
		{"despike savgol(15,2,1) snv normalize, two regions", derivRecipe, twoRegions, 1e-10},
		{"als_baseline normalize, two regions", alsRecipe, twoRegions, 1e-6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := shapedModel(t, tc.recipe, tc.regions, 51)
			m, err := inference.NewPLSModel(p, inference.ModelOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			modelPath := filepath.Join(dir, "model.npz")
			f, err := os.Create(modelPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := inference.WriteArtifact(f, p); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}

			// Spectra with and without cosmic spikes, one of two points.
			axis := synth.Axis()
			g := synth.New(synth.Config{Seed: 52})
			const count = 8
			var flat []float64
			want := make([][]float64, count)
			pl, err := preprocess.Compile(tc.recipe, axis)
			if err != nil {
				t.Fatal(err)
			}
			repaired := 0
			for i := range count {
				x := g.Next().Intensities
				if i%2 == 0 {
					x[300+97*i] += 3000
					x[301+97*i] += 1500
				}
				flat = append(flat, x...)
				st, err := pl.Apply(slices.Clone(x), pl.NewWorkspace())
				if err != nil {
					t.Fatal(err)
				}
				repaired += st.Repaired
				var out inference.Prediction
				if err := m.Predict(&inference.Spectrum{Wavenumbers: axis, Intensities: x}, &out); err != nil {
					t.Fatal(err)
				}
				for _, a := range p.Targets {
					want[i] = append(want[i], out.Concentrations.Value[a])
				}
				want[i] = append(want[i], out.Diagnostics.T2, out.Diagnostics.Q)
			}
			if tc.recipe[0].Kind == preprocess.Despike && repaired == 0 {
				t.Fatal("no spike was repaired: the despike rule would go untested")
			}
			specPath := filepath.Join(dir, "spectra.npy")
			sf, err := os.Create(specPath)
			if err != nil {
				t.Fatal(err)
			}
			if err := inference.WriteNPY(sf, []int{count, len(axis)}, flat); err != nil {
				t.Fatal(err)
			}
			if err := sf.Close(); err != nil {
				t.Fatal(err)
			}

			out, err := exec.Command(py, script, modelPath, specPath).CombinedOutput()
			if err != nil {
				t.Fatalf("python: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != count {
				t.Fatalf("python printed %d lines, want %d:\n%s", len(lines), count, out)
			}
			q := len(p.Targets)
			var worst float64
			for i, line := range lines {
				fields := strings.Fields(line)
				if len(fields) != q+2 {
					t.Fatalf("line %d: %q", i, line)
				}
				for k, s := range fields {
					v, err := strconv.ParseFloat(s, 64)
					if err != nil {
						t.Fatal(err)
					}
					w := want[i][k]
					if k < q {
						d := math.Abs(v - w)
						worst = math.Max(worst, d)
						if !(d <= tc.tol) {
							t.Errorf("spectrum %d %v: python %v, server %v (|d| = %.3g)", i, p.Targets[k], v, w, d)
						}
					} else if !(math.Abs(v-w) <= 10*tc.tol*math.Abs(w)) {
						t.Errorf("spectrum %d %s: python %v, server %v", i, []string{"T2", "Q"}[k-q], v, w)
					}
				}
			}
			t.Logf("largest |python - server| over %d spectra x %d analytes: %.3g g/L", count, q, worst)
		})
	}
}
