package report

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/registry"
)

// hostile is a string that would break out of every context it could be
// written into: an element, an attribute, a style, an SVG text.
const hostile = `</td></svg></style><script>alert(1)</script><img src=x onerror="alert(2)">'"&`

// fixture builds a trained-looking model of n rows over the 2048-point
// default axis, with two regions and a recipe, whose review has a few
// rows beyond each limit.
func fixture(n int, targets []inference.Analyte, scanID func(i int) string) Model {
	rng := rand.New(rand.NewPCG(1, 2))
	axis := make([]float64, 2048)
	for i := range axis {
		axis[i] = 200 + 3000*float64(i)/2047
	}
	regions := [][2]float64{{600, 1800}, {2800, 3100}}
	sel := selectedPoints(axis, regions)
	p, q := len(sel), len(targets)
	coef := mat.NewDense(p, q, nil)
	xscale := make([]float64, p)
	for i := range p {
		xscale[i] = 1
		for j := range q {
			coef.Set(i, j, math.Sin(axis[sel[i]]/(50+20*float64(j)))*1e-3)
		}
	}
	meas, pred, stud := mat.NewDense(n, q, nil), mat.NewDense(n, q, nil), mat.NewDense(n, q, nil)
	t2, qq, ids := make([]float64, n), make([]float64, n), make([]string, n)
	for i := range n {
		ids[i] = scanID(i)
		for j := range q {
			y := 5 + 10*rng.Float64()
			e := rng.NormFloat64() * 0.5
			meas.Set(i, j, y)
			pred.Set(i, j, y+e)
			stud.Set(i, j, e/0.5)
		}
		t2[i] = rng.ExpFloat64() * 4
		qq[i] = rng.ExpFloat64() * 0.1
	}
	var curve []inference.CVPoint
	for a := 1; a <= 12; a++ {
		pt := inference.CVPoint{Components: a, Score: 1 / float64(a)}
		for j := range q {
			pt.RMSECV = append(pt.RMSECV, 0.4+3/float64(a)+0.01*float64(j))
			pt.R2CV = append(pt.R2CV, 1-1/float64(a))
		}
		curve = append(curve, pt)
	}
	params := &inference.PLSParams{
		Meta:    inference.Metadata{Algorithm: "PLS2-NIPALS", LatentComponents: 7, TrainedAt: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), Wavenumbers: axis},
		Targets: targets,
		Preprocessing: preprocess.Recipe{
			{Kind: preprocess.Despike, Threshold: 6, Width: 2},
			{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1},
			{Kind: preprocess.SNV},
		},
		Regions:   regions,
		XMean:     make([]float64, p),
		XScale:    xscale,
		Coef:      coef,
		Intercept: make([]float64, q),
		Review: &inference.Review{
			Selection:            inference.ComponentSelection{Components: 7, Rule: inference.RuleOneStandardError, MaxComponents: 12, Folds: 10, MinScoreComponents: 9},
			CVCurve:              curve,
			ScanIDs:              ids,
			Measured:             meas,
			CVPredicted:          pred,
			T2:                   t2,
			Q:                    qq,
			T2Limit:              12,
			QLimit:               0.3,
			StudentizedResiduals: stud,
			SpikesRepaired:       17,
			SpectraDespiked:      9,
			ExcludedScanIDs:      []string{"x-1", hostile},
		},
	}
	return Model{
		Entry: registry.Entry{
			Version: "pls-20261123-100000", Status: registry.StatusStaged, File: "models/pls-20261123-100000.npz",
			SizeBytes: 123456, SHA256: strings.Repeat("ab", 32), Operator: "op", SourceBatches: []string{"B1", "B2"},
			Notes: "n", JobID: "job-1", TrainingCSVSHA256: strings.Repeat("cd", 32), TrainingRows: n + 2,
		},
		Params: params,
	}
}

func allTargets() []inference.Analyte {
	return []inference.Analyte{inference.EPA, inference.DHA, inference.DPA}
}

func render(t testing.TB, m Model) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// sectionSVGs counts the <svg> elements with at least one non-empty path
// inside the element with the given id.
func sectionSVGs(page, id string) int {
	start := strings.Index(page, `<section id="`+id+`"`)
	if start < 0 {
		return 0
	}
	end := strings.Index(page[start:], "</section>")
	sec := page[start : start+end]
	n := 0
	for _, svg := range strings.Split(sec, "<svg")[1:] {
		if regexp.MustCompile(`<path d="M[^"]+"`).MatchString(svg) {
			n++
		}
	}
	return n
}

