package inference_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/trainer/synth"
)

// withReview gives p a review of its own size, as training fills it.
func withReview(p *inference.PLSParams) *inference.PLSParams {
	const n = 7
	q := len(p.Targets)
	seq := func(k int, scale float64) []float64 {
		v := make([]float64, k)
		for i := range v {
			v[i] = scale * float64(i+1) / 3
		}
		return v
	}
	r := &inference.Review{
		Selection: inference.ComponentSelection{Components: 4, Rule: inference.RuleRandomization, Segments: "interleaved", MaxComponents: 10, Folds: 5, MinScoreComponents: 5},
		ScanIDs:   []string{"s1", "s2", "s3", "s4", "s5", "s6", "s\"7\u00e9"},
		Measured:  mat.NewDense(n, q, seq(n*q, 10)), CVPredicted: mat.NewDense(n, q, seq(n*q, 9.5)),
		T2: seq(n, 1.5), Q: seq(n, 0.25), T2Limit: 9.25, QLimit: 1.75,
		StudentizedResiduals: mat.NewDense(n, q, seq(n*q, -0.1)),
		SpikesRepaired:       12, SpectraDespiked: 3, ExcludedScanIDs: []string{"bad-1", "bad-2"},
	}
	for c := 1; c <= 10; c++ {
		pt := inference.CVPoint{Components: c, RMSECV: seq(q, float64(c)), R2CV: seq(q, 0.01), Score: 1 / float64(c), ScoreSE: 0.01}
		if c == 10 {
			pt.ScoreSE = math.NaN() // not computed: written as null, read as NaN
		}
		r.CVCurve = append(r.CVCurve, pt)
	}
	// The mean and two of the training spectra, as uploaded.
	axis := len(p.Meta.Wavenumbers)
	r.RawSpectra, r.RawSpectraRows = mat.NewDense(3, axis, seq(3*axis, 100)), []int{0, 6}
	out := *p
	out.Review = r
	return &out
}

