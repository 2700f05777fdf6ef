package sklearn_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"ramanserve/inference"
	"ramanserve/inference/sklearn"
)

type fixture struct {
	File   string      `json:"file"`
	Target *string     `json:"target"`
	X      [][]float64 `json:"x"`
	Y      [][]float64 `json:"y"`
}

func fixtures(t testing.TB) []fixture {
	t.Helper()
	return readJSONFile[[]fixture](t, "testdata/fixtures.json")
}

// readJSONFile decodes the JSON file at path into a T.
func readJSONFile[T any](t testing.TB, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func load(t testing.TB, path string, opts sklearn.Options) (*inference.PLSParams, sklearn.Info, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return sklearn.Load(context.Background(), f, opts)
}

// linearAxis is a stand-in instrument axis with p points.
func linearAxis(p int) []float64 {
	axis := make([]float64, p)
	for i := range axis {
		axis[i] = 200 + 3000*float64(i)/float64(p-1)
	}
	return axis
}

// TestFixturesPredictLikeScikitLearn: every fixture, through the model
// engine (inference.NewPLSModel, the path the server takes), predicts
// scikit-learn's own numbers to 1e-9.
func TestFixturesPredictLikeScikitLearn(t *testing.T) {
	wantLayout := map[string]string{
		"layout0.24_scaled.joblib": "0.24", "layout0.24_unscaled.joblib": "0.24",
		"layout1.3_scaled.joblib": "1.3-1.4", "layout1.5_scaled.joblib": "1.5+",
		"plain_scaled.joblib": "1.1-1.2", "pipeline.joblib": "1.1-1.2",
	}
	wantCompression := map[string]string{
		"plain_scaled_zlib.joblib": "zlib", "plain_scaled_gzip.joblib": "gzip", "plain_scaled_bz2.joblib": "bz2",
		"plain_scaled_xz.joblib": "xz", "plain_scaled_lzma.joblib": "lzma", "plain_scaled_lz4.joblib": "lz4",
		"plain_scaled.joblib": "none", "realistic_2048.joblib": "zlib",
	}
	worst := 0.0
	for _, fx := range fixtures(t) {
		t.Run(fx.File, func(t *testing.T) {
			opts := sklearn.Options{}
			if fx.Target != nil {
				opts.Target = *fx.Target
			}
			params, info, err := load(t, filepath.Join("testdata", fx.File), opts)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := wantLayout[fx.File]; ok && info.Layout != w {
				t.Errorf("layout %s, want %s", info.Layout, w)
			}
			if w, ok := wantCompression[fx.File]; ok && info.Compression != w {
				t.Errorf("compression %s, want %s", info.Compression, w)
			}
			w, outs := predictLikeScikitLearn(t, params, fx.X, fx.Y, 1e-9)
			worst = math.Max(worst, w)
			for _, out := range outs {
				if !out.Diagnostics.HasQ {
					t.Errorf("no Q for a model with loadings")
				}
			}
		})
	}
	t.Logf("max |ramanserve - scikit-learn| over all fixtures: %.3g", worst)
}

// predictLikeScikitLearn opens params as the server does (on an evenly
// spaced instrument axis) and predicts each row of X, failing t where a
// concentration differs from scikit-learn's Y by more than tol. It
// returns the largest difference and the predictions.
func predictLikeScikitLearn(t *testing.T, params *inference.PLSParams, X, Y [][]float64, tol float64) (float64, []inference.Prediction) {
	t.Helper()
	p := len(params.XMean)
	params.Meta.Version = "fixture"
	model, err := inference.NewPLSModel(params, inference.ModelOptions{InstrumentAxis: linearAxis(p)})
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	outs := make([]inference.Prediction, len(X))
	for i, x := range X {
		out := &outs[i]
		if err := model.Predict(&inference.Spectrum{Wavenumbers: linearAxis(p), Intensities: x}, out); err != nil {
			t.Fatal(err)
		}
		for k, a := range model.Targets() {
			d := math.Abs(out.Concentrations.Value[a] - Y[i][k])
			worst = math.Max(worst, d)
			if d > tol {
				t.Errorf("sample %d %v: %v, scikit-learn %v (|diff| %.3g)", i, a, out.Concentrations.Value[a], Y[i][k], d)
			}
		}
	}
	return worst, outs
}

func TestOneTargetModelNeedsItsAnalyte(t *testing.T) {
	_, _, err := load(t, "testdata/one_target_dha.joblib", sklearn.Options{})
	if !errors.Is(err, inference.ErrModelTargets) {
		t.Fatalf("err = %v, want ErrModelTargets", err)
	}
	p, _, err := load(t, "testdata/one_target_dha.joblib", sklearn.Options{Target: "DHA"})
	if err != nil || len(p.Targets) != 1 || p.Targets[0] != inference.DHA {
		t.Fatalf("with target: %v %v", p, err)
	}
}

// Hostile inputs: each must be refused, and nothing may run.

func pickleString(s string) []byte {
	b := []byte{0x8c, byte(len(s))}
	return append(b, s...)
}

// callPickle is a protocol-4 pickle calling module.name(arg) with GLOBAL +
// REDUCE, the classic code-execution payload.
func callPickle(module, name, arg string) []byte {
	b := []byte{0x80, 4}
	b = append(b, 'c')
	b = append(b, module+"\n"+name+"\n"...)
	b = append(b, pickleString(arg)...)
	b = append(b, 0x85, 'R', '.') // TUPLE1 REDUCE STOP
	return b
}

// proveHarmful runs the payload through Python's own pickle, when Debian's
// python3 is there, to show the test file really is an exploit.
func proveHarmful(t *testing.T, payload []byte, marker string) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		return
	}
	path := filepath.Join(t.TempDir(), "evil.pkl")
	os.WriteFile(path, payload, 0o644)
	exec.Command("/usr/bin/python3", "-c", "import pickle,sys; pickle.loads(open(sys.argv[1],'rb').read())", path).Run()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the payload did not create %s under Python's pickle; the test proves nothing", marker)
	}
	os.Remove(marker)
}

