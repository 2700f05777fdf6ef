package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot/plotter"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/registry"
	"ramanserve/trainer"
)

// trainedModel trains a small three-analyte model with regions, so that
// the page has every figure trainer/review computes.
func trainedModel(t testing.TB) Model {
	t.Helper()
	const n, points = 40, 120
	rng := rand.New(rand.NewPCG(5, 6))
	axis := trainer.LinearAxis(400, 1800, points)
	ds := trainer.NewDataset(points, 3)
	for i := 0; i < n; i++ {
		u, v, w := rng.Float64(), rng.Float64(), rng.Float64()
		x := make([]float64, points)
		for j, wn := range axis {
			x[j] = u*math.Exp(-(wn-700)*(wn-700)/5000) + v*math.Exp(-(wn-1100)*(wn-1100)/8000) +
				w*math.Exp(-(wn-1500)*(wn-1500)/3000) + 0.01*rng.NormFloat64()
		}
		ds.AppendRow(fmt.Sprintf("S%03d", i), x, []float64{1 + u, 2 + v - w, 3 + w + 0.01*rng.NormFloat64()})
	}
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Folds: 5, Components: 3, Wavenumbers: axis,
		Regions: [][2]float64{{450, 1250}, {1350, 1750}}, Workers: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Params.Meta.Version = "pls-review"
	return Model{Entry: registry.Entry{Version: "pls-review", Status: registry.StatusStaged}, Params: res.Params}
}

