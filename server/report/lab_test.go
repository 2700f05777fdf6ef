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

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

// labReport builds a report of n lab results in batches of perBatch,
// one a minute, for the version (active, reading 1.5 g/L high on EPA and
// drifting upwards from batch to batch) and one other version (shadow).
// batchID names each batch.
func labReport(n, perBatch int, batchID func(b int) string) reconcile.Report {
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	var pred, pred2, lab [inference.NumAnalytes][]float64
	type acc struct {
		sum [inference.NumAnalytes]float64
	}
	var batches []reconcile.BatchBias
	var cur acc
	flush := func(b, size int) {
		bb := reconcile.BatchBias{BatchID: batchID(b), FirstSampleAt: t0.Add(time.Duration(b*perBatch) * time.Minute)}
		for a := range inference.Analyte(inference.NumAnalytes) {
			bias := cur.sum[a] / float64(size)
			bb.Analytes = append(bb.Analytes, reconcile.BatchAnalyteBias{Analyte: a, N: size, Bias: &bias})
		}
		batches = append(batches, bb)
		cur = acc{}
	}
	for i := range n {
		b := i / perBatch
		for a := range inference.Analyte(inference.NumAnalytes) {
			y := 150 + 60*rng.Float64()
			e := 1.5 + 0.02*float64(b) + rng.NormFloat64()*0.8
			lab[a] = append(lab[a], y)
			pred[a] = append(pred[a], y+e)
			pred2[a] = append(pred2[a], y+rng.NormFloat64()*0.5)
			cur.sum[a] += e
		}
		if (i+1)%perBatch == 0 || i == n-1 {
			flush(b, i-b*perBatch+1)
		}
	}
	stats := func(version string, role predlog.Role, pred [inference.NumAnalytes][]float64) reconcile.VersionStats {
		vs := reconcile.VersionStats{Version: version, Roles: []predlog.Role{role}}
		for a := range inference.Analyte(inference.NumAnalytes) {
			vs.Analytes = append(vs.Analytes, reconcile.AnalyteStats{Analyte: a, Stats: reconcile.Statistics(pred[a], lab[a]), Predicted: pred[a], Lab: lab[a]})
		}
		return vs
	}
	rep := reconcile.Report{Samples: n, Version: stats("pls-20261123-100000", predlog.RoleActive, pred), Others: []reconcile.VersionStats{stats("cand-2", predlog.RoleShadow, pred2)}}
	rep.Version.Batches = batches
	return rep
}

func withLab(m Model, ev *LabEvidence) Model {
	m.Lab = ev
	return m
}

func labSection(page string) string {
	start := strings.Index(page, `<section id="`+SectionLab+`"`)
	if start < 0 {
		return ""
	}
	end := strings.Index(page[start:], "</section>")
	return page[start : start+end]
}

func TestRenderLabSectionDrawsScatterAndControlChart(t *testing.T) {
	rep := labReport(120, 6, func(b int) string { return fmt.Sprintf("B-%03d", b) })
	page := render(t, withLab(fixture(50, allTargets(), func(i int) string { return fmt.Sprint(i) }), &LabEvidence{Report: rep}))
	assertSelfContained(t, page)
	if got := sectionSVGs(page, SectionLab); got != 6 {
		t.Errorf("lab section: %d plots with paths, want 6 (3 scatter, 3 control charts)", got)
	}
	sec := labSection(page)
	for _, id := range []string{"lab-EPA", "lab-DHA", "lab-DPA", "bias-EPA", "bias-DHA", "bias-DPA"} {
		if !strings.Contains(sec, `<figure id="`+id+`"`) {
			t.Errorf("lab section lacks figure %s", id)
		}
	}
	// The table: the version's row first and marked, then the other's.
	epa := rep.Version.Analytes[inference.EPA]
	for _, want := range []string{
		"120 lab results matched", "in 20 batches", "cand-2", "shadow",
		`<tr class="this"><td class="id">pls-20261123-100000</td><td>active</td><td>EPA</td><td class="num">120</td><td class="num">` + num(*epa.RMSEP) + `</td><td class="num">` + num(*epa.Bias) + `</td><td class="num">` + num(*epa.Slope) + `</td><td class="num">` + num(*epa.Intercept) + `</td>`,
		"1:1", "mean ", "control limits", "2.66 × the mean moving range",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("lab section lacks %q", want)
		}
	}
	// Twenty batches: the axis counts them rather than naming them.
	if strings.Contains(sec, ">B-005<") {
		t.Error("20 batches are named on the axis")
	}
}