func TestHostileFilesAreRefusedAndNothingRuns(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	real, err := os.ReadFile("testdata/plain_scaled.joblib")
	if err != nil {
		t.Fatal(err)
	}
	var bomb bytes.Buffer
	zw := zlib.NewWriter(&bomb)
	zw.Write(make([]byte, 8<<20))
	zw.Close()

	// A NumpyArrayWrapper announcing a million doubles, followed by 16.
	bigShape := []byte{0x80, 4}
	bigShape = append(bigShape, pickleString("joblib.numpy_pickle")...)
	bigShape = append(bigShape, pickleString("NumpyArrayWrapper")...)
	bigShape = append(bigShape, 0x93, ')', 0x81, '}', '(')
	bigShape = append(bigShape, pickleString("shape")...)
	bigShape = append(bigShape, 'J')
	bigShape = binary.LittleEndian.AppendUint32(bigShape, 1_000_000)
	bigShape = append(bigShape, 0x85)
	bigShape = append(bigShape, pickleString("order")...)
	bigShape = append(bigShape, pickleString("C")...)
	bigShape = append(bigShape, pickleString("dtype")...)
	bigShape = append(bigShape, pickleString("numpy")...)
	bigShape = append(bigShape, pickleString("dtype")...)
	bigShape = append(bigShape, 0x93)
	bigShape = append(bigShape, pickleString("f8")...)
	bigShape = append(bigShape, 0x89, 0x88, 0x87, 'R', 'u', 'b')
	bigShape = append(bigShape, make([]byte, 16)...)
	bigShape = append(bigShape, '.')

	cases := []struct {
		name string
		data []byte
		opts sklearn.Options
		want error
		msg  string
	}{
		{"os.system via GLOBAL and REDUCE", callPickle("os", "system", "touch "+marker), sklearn.Options{}, inference.ErrUnsafeModel, "os.system"},
		{"builtins.eval", callPickle("builtins", "eval", "open('"+marker+"','w').write('x')"), sklearn.Options{}, inference.ErrUnsafeModel, "builtins.eval"},
		{"posix.system", callPickle("posix", "system", "touch "+marker), sklearn.Options{}, inference.ErrUnsafeModel, "posix.system"},
		{"allowlisted class called with REDUCE", callPickle("sklearn.pipeline", "Pipeline", "x"), sklearn.Options{}, inference.ErrUnsafeModel, "Pipeline"},
		{"compression bomb", bomb.Bytes(), sklearn.Options{MaxDecompressedBytes: 1 << 20}, inference.ErrModelCorrupted, "more than"},
		{"shape larger than the bytes that follow", bigShape, sklearn.Options{}, inference.ErrModelCorrupted, "shape"},
		{"truncated file", real[:len(real)/2], sklearn.Options{}, inference.ErrModelCorrupted, "truncated"},
		{"empty file", nil, sklearn.Options{}, inference.ErrModelCorrupted, "empty"},
		{"not a pickle", []byte("PK\x03\x04 a zip file"), sklearn.Options{}, inference.ErrModelCorrupted, "not a pickle"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "system") || strings.Contains(tc.name, "eval") {
				proveHarmful(t, tc.data, marker)
			}
			_, _, err := sklearn.Load(context.Background(), bytes.NewReader(tc.data), tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not mention %q", err, tc.msg)
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("the marker file exists: something ran")
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	for _, name := range []string{"plain_scaled.joblib", "pipeline.joblib", "plain_scaled_protocol2.joblib", "feature_names.joblib", "plain_scaled_pickle.pkl", "plain_scaled_zlib.joblib",
		"pipeline_despike_snv.joblib", "pipeline_every_step.joblib", "refuse_os_system.joblib", "refuse_savgol_nearest.joblib", "refuse_inverse_func.joblib"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(callPickle("os", "system", "true"))
	f.Add(exportJoblib(f, smallModel()))
	f.Fuzz(func(t *testing.T, data []byte) {
		// What the reader reads, the pickle writer writes back to the
		// same value (the export is written by that writer).
		if err := sklearn.CheckWriteBack(data, 4<<20); err != nil {
			t.Fatal(err)
		}
		p, _, err := sklearn.Load(context.Background(), bytes.NewReader(data), sklearn.Options{Target: "EPA", MaxDecompressedBytes: 4 << 20})
		if err != nil {
			if !errors.Is(err, inference.ErrModelCorrupted) && !errors.Is(err, inference.ErrUnsafeModel) &&
				!errors.Is(err, inference.ErrModelUnsupported) && !errors.Is(err, inference.ErrModelTargets) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if m, err := inference.NewPLSModel(p, inference.ModelOptions{}); err == nil {
			var out inference.Prediction
			x := make([]float64, len(p.XMean))
			_ = m.Predict(&inference.Spectrum{Wavenumbers: linearAxis(len(x)), Intensities: x}, &out)
		}
	})
}