func TestRenderTrainedModelHasEveryPlot(t *testing.T) {
	page := render(t, fixture(200, allTargets(), func(i int) string { return fmt.Sprintf("S%04d", i) }))
	for id, want := range map[string]int{SectionCV: 3, SectionMeasured: 3, SectionResiduals: 3, SectionVectors: 3, SectionT2Q: 1} {
		if got := sectionSVGs(page, id); got != want {
			t.Errorf("section %s: %d plots with paths, want %d", id, got, want)
		}
	}
	for _, id := range []string{SectionOutliers, SectionLineage, SectionRecipe} {
		if !strings.Contains(page, `<section id="`+id+`"`) {
			t.Errorf("section %s missing", id)
		}
	}
	for _, want := range []string{"savgol", "window 15, polyorder 2, deriv 1", "600–1800, 2800–3100", "one standard error", "17 points in 9 spectra", "job-1"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "not in this model") || strings.Contains(page, `id="missing"`) {
		t.Error("a trained model's page says something is missing")
	}
	assertSelfContained(t, page)
}

// assertSelfContained fails on anything that could run or fetch.
func assertSelfContained(t *testing.T, page string) {
	t.Helper()
	lower := strings.ToLower(page)
	for _, bad := range []string{"<script", "http:", "https:", "url(", "@import", "@font-face", "<img", "<link", "xlink:href", `onerror="`, "javascript:"} {
		if strings.Contains(lower, bad) {
			i := strings.Index(lower, bad)
			t.Errorf("page contains %q: …%s…", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
}

func TestRenderEscapesHostileStrings(t *testing.T) {
	m := fixture(60, allTargets(), func(i int) string { return hostile + fmt.Sprint(i) })
	m.Entry.Operator, m.Entry.Notes, m.Entry.SourceBatches = hostile, hostile, []string{hostile}
	m.Entry.Version = "v1"
	// Every row an outlier, so labels and the table hold hostile ids.
	for i := range m.Params.Review.T2 {
		m.Params.Review.T2[i] = 100 + float64(i)
	}
	page := render(t, m)
	assertSelfContained(t, page)
	if strings.Contains(page, "<script>alert") || strings.Contains(page, `onerror="alert`) {
		t.Fatal("a hostile string reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile string is not shown escaped")
	}
	if got := sectionSVGs(page, SectionT2Q); got != 1 {
		t.Errorf("T2/Q plot missing: %d", got)
	}
	// At most MaxOutlierLabels labels in the plot.
	sec := page[strings.Index(page, `<section id="t2-q"`):]
	sec = sec[:strings.Index(sec, "</section>")]
	if n := strings.Count(sec, "&lt;/td&gt;"); n != MaxOutlierLabels {
		t.Errorf("%d outlier labels in the T2/Q plot, want %d", n, MaxOutlierLabels)
	}
}

func TestRenderImportWithoutReviewSaysWhatIsMissing(t *testing.T) {
	m := fixture(10, []inference.Analyte{inference.DHA}, func(i int) string { return fmt.Sprint(i) })
	m.Params.Review = nil
	m.Params.Preprocessing, m.Params.Regions = nil, nil
	// An import: no axis recorded, the coefficients over 2048 features.
	m.Params.Meta.Wavenumbers = nil
	m.Params.Coef = mat.NewDense(2048, 1, nil)
	for i := range 2048 {
		m.Params.Coef.Set(i, 0, math.Cos(float64(i)/40))
	}
	m.Params.XMean, m.Params.XScale = make([]float64, 2048), make([]float64, 2048)
	for i := range m.Params.XScale {
		m.Params.XScale[i] = 2
	}
	m.Entry = registry.Entry{Version: "imported-1", Status: registry.StatusArchived, ImportedFrom: "/import/m.joblib", Target: "DHA", Algorithm: "sklearn.PLSRegression"}
	page := render(t, m)
	assertSelfContained(t, page)
	if !strings.Contains(page, `id="missing"`) || !strings.Contains(page, "cross-validation curve") {
		t.Error("the page does not say what is missing")
	}
	if got := sectionSVGs(page, SectionVectors); got != 1 {
		t.Errorf("regression vectors: %d plots, want 1", got)
	}
	for _, id := range []string{SectionCV, SectionMeasured, SectionResiduals, SectionT2Q} {
		if strings.Contains(page, `<section id="`+id+`"`) {
			t.Errorf("section %s shown for a model without a review", id)
		}
	}
	for _, want := range []string{"feature index", "No preprocessing", "/import/m.joblib", "not recorded in the model file"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// A model whose file holds NaN figures and a review whose matrices do not
// match its targets still renders (what cannot be drawn is left out).
func TestRenderToleratesInconsistentReview(t *testing.T) {
	m := fixture(30, allTargets(), func(i int) string { return fmt.Sprint(i) })
	rv := m.Params.Review
	rv.Measured = mat.NewDense(30, 1, nil)
	rv.T2[3] = math.NaN()
	rv.Q = rv.Q[:5]
	rv.CVCurve[2].RMSECV = nil
	rv.StudentizedResiduals = nil
	page := render(t, m)
	if sectionSVGs(page, SectionCV) != 3 || sectionSVGs(page, SectionVectors) != 3 {
		t.Error("the consistent parts are not drawn")
	}
	if !strings.Contains(page, "no T² and Q") || !strings.Contains(page, "no cross-validated predictions") {
		t.Error("the page does not say what it could not draw")
	}
}

func TestRender2000RowsIsBounded(t *testing.T) {
	m := fixture(2000, allTargets(), func(i int) string { return fmt.Sprintf("scan-%05d", i) })
	page := render(t, m)
	if sectionSVGs(page, SectionT2Q) != 1 || sectionSVGs(page, SectionMeasured) != 3 {
		t.Fatal("plots missing")
	}
	// A correctness bound with a wide margin; the figure is the benchmark's.
	if len(page) > 4<<20 {
		t.Errorf("page is %d bytes for 2000 rows", len(page))
	}
	t.Logf("2000 rows x 3 analytes: page %d bytes", len(page))
}

// BenchmarkRender2000 renders the page of a 2000-row, 3-analyte training
// set with two regions (the size docs/performance.md quotes).
func BenchmarkRender2000(b *testing.B) {
	m := fixture(2000, allTargets(), func(i int) string { return fmt.Sprintf("scan-%05d", i) })
	var size int
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		if err := Render(&buf, m); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// Degenerate figures (all zero, negative limits) still draw a page.
func TestRenderDegenerateFigures(t *testing.T) {
	m := fixture(20, allTargets(), func(i int) string { return fmt.Sprint(i) })
	rv := m.Params.Review
	for i := range rv.T2 {
		rv.T2[i], rv.Q[i] = 0, 0
	}
	rv.T2Limit, rv.QLimit = -1, math.Inf(1)
	m.Params.Coef.Zero()
	page := render(t, m)
	if sectionSVGs(page, SectionT2Q) != 1 || sectionSVGs(page, SectionVectors) != 3 {
		t.Error("degenerate figures are not drawn")
	}
}

// FuzzRenderExtremeFigures: whatever figures a model file holds (huge,
// tiny, infinite, NaN), the page renders without an error or a panic.
func FuzzRenderExtremeFigures(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, 4.0, 5.0, "S1")
	f.Add(math.Inf(1), math.NaN(), -1e308, 1e308, 5e-324, "</svg>")
	f.Add(0.0, 0.0, 0.0, 0.0, 0.0, "")
	base := fixture(12, allTargets(), func(i int) string { return fmt.Sprint(i) })
	f.Fuzz(func(t *testing.T, t2lim, qlim, coef, meas, t2 float64, id string) {
		m := base
		p := *base.Params
		rv := *p.Review
		p.Review = &rv
		p.Coef = mat.DenseCopyOf(base.Params.Coef)
		rv.Measured = mat.DenseCopyOf(base.Params.Review.Measured)
		rv.T2 = append([]float64(nil), base.Params.Review.T2...)
		rv.ScanIDs = append([]string(nil), base.Params.Review.ScanIDs...)
		rv.T2Limit, rv.QLimit = t2lim, qlim
		p.Coef.Set(5, 1, coef)
		rv.Measured.Set(3, 0, meas)
		rv.T2[4], rv.ScanIDs[4] = t2, id
		m.Params = &p
		var buf bytes.Buffer
		start := time.Now()
		if err := Render(&buf, m); err != nil {
			t.Fatal(err)
		}
		// A correctness bound: a page that takes seconds is a hang.
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("render took %v", d)
		}
	})
}

// TestRenderEveryRowAnOutlierIsBounded: outliers are always drawn, but a
// model file whose every row is beyond the limits (a review.json with a
// tiny T2 limit, 100,000 rows) must not draw them all: the T2/Q plot
// keeps the MaxPlotPoints/2 most extreme, so the page stays the size of a
// thinned one.
func TestRenderEveryRowAnOutlierIsBounded(t *testing.T) {
	const n = 100000
	m := fixture(n, allTargets(), func(i int) string { return fmt.Sprintf("scan-%05d", i) })
	m.Params.Review.T2Limit = 1e-9
	page := render(t, m)
	if sectionSVGs(page, SectionT2Q) != 1 {
		t.Fatal("T2/Q plot missing")
	}
	if len(page) > 5<<20 {
		t.Errorf("page is %d bytes for %d rows that are all outliers", len(page), n)
	}
	t.Logf("%d rows, all outliers: page %d bytes", n, len(page))
}