// The identity line is drawn from the lower to the upper end of both
// axes' data; the control chart has its zero line. Both show up as
// dashed or solid paths with the guide colour.
func TestRenderLabFiguresHaveGuides(t *testing.T) {
	rep := labReport(12, 3, func(b int) string { return fmt.Sprintf("B%d", b) })
	page := render(t, withLab(fixture(20, allTargets(), func(i int) string { return fmt.Sprint(i) }), &LabEvidence{Report: rep}))
	sec := labSection(page)
	fig := func(id string) string {
		s := sec[strings.Index(sec, `<figure id="`+id+`"`):]
		return s[:strings.Index(s, "</figure>")]
	}
	// guideColor is #555555 in vgsvg's style attribute.
	for _, id := range []string{"lab-EPA", "bias-EPA"} {
		if !strings.Contains(fig(id), "stroke:#555555") {
			t.Errorf("%s has no guide line", id)
		}
	}
	// Four batches: their ids are on the axis.
	for b := range 4 {
		if !strings.Contains(fig("bias-DHA"), fmt.Sprintf(">B%d<", b)) {
			t.Errorf("batch B%d is not named under the control chart", b)
		}
	}
}

func TestRenderLabSectionWithoutResults(t *testing.T) {
	base := fixture(20, allTargets(), func(i int) string { return fmt.Sprint(i) })
	page := render(t, base)
	if strings.Contains(page, `id="`+SectionLab+`"`) {
		t.Error("a page without lab evidence has a lab section")
	}
	page = render(t, withLab(base, &LabEvidence{}))
	sec := labSection(page)
	if sec == "" || !strings.Contains(sec, "No lab result is matched") || strings.Contains(sec, "<svg") || strings.Contains(sec, "<table") {
		t.Errorf("a version without lab results: section %q", sec)
	}
	page = render(t, withLab(base, &LabEvidence{Unavailable: "too many <b>lab</b> results"}))
	sec = labSection(page)
	if !strings.Contains(sec, "too many &lt;b&gt;lab&lt;/b&gt; results") || strings.Contains(sec, "<svg") {
		t.Errorf("unavailable: section %q", sec)
	}
}

func TestRenderLabSectionEscapesBatchIDs(t *testing.T) {
	rep := labReport(30, 3, func(b int) string { return hostile + fmt.Sprint(b) })
	rep.Others[0].Version = hostile
	page := render(t, withLab(fixture(20, allTargets(), func(i int) string { return fmt.Sprint(i) }), &LabEvidence{Report: rep}))
	assertSelfContained(t, page)
	if strings.Contains(page, "<script>alert") || strings.Contains(page, `onerror="alert`) {
		t.Fatal("a hostile batch id or version reached the page unescaped")
	}
	if sectionSVGs(page, SectionLab) != 6 {
		t.Error("plots missing")
	}
}

// A version with values for some analytes only, one pair (no slope), and
// degenerate or non-finite values still renders; what cannot be drawn is
// left out.
func TestRenderLabSectionDegenerate(t *testing.T) {
	one := 2.0
	rep := reconcile.Report{Samples: 1, Version: reconcile.VersionStats{Version: "v", Roles: []predlog.Role{predlog.RoleRescore},
		Analytes: []reconcile.AnalyteStats{
			{Analyte: inference.EPA, Stats: reconcile.Statistics([]float64{5}, []float64{3}), Predicted: []float64{5}, Lab: []float64{3}},
			{Analyte: inference.DHA},
			{Analyte: inference.DPA, Stats: reconcile.Statistics([]float64{math.Inf(1), 4}, []float64{1, math.NaN()}), Predicted: []float64{math.Inf(1), 4}, Lab: []float64{1, math.NaN()}},
		},
		Batches: []reconcile.BatchBias{{BatchID: "B", Analytes: []reconcile.BatchAnalyteBias{{Analyte: inference.EPA, N: 1, Bias: &one}}}},
	}}
	page := render(t, withLab(fixture(20, allTargets(), func(i int) string { return fmt.Sprint(i) }), &LabEvidence{Report: rep}))
	sec := labSection(page)
	if !strings.Contains(sec, `<figure id="lab-EPA"`) || !strings.Contains(sec, `<figure id="bias-EPA"`) || strings.Contains(sec, `id="lab-DHA"`) {
		t.Errorf("degenerate lab section: figures %q", sec)
	}
	if !strings.Contains(sec, "<td>rescore</td><td>EPA</td><td class=\"num\">1</td>") {
		t.Error("the one pair is not in the table")
	}
}

// The page's bounds hold with the lab section at reconcile's limit:
// MaxReportSamples pairs, one batch each.
func TestRenderLabSectionIsBounded(t *testing.T) {
	rep := labReport(reconcile.MaxReportSamples, 1, func(b int) string { return fmt.Sprintf("batch-%06d", b) })
	for range 40 {
		rep.Others = append(rep.Others, rep.Others[0])
	}
	m := withLab(fixture(2000, allTargets(), func(i int) string { return fmt.Sprintf("scan-%05d", i) }), &LabEvidence{Report: rep})
	page := render(t, m)
	sec := labSection(page)
	if sectionSVGs(page, SectionLab) != 6 {
		t.Fatal("plots missing")
	}
	if !strings.Contains(sec, fmt.Sprintf("the %d most recent of %d batches", MaxBatchPoints, reconcile.MaxReportSamples)) ||
		!strings.Contains(sec, "and 21 more versions") || !strings.Contains(sec, fmt.Sprintf("draw %d of up to %d pairs", MaxLabPlotPoints, reconcile.MaxReportSamples)) {
		t.Error("the section does not say what it left out")
	}
	if len(sec) > 1<<20 {
		t.Errorf("lab section is %d bytes", len(sec))
	}
	t.Logf("lab section at %d pairs, %d batches: %d bytes; page %d bytes", reconcile.MaxReportSamples, reconcile.MaxReportSamples, len(sec), len(page))
}

