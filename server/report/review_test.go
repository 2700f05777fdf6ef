package report

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"ramanserve/registry"
	"ramanserve/trainer"
)

// trainedModel trains a small three-analyte model with regions, so that
// the page has every figure trainer/review computes.
func trainedModel(t *testing.T) Model {
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
	for id, want := range map[string]int{SectionVIP: 1, SectionInfluence: 3, SectionCV: 3, SectionScores: 1} {
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
	for _, want := range []string{summaryErrorKey, "log scale", "VIP = 1"} {
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
