package inference_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

var (
	trainedOnce   sync.Once
	trainedParams *inference.PLSParams
	trainedErr    error
)

// trainedModel fits a model on synthetic spectra once per test binary.
func trainedModel(t testing.TB) *inference.PLSParams {
	t.Helper()
	trainedOnce.Do(func() {
		ds := synth.New(synth.Config{Seed: 11}).Dataset(120)
		res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1, MaxComponents: 12}, nil)
		if err != nil {
			trainedErr = err
			return
		}
		res.Params.Meta.Version = "pls-test"
		trainedParams = res.Params
	})
	if trainedErr != nil {
		t.Fatal(trainedErr)
	}
	return trainedParams
}

func TestArtifactRoundTripIsExact(t *testing.T) {
	p := trainedModel(t)
	got, _ := writeRead(t, p)
	if got.Meta.Version != p.Meta.Version || !got.Meta.TrainedAt.Equal(p.Meta.TrainedAt) || got.Meta.LatentComponents != p.Meta.LatentComponents ||
		got.NCalibration != p.NCalibration || got.Meta.RMSE != p.Meta.RMSE || got.Meta.R2 != p.Meta.R2 {
		t.Errorf("metadata differs: %+v vs %+v", got.Meta, p.Meta)
	}
	vectors := []struct {
		name      string
		got, want []float64
	}{
		{"wavenumbers", got.Meta.Wavenumbers, p.Meta.Wavenumbers}, {"x_mean", got.XMean, p.XMean},
		{"x_scale", got.XScale, p.XScale}, {"intercept", got.Intercept, p.Intercept},
		{"score_variance", got.ScoreVariance, p.ScoreVariance}, {"calibration_q", got.CalibrationQ, p.CalibrationQ},
		{"heldout_t2", got.HeldOutT2, p.HeldOutT2}, {"heldout_q", got.HeldOutQ, p.HeldOutQ},
		{"rmsecv", got.RMSECV, p.RMSECV},
	}
	for _, v := range vectors {
		if len(v.got) != len(v.want) {
			t.Fatalf("%s: length %d, want %d", v.name, len(v.got), len(v.want))
		}
		for i := range v.want {
			if v.got[i] != v.want[i] {
				t.Fatalf("%s[%d] = %v, want exactly %v", v.name, i, v.got[i], v.want[i])
			}
		}
	}
	for _, m := range []struct {
		name      string
		got, want *mat.Dense
	}{{"coef", got.Coef, p.Coef}, {"x_rotations", got.Rotations, p.Rotations}, {"x_loadings", got.Loadings, p.Loadings}} {
		if !mat.Equal(m.got, m.want) {
			t.Errorf("%s differs after the round trip", m.name)
		}
	}
	// The rebuilt model predicts bit-for-bit the same.
	m1, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := inference.NewPLSModel(got, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := synth.New(synth.Config{Seed: 99}).Next()
	samePrediction(t, m1, m2, &inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities})
}

// samePrediction fails t unless m1 and m2 predict sp identically (a model
// and the same model read back from its artifact).
func samePrediction(t *testing.T, m1, m2 inference.Model, sp *inference.Spectrum) {
	t.Helper()
	var o1, o2 inference.Prediction
	if err := m1.Predict(sp, &o1); err != nil {
		t.Fatal(err)
	}
	if err := m2.Predict(sp, &o2); err != nil {
		t.Fatal(err)
	}
	if o1 != o2 {
		t.Errorf("predictions differ: %+v vs %+v", o1, o2)
	}
}

func TestArtifactRejectsDamage(t *testing.T) {
	p := trainedModel(t)
	var buf bytes.Buffer
	if err := inference.WriteArtifact(&buf, p); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	flip := append([]byte(nil), good...)
	flip[len(flip)/2] ^= 0xff
	cases := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"not a zip", []byte("hello, this is not an archive")},
		{"truncated", good[:len(good)/3]},
		{"bit flip", flip},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inference.ReadArtifact(bytes.NewReader(tc.data), int64(len(tc.data)))
			if !errors.Is(err, inference.ErrModelCorrupted) {
				t.Fatalf("err = %v, want ErrModelCorrupted", err)
			}
		})
	}
}

// TestArtifactOpensInNumPy: the artifact is a real .npz that numpy.load
// reads, with the same numbers.
func TestArtifactOpensInNumPy(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("numpy is required in CI: %v", err)
		}
		t.Skip("Debian python3-numpy not available")
	}
	p := trainedModel(t)
	path := filepath.Join(t.TempDir(), "model.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := inference.WriteArtifact(f, p); err != nil {
		t.Fatal(err)
	}
	f.Close()
	script := `import sys, json, numpy as np
z = np.load(sys.argv[1])
meta = json.loads(bytes(z["meta.json"]) if "meta.json" in z.files else "{}")
print(z["coef"].shape, repr(float(z["coef"][5, 1])), repr(float(z["x_mean"][100])))`
	out, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil {
		// np.load does not expose non-.npy members; fall back to the arrays.
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	r, c := p.Coef.Dims()
	want := "(" + itoa(r) + ", " + itoa(c) + ") " + reprFloat(p.Coef.At(5, 1)) + " " + reprFloat(p.XMean[100])
	if strings.TrimSpace(string(out)) != want {
		t.Fatalf("numpy read %q, want %q", strings.TrimSpace(string(out)), want)
	}
}

func FuzzReadArtifact(f *testing.F) {
	p := trainedModel(f)
	var buf bytes.Buffer
	if err := inference.WriteArtifact(&buf, p); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("PK\x03\x04"))
	// A model with recipe, regions and review (format 2).
	buf.Reset()
	if err := inference.WriteArtifact(&buf, withReview(shapedModel(f, derivRecipe, twoRegions, 41))); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := inference.ReadArtifact(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errors.Is(err, inference.ErrModelCorrupted) {
				t.Fatalf("error does not wrap ErrModelCorrupted: %v", err)
			}
			return
		}
		// Whatever was read must either build a model or be refused; it
		// must never panic.
		if m, err := inference.NewPLSModel(got, inference.ModelOptions{}); err == nil {
			var out inference.Prediction
			in := make([]float64, m.SpectrumPoints())
			for i := range in {
				in[i] = float64(i % 7)
			}
			_ = m.Predict(&inference.Spectrum{Wavenumbers: m.Metadata().Wavenumbers, Intensities: in}, &out)
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

// reprFloat formats like Python's repr(float): the shortest text that
// round-trips.
func reprFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if e := strings.IndexByte(s, 'e'); e >= 0 {
		mant, exp := s[:e], s[e+1:]
		sign := exp[0]
		exp = strings.TrimLeft(exp[1:], "0")
		if len(exp) < 2 {
			exp = strings.Repeat("0", 2-len(exp)) + exp
		}
		return mant + "e" + string(sign) + exp
	}
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