func writeRead(t *testing.T, p *inference.PLSParams) (*inference.PLSParams, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := inference.WriteArtifact(&buf, p); err != nil {
		t.Fatal(err)
	}
	got, err := inference.ReadArtifact(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return got, buf.Bytes()
}

// TestArtifactStoresRecipeRegionsAxisAndReview: format 2 keeps the recipe,
// the regions, the full axis and the review exactly, and the rebuilt
// model predicts bit for bit the same.
func TestArtifactStoresRecipeRegionsAxisAndReview(t *testing.T) {
	p := withReview(shapedModel(t, derivRecipe, twoRegions, 31))
	got, _ := writeRead(t, p)
	if !reflect.DeepEqual(got.Preprocessing, p.Preprocessing) {
		t.Errorf("recipe %+v, want %+v", got.Preprocessing, p.Preprocessing)
	}
	if !reflect.DeepEqual(got.Regions, p.Regions) {
		t.Errorf("regions %v, want %v", got.Regions, p.Regions)
	}
	if !slices.Equal(got.Meta.Wavenumbers, p.Meta.Wavenumbers) || len(got.Meta.Wavenumbers) == len(got.XMean) {
		t.Errorf("axis of %d points, want the full %d", len(got.Meta.Wavenumbers), len(p.Meta.Wavenumbers))
	}
	r, w := got.Review, p.Review
	if r == nil {
		t.Fatal("review lost")
	}
	if r.Selection != w.Selection || !slices.Equal(r.ScanIDs, w.ScanIDs) || !slices.Equal(r.ExcludedScanIDs, w.ExcludedScanIDs) ||
		r.T2Limit != w.T2Limit || r.QLimit != w.QLimit || r.SpikesRepaired != w.SpikesRepaired || r.SpectraDespiked != w.SpectraDespiked ||
		!slices.Equal(r.T2, w.T2) || !slices.Equal(r.Q, w.Q) ||
		!mat.Equal(r.Measured, w.Measured) || !mat.Equal(r.CVPredicted, w.CVPredicted) || !mat.Equal(r.StudentizedResiduals, w.StudentizedResiduals) ||
		!mat.Equal(r.RawSpectra, w.RawSpectra) || !slices.Equal(r.RawSpectraRows, w.RawSpectraRows) {
		t.Errorf("review differs:\n%+v\n%+v", r, w)
	}
	if len(r.CVCurve) != len(w.CVCurve) {
		t.Fatalf("cv curve of %d points, want %d", len(r.CVCurve), len(w.CVCurve))
	}
	for i, c := range r.CVCurve {
		wc := w.CVCurve[i]
		if c.Components != wc.Components || !slices.Equal(c.RMSECV, wc.RMSECV) || !slices.Equal(c.R2CV, wc.R2CV) || c.Score != wc.Score ||
			!(c.ScoreSE == wc.ScoreSE || math.IsNaN(c.ScoreSE) && math.IsNaN(wc.ScoreSE)) {
			t.Errorf("cv point %d: %+v, want %+v", i, c, wc)
		}
	}

	m1, err := inference.NewPLSModel(p, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := inference.NewPLSModel(got, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	samePrediction(t, m1, m2, &inference.Spectrum{Wavenumbers: p.Meta.Wavenumbers, Intensities: shapedSpectrum(32)})
}

// TestArtifactReadsFormat1: files written before recipes (format 1, no
// recipe, regions or review) still load.
func TestArtifactReadsFormat1(t *testing.T) {
	numericOnly(t)
	p := trainedModel(t)
	p.Review = nil // format 1 had no review members: the trainer's review is written from format 2 on
	_, data := writeRead(t, p)
	v1 := rewriteMember(t, data, "meta.json", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"ramanserve-pls/2"`), []byte(`"ramanserve-pls/1"`), 1)
	})
	got, err := inference.ReadArtifact(bytes.NewReader(v1), int64(len(v1)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Preprocessing != nil || got.Regions != nil || got.Review != nil || len(got.Meta.Wavenumbers) != len(got.XMean) {
		t.Fatalf("format 1 read as %+v", got)
	}
	if _, err := inference.NewPLSModel(got, inference.ModelOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestArtifactRejectsBadRecipeRegionsReview: each is MODEL_CORRUPTED,
// either when reading or when the model is built.
func TestArtifactRejectsBadRecipeRegionsReview(t *testing.T) {
	numericOnly(t)
	p := withReview(shapedModel(t, derivRecipe, twoRegions, 33))
	_, data := writeRead(t, p)
	meta := func(old, new string) []byte {
		return rewriteMember(t, data, "meta.json", func(b []byte) []byte {
			if !bytes.Contains(b, []byte(old)) {
				t.Fatalf("meta.json has no %q:\n%s", old, b)
			}
			return bytes.Replace(b, []byte(old), []byte(new), 1)
		})
	}
	review := func(old, new string) []byte {
		return rewriteMember(t, data, "review.json", func(b []byte) []byte {
			if !bytes.Contains(b, []byte(old)) {
				t.Fatalf("review.json has no %q:\n%s", old, b)
			}
			return bytes.Replace(b, []byte(old), []byte(new), 1)
		})
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"unknown step", meta(`"step": "savgol"`, `"step": "wavelet"`)},
		{"even window", meta(`"window": 15`, `"window": 16`)},
		{"window longer than the axis", meta(`"window": 15`, `"window": 2047, "polyorder": 2, "x": 1`)},
		{"normalize outside the axis", meta(`1400`, `9400`)},
		{"region of three values", meta(`600,`, `600, 700,`)},
		{"region outside the axis", meta(`2800`, `5800`)},
		{"format 1 with a recipe", meta(`"ramanserve-pls/2"`, `"ramanserve-pls/1"`)},
		{"unknown format", meta(`"ramanserve-pls/2"`, `"ramanserve-pls/3"`)},
		{"review rows disagree", review(`"s1",`, ``)},
		{"cv point of two targets", review(`"rmsecv": [`, `"rmsecv": [1, `)},
		{"review not JSON", rewriteMember(t, data, "review.json", func([]byte) []byte { return []byte("{") })},
		{"review array of another shape", rewriteMember(t, data, "review_t2.npy", func(b []byte) []byte {
			return bytes.Replace(b, []byte("(7,)"), []byte("(8,)"), 1)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inference.ReadArtifact(bytes.NewReader(tc.data), int64(len(tc.data)))
			if err == nil {
				_, err = inference.NewPLSModel(got, inference.ModelOptions{})
			}
			if !errors.Is(err, inference.ErrModelCorrupted) {
				t.Fatalf("err = %v, want ErrModelCorrupted", err)
			}
		})
	}
}

// TestArtifactRejectsBadRawSpectra: the optional training spectra must
// name training rows, one per spectrum after the mean, over the model's
// axis; a file written without them reads as one without a review plot.
func TestArtifactRejectsBadRawSpectra(t *testing.T) {
	numericOnly(t)
	base := withReview(shapedModel(t, derivRecipe, twoRegions, 35))
	axis := len(base.Meta.Wavenumbers)
	for _, tc := range []struct {
		name    string
		spectra *mat.Dense
		rows    []int
	}{
		{"a row beyond the training rows", mat.NewDense(3, axis, nil), []int{0, 7}},
		{"a negative row", mat.NewDense(3, axis, nil), []int{-1, 2}},
		{"rows and spectra disagree", mat.NewDense(3, axis, nil), []int{0}},
		{"another axis", mat.NewDense(3, axis-1, nil), []int{0, 1}},
		{"rows without spectra", nil, []int{0, 1}},
		{"spectra without rows", mat.NewDense(3, axis, nil), nil},
		{"too many spectra", mat.NewDense(inference.MaxRawSpectra+2, axis, nil), make([]int, inference.MaxRawSpectra+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := *base
			r := *p.Review
			r.RawSpectra, r.RawSpectraRows = tc.spectra, tc.rows
			p.Review = &r
			var buf bytes.Buffer
			if err := inference.WriteArtifact(&buf, &p); err != nil {
				t.Fatal(err)
			}
			if _, err := inference.ReadArtifact(bytes.NewReader(buf.Bytes()), int64(buf.Len())); !errors.Is(err, inference.ErrModelCorrupted) {
				t.Fatalf("err = %v, want ErrModelCorrupted", err)
			}
		})
	}
	p := *base
	r := *p.Review
	r.RawSpectra, r.RawSpectraRows = nil, nil
	p.Review = &r
	if got, _ := writeRead(t, &p); got.Review.RawSpectra != nil || got.Review.RawSpectraRows != nil {
		t.Error("a file without training spectra reads with some")
	}
}

// rewriteMember copies the .npz archive with member name transformed.
func rewriteMember(t testing.TB, data []byte, name string, f func([]byte) []byte) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	found := false
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if zf.Name == name {
			b, found = f(b), true
		}
		w, err := zw.Create(zf.Name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if !found {
		t.Fatalf("no member %s", name)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func shapedSpectrum(seed uint64) []float64 {
	s := synth.New(synth.Config{Seed: seed}).Next().Intensities
	s[900] += 4000
	return s
}