// BenchmarkRender2000WithLab is BenchmarkRender2000 with a lab section of
// 2000 matched results in 100 batches.
func BenchmarkRender2000WithLab(b *testing.B) {
	m := withLab(fixture(2000, allTargets(), func(i int) string { return fmt.Sprintf("scan-%05d", i) }),
		&LabEvidence{Report: labReport(2000, 20, func(b int) string { return fmt.Sprintf("B-%03d", b) })})
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

// A batch whose bias jumps is outside the individuals chart's limits:
// eight batches at 0, one at 5 g/L give a centre of 5/9, a mean moving
// range of 5/8 and limits 2.66 × 5/8 either side; only the jump is out.
func TestControlChartFlagsTheBatchOutOfControl(t *testing.T) {
	var batches []reconcile.BatchBias
	for b := range 9 {
		bias := 0.0
		if b == 8 {
			bias = 5
		}
		batches = append(batches, reconcile.BatchBias{BatchID: fmt.Sprint("B", b),
			Analytes: []reconcile.BatchAnalyteBias{{Analyte: inference.DHA, N: 2, Bias: &bias}}})
	}
	fig, note, err := biasControlFigure(inference.DHA, batches)
	if err != nil || fig == nil || note != "" {
		t.Fatalf("%v %v %q", fig, err, note)
	}
	if want := "± " + num(2.66*5.0/8) + " g/L); 1 outside them"; !strings.Contains(fig.Caption, want) {
		t.Errorf("caption %q lacks %q", fig.Caption, want)
	}
	// The batch out of control is named beside its point as well as
	// under the axis.
	if got := strings.Count(string(fig.SVG), ">B8</text>"); got != 2 {
		t.Errorf("batch B8 is written %d times in the chart, want 2 (axis and point)", got)
	}
	if fig, _, _ := biasControlFigure(inference.EPA, batches); fig != nil {
		t.Error("a chart for an analyte without pairs")
	}
}

// TestControlChartNamesBatchesWithoutOverlap: a chart of 100 batches
// names one batch in 9 under its axis, the first among them, and no
// more than maxNamedBatches.
func TestControlChartNamesBatchesWithoutOverlap(t *testing.T) {
	var batches []reconcile.BatchBias
	for b := range 100 {
		bias := math.Sin(float64(b))
		batches = append(batches, reconcile.BatchBias{BatchID: fmt.Sprintf("LOT-%03d", b),
			Analytes: []reconcile.BatchAnalyteBias{{Analyte: inference.EPA, N: 2, Bias: &bias}}})
	}
	fig, _, err := biasControlFigure(inference.EPA, batches)
	if err != nil || fig == nil {
		t.Fatal(fig, err)
	}
	named := regexp.MustCompile(`>LOT-\d{3}</text>`).FindAllString(string(fig.SVG), -1)
	if len(named) == 0 || len(named) > maxNamedBatches || named[0] != ">LOT-000</text>" || !strings.Contains(fig.Caption, "one batch in 9 named") {
		t.Errorf("%d batch names %v, caption %q", len(named), named, fig.Caption)
	}
}

// FuzzRenderLabSection: whatever figures the log and the lab hold (huge,
// tiny, infinite, NaN, one batch or two), the section renders without an
// error or a panic.
func FuzzRenderLabSection(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, 4.0, 0.5, uint8(3))
	f.Add(math.Inf(1), math.NaN(), -1e308, 1e308, 5e-324, uint8(1))
	f.Add(0.0, 0.0, 0.0, 0.0, 0.0, uint8(0))
	f.Add(1e300, -1e300, 1e300, -1e300, 1e300, uint8(2))
	base := fixture(5, allTargets(), func(i int) string { return fmt.Sprint(i) })
	f.Fuzz(func(t *testing.T, p0, l0, p1, l1, bias float64, batches uint8) {
		pred, lab := []float64{p0, p1, p0 + p1}, []float64{l0, l1, l0 - l1}
		st := reconcile.Statistics(pred, lab)
		vs := reconcile.VersionStats{Version: "v", Roles: []predlog.Role{predlog.RoleActive},
			Analytes: []reconcile.AnalyteStats{{Analyte: inference.EPA, Stats: st, Predicted: pred, Lab: lab}}}
		for b := range int(batches % 8) {
			x := bias * float64(b%3-1)
			vs.Batches = append(vs.Batches, reconcile.BatchBias{BatchID: fmt.Sprint(b),
				Analytes: []reconcile.BatchAnalyteBias{{Analyte: inference.EPA, N: 1, Bias: &x}}})
		}
		var buf bytes.Buffer
		if err := Render(&buf, withLab(base, &LabEvidence{Report: reconcile.Report{Samples: 3, Version: vs}})); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), `<section id="`+SectionLab+`"`) {
			t.Fatal("no lab section")
		}
	})
}