func TestRenderReviewFigures(t *testing.T) {
	m := trainedModel(t)
	page := render(t, m)
	for id, want := range map[string]int{SectionVIP: 1, SectionInfluence: 3, SectionCV: 3, SectionScores: 1, SectionWeights: 2, SectionSpectra: 2} {
		if got := sectionSVGs(page, id); got != want {
			t.Errorf("section %s: %d plots with paths, want %d", id, got, want)
		}
	}
	if !strings.Contains(page, `<section id="`+SectionComponents+`"`) {
		t.Fatal("no component table")
	}
	table := page[strings.Index(page, `<section id="`+SectionComponents+`"`):]
	table = table[:strings.Index(table, "</section>")]
	for _, want := range []string{"R²X cumulative", "R²Y EPA", "Q² DPA", `class="chosen"><td class="num">3</td>`} {
		if !strings.Contains(table, want) {
			t.Errorf("component table lacks %q", want)
		}
	}
	if got := strings.Count(table, "<tr"); got != 4 {
		t.Errorf("component table has %d rows, want a header and 3 components", got)
	}
	for _, want := range []string{summaryErrorKey, "log scale", "VIP = 1", "Scores t1 against t2", "colour: measured EPA",
		"X weights of components 1 to 3", "X loadings of components 1 to 3", "component 3", "excluded"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="missing"`) {
		t.Error("a trained model's page says something is missing")
	}
	assertSelfContained(t, page)
}

// TestRenderWithoutScores: a file written before the scores were kept
// has every other review figure and no scores plot.
func TestRenderWithoutScores(t *testing.T) {
	m := trainedModel(t)
	m.Params.Review.Scores = nil
	page := render(t, m)
	if strings.Contains(page, `<section id="`+SectionScores+`"`) || sectionSVGs(page, SectionVIP) != 1 {
		t.Error("scores plot without scores, or the other figures missing")
	}
}

// TestRenderReviewOfInconsistentFile: a file whose arrays disagree gets
// a page that says the review's figures are missing, not an error.
func TestRenderReviewOfInconsistentFile(t *testing.T) {
	m := trainedModel(t)
	m.Params.CalibrationQ = m.Params.CalibrationQ[:3]
	page := render(t, m)
	if !strings.Contains(page, "variable importance") || sectionSVGs(page, SectionVIP) != 0 {
		t.Error("the page neither says the review is missing nor leaves out its figures")
	}
}

// TestRenderSpectraBeforeAndAfter: a model trained here keeps its mean
// and five training spectra as uploaded; the page draws them before and
// after the recipe, named by scan id, in the recipe's unit. A file written
// before they were kept says so in a note, not as something missing.
func TestRenderSpectraBeforeAndAfter(t *testing.T) {
	m := trainedModel(t)
	rv := m.Params.Review
	if k, n := rv.RawSpectra.Dims(); k != 6 || n != len(m.Params.Meta.Wavenumbers) || len(rv.RawSpectraRows) != 5 {
		t.Fatalf("the review keeps %d x %d spectra, rows %v", k, n, rv.RawSpectraRows)
	}
	m.Params.Preprocessing = preprocess.Recipe{{Kind: preprocess.SNV}}
	page := render(t, m)
	if got := sectionSVGs(page, SectionSpectra); got != 2 {
		t.Fatalf("%d spectra plots, want 2", got)
	}
	sec := page[strings.Index(page, `<section id="`+SectionSpectra+`"`):]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, want := range []string{">mean</text>", "S000 (blue)", "S039 (brown)", "SNV unit", "the recipe (1 step)", "intensity (as uploaded)"} {
		if !strings.Contains(sec, want) {
			t.Errorf("spectra section lacks %q", want)
		}
	}
	rv.RawSpectra, rv.RawSpectraRows = nil, nil
	page = render(t, m)
	if strings.Contains(page, `<section id="`+SectionSpectra+`"`) || !strings.Contains(page, "keeps no training spectra") || strings.Contains(page, `id="missing"`) {
		t.Error("a file without spectra: a spectra section, or no note, or a missing box")
	}
}

// TestRenderScoresOfAnyPair: the scores plot draws the components asked
// for, coloured by the analyte asked for; a component the model lacks, or
// one on both axes, is ErrScoresNotInModel.
func TestRenderScoresOfAnyPair(t *testing.T) {
	m := trainedModel(t)
	m.Scores = ScoresChoice{X: 1, Y: 3, Color: inference.DHA, HasColor: true}
	page := render(t, m)
	if sectionSVGs(page, SectionScores) != 1 {
		t.Fatal("no scores plot")
	}
	for _, want := range []string{"Scores t1 against t3", "Hotelling T² of t1 and t3", "colour: measured DHA", "DHA " + num(m.Params.Review.Measured.At(0, 1))[:1]} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, c := range []ScoresChoice{{X: 4}, {X: 2, Y: 2}, {Y: 5}, {X: -1}} {
		m.Scores = c
		if err := Render(io.Discard, m); !errors.Is(err, ErrScoresNotInModel) {
			t.Errorf("%+v: %v, want ErrScoresNotInModel", c, err)
		}
	}
	// scores_y=1 alone is t2 against t1.
	m.Scores = ScoresChoice{Y: 1}
	if page := render(t, m); !strings.Contains(page, "Scores t2 against t1") {
		t.Error("scores_y=1 alone does not draw t2 against t1")
	}
}

// TestRenderUnitsAndFont: after SNV the vectors are per SNV unit, not per
// intensity; every plot's text is in the page's one family.
func TestRenderUnitsAndFont(t *testing.T) {
	m := trainedModel(t)
	page := render(t, m)
	if !strings.Contains(page, "g/L per intensity unit") || !strings.Contains(page, "loading p (intensity unit)") {
		t.Error("a model without a recipe does not say intensity units")
	}
	m.Params.Preprocessing = preprocess.Recipe{{Kind: preprocess.Savgol, Window: 11, PolyOrder: 2, Deriv: 1}, {Kind: preprocess.SNV}}
	page = render(t, m)
	if !strings.Contains(page, "g/L per SNV unit") || strings.Contains(page, "per intensity unit") {
		t.Error("after SNV the regression vectors still claim intensity units")
	}
	if strings.Contains(page, "Serif") || !strings.Contains(page, "font-family:Liberation Sans") {
		t.Error("the plots' text is not in the page's font family")
	}
}

// TestZeroTicks: an axis that crosses zero has a tick labelled 0, never
// a rounding residue such as 4e-19.
func TestZeroTicks(t *testing.T) {
	for _, r := range [][2]float64{{-0.0031, 0.0042}, {-0.7, 0.3}, {-3e-7, 9e-7}, {-1, 1}, {-0.09, 0.011}} {
		zero := false
		for _, tk := range (zeroTicks{}).Ticks(r[0], r[1]) {
			if tk.Label == "0" && tk.Value == 0 {
				zero = true
			}
			if tk.Label != "" && tk.Value != 0 && math.Abs(tk.Value) < 1e-12 {
				t.Errorf("%v: a tick %q at %g", r, tk.Label, tk.Value)
			}
		}
		if !zero {
			t.Errorf("%v: no tick labelled 0", r)
		}
	}
}

// TestPlaceLabelsListsWhatOverlaps: labels of points too close to be
// written apart are returned for the caption instead of overlapping.
func TestPlaceLabelsListsWhatOverlaps(t *testing.T) {
	p := newPlot("t", "x", "y")
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 10, 0, 10
	labels := []label{
		{plotter.XY{X: 5, Y: 5}, "first-label"},
		{plotter.XY{X: 5, Y: 5.01}, "second-label"}, // on the first: written left of the point
		{plotter.XY{X: 5, Y: 5.02}, "third-label"},  // both sides taken
		{plotter.XY{X: 1, Y: 9}, "far"},
	}
	unplaced, err := placeLabels(p, plotWidth, plotHeight, labels)
	if err != nil {
		t.Fatal(err)
	}
	if len(unplaced) != 1 || unplaced[0] != "third-label" {
		t.Errorf("unplaced %v, want [third-label]", unplaced)
	}
	if got := notLabelled(unplaced); !strings.Contains(got, "third-label") {
		t.Errorf("caption %q", got)
	}
}

// trainedModelOf trains a three-analyte model of n rows on the default
// 2048-point axis with the recipe and regions a plant would use, so that
// its page has every figure of the review.
func trainedModelOf(tb testing.TB, n int) Model {
	tb.Helper()
	const points = 2048
	rng := rand.New(rand.NewPCG(7, 8))
	axis := trainer.LinearAxis(200, 3200, points)
	ds := trainer.NewDataset(points, 3)
	for i := 0; i < n; i++ {
		u, v, w := rng.Float64(), rng.Float64(), rng.Float64()
		x := make([]float64, points)
		for j, wn := range axis {
			x[j] = 1000 + 200*u*math.Exp(-(wn-1000)*(wn-1000)/5000) + 150*v*math.Exp(-(wn-1450)*(wn-1450)/8000) +
				100*w*math.Exp(-(wn-2900)*(wn-2900)/3000) + 2*rng.NormFloat64()
		}
		ds.AppendRow(fmt.Sprintf("S%05d", i), x, []float64{1 + u, 2 + v - w, 3 + w + 0.01*rng.NormFloat64()})
	}
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Folds: 5, Components: 6, Wavenumbers: axis,
		Regions:       [][2]float64{{600, 1800}, {2800, 3100}},
		Preprocessing: preprocess.Recipe{{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1}, {Kind: preprocess.SNV}},
	}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	res.Params.Meta.Version = "pls-review-2000"
	return Model{Entry: registry.Entry{Version: "pls-review-2000", Status: registry.StatusStaged}, Params: res.Params}
}

// BenchmarkRender2000Trained is the cost of the review page of a model
// trained here on 2000 rows of 2048 points (two regions, a recipe, six
// components): every figure of the review, the scores, weights and
// loadings included. page-bytes is the page's size.
func BenchmarkRender2000Trained(b *testing.B) {
	m := trainedModelOf(b, 2000)
	var size int
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		if err := Render(&buf, m); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	if page := render(b, m); sectionSVGs(page, SectionWeights) != 2 || sectionSVGs(page, SectionScores) != 1 || sectionSVGs(page, SectionVIP) != 1 {
		b.Fatal("the page lacks a figure of the review")
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// TestDecimateKeepsSpikes: a 2048-point spectrum with one spike is drawn
// with at most about maxLinePoints points, the spike among them.
func TestDecimateKeepsSpikes(t *testing.T) {
	pts := make(plotter.XYs, 2048)
	for i := range pts {
		pts[i] = plotter.XY{X: float64(i), Y: math.Sin(float64(i) / 50)}
	}
	pts[1234].Y = 40
	got := decimate(pts)
	if len(got) > maxLinePoints+2 || got[0] != pts[0] || got[len(got)-1] != pts[len(pts)-1] {
		t.Fatalf("%d points, ends %v %v", len(got), got[0], got[len(got)-1])
	}
	spike := false
	for i, p := range got {
		spike = spike || p == pts[1234]
		if i > 0 && p.X <= got[i-1].X {
			t.Fatalf("points out of order at %d", i)
		}
	}
	if !spike {
		t.Error("the spike was thinned away")
	}
}

// FuzzRenderReviewFigures: whatever a model file's scores, rotations,
// labels and kept spectra hold (huge, tiny, infinite, NaN), and whatever
// pair of components and analyte the query names, the page renders, or
// refuses the pair with ErrScoresNotInModel; it never fails otherwise,
// panics or hangs.
func FuzzRenderReviewFigures(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, 4.0, 1, 2, uint8(0))
	f.Add(math.Inf(1), math.NaN(), -1e308, 1e308, 3, 1, uint8(2))
	f.Add(0.0, 5e-324, 0.0, -0.0, 0, 0, uint8(9))
	f.Add(1e300, -1e300, 1e-300, 1e300, 2, 2, uint8(1))
	base := trainedModel(f)
	f.Fuzz(func(t *testing.T, score, rotation, measured, spectrum float64, x, y int, color uint8) {
		p := *base.Params
		rv := *p.Review
		p.Review = &rv
		rv.Scores = mat.DenseCopyOf(base.Params.Review.Scores)
		rv.Measured = mat.DenseCopyOf(base.Params.Review.Measured)
		rv.RawSpectra = mat.DenseCopyOf(base.Params.Review.RawSpectra)
		p.Rotations = mat.DenseCopyOf(base.Params.Rotations)
		rv.Scores.Set(7, 1, score)
		p.Rotations.Set(11, 0, rotation)
		rv.Measured.Set(3, 0, measured)
		rv.RawSpectra.Set(2, 17, spectrum)
		m := Model{Entry: base.Entry, Params: &p, Scores: ScoresChoice{X: x, Y: y, Color: inference.Analyte(color % 4), HasColor: color%5 != 0}}
		start := time.Now()
		err := Render(io.Discard, m)
		if err != nil && !errors.Is(err, ErrScoresNotInModel) {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("render took %v", d)
		}
	})
}
