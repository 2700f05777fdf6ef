package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/review"
)

// Section ids of the review's figures (trainer/review's numbers, which
// GET /model/{version}/review serves as JSON).
const (
	SectionComponents = "components"
	SectionVIP        = "vip"
	SectionInfluence  = "influence"
	SectionWeights    = "weights-loadings"
)

// weightComponents is how many components the weights and loadings
// plots draw: the first ones, which carry most of X.
const weightComponents = 3

// componentTable is R²X, R²X cumulative, R²Y and Q² per component.
type componentTable struct {
	Targets []string
	Rows    []componentRow
}

type componentRow struct {
	Components         int
	R2X, R2XCumulative string
	R2Y, Q2            []string
	Chosen             bool
}

// addFigures draws the review's numbers: the component table, VIP and
// the influence plots. A model whose file cannot give them (imported,
// adopted) says so in Missing instead.
func (v *view) addFigures(p *inference.PLSParams, scores ScoresChoice) error {
	figs, err := review.Compute(p)
	switch {
	case errors.Is(err, review.ErrNoTrainingRecord):
		return nil
	case err != nil:
		v.Missing = append(v.Missing, "The variable importance, the explained variance per component and the leverages cannot be computed from the model's file: "+err.Error())
		return nil
	}
	v.setCalibrationError(p, figs.RMSEC)
	v.Components = newComponentTable(p.Targets, figs)
	if v.VIP, err = vipFigure(figs); err != nil {
		return err
	}
	if v.Scores, err = scoresFigure(p, scores); err != nil {
		return err
	}
	if v.Weights, err = weightFigures(p, figs); err != nil {
		return err
	}
	v.Influence, err = influenceFigures(p.Targets, p.Review, figs)
	return err
}

func newComponentTable(targets []inference.Analyte, figs *review.Figures) *componentTable {
	t := &componentTable{Targets: names(targets)}
	last := len(figs.Components)
	for _, c := range figs.Components {
		r := componentRow{Components: c.Components, R2X: num(c.R2X), R2XCumulative: num(c.R2XCumulative), Chosen: c.Components == last}
		for j := range targets {
			r.R2Y = append(r.R2Y, numAt(c.R2Y, j))
			r.Q2 = append(r.Q2, numAt(c.Q2, j))
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// vipFigure draws VIP over the wavenumbers the model uses, with the 1.0
// line: the mean of VIP² is 1, so a variable above it weighs more than
// the average one.
func vipFigure(figs *review.Figures) (*figure, error) {
	var pts plotter.XYs
	for j, w := range figs.Wavenumbers {
		pts = append(pts, plotter.XY{X: w, Y: figs.VIP[j]})
	}
	pts = finite(pts)
	if len(pts) == 0 {
		return nil, nil
	}
	p := newPlot("Variable importance in the projection", "wavenumber (cm⁻¹)", "VIP")
	xlo, xhi := xRange(pts)
	one, err := segment(xlo, 1, xhi, 1, limitColor, true)
	if err != nil {
		return nil, err
	}
	p.Add(one)
	p.Legend.Add("VIP = 1", one)
	p.Y.Min = 0
	// Points the regions leave out are not joined across the gap.
	for _, run := range contiguousRuns(pts) {
		line, err := plotter.NewLine(run)
		if err != nil {
			return nil, err
		}
		line.Color = colorOf(inference.EPA)
		p.Add(line)
	}
	svg, err := toSVGSized(p, wideWidth, plotHeight)
	if err != nil {
		return nil, err
	}
	above := 0
	for _, v := range figs.VIP {
		if v > 1 {
			above++
		}
	}
	return &figure{ID: "vip-plot", SVG: svg, Caption: fmt.Sprintf(
		"%d of %d variables above 1. VIP_j = sqrt(p Σ_a SS_a (w_ja/‖w_a‖)² / Σ_a SS_a), SS_a the unit-variance Y variance component a explains.",
		above, len(figs.VIP))}, nil
}

// componentColors tell the first components apart in the weights and
// loadings plots (none of them an analyte's or a limit's colour).
var componentColors = [weightComponents]color.RGBA{
	{R: 0x44, G: 0x01, B: 0x54, A: 0xff},
	{R: 0x21, G: 0x90, B: 0x8d, A: 0xff},
	{R: 0x9a, G: 0x6a, B: 0x00, A: 0xff},
}

// weightFigures draws the X weights w_a and the X loadings p_a of the
// first weightComponents components over the wavenumbers the model uses,
// the excluded regions shaded: where on the spectrum each component
// looks (weights) and what of the spectrum it takes away (loadings).
func weightFigures(p *inference.PLSParams, figs *review.Figures) ([]figure, error) {
	var out []figure
	for _, set := range []struct {
		id, title, ylabel string
		vectors           [][]float64
	}{
		{"weights-plot", "X weights", "weight w (unit length)", figs.XWeights},
		{"loadings-plot", "X loadings", "loading p (" + xUnit(p) + ")", figs.XLoadings},
	} {
		k := min(len(set.vectors), weightComponents)
		if k == 0 || len(set.vectors[0]) != len(figs.Wavenumbers) {
			continue
		}
		x, runs, excluded, unit := modelAxis(p, len(set.vectors[0]))
		pl := newPlot(fmt.Sprintf("%s of components 1 to %d", set.title, k), unit, set.ylabel)
		var all plotter.XYs
		var lines []plot.Plotter
		for c := range k {
			first := true
			for _, r := range runs {
				var pts plotter.XYs
				for i := r[0]; i < r[1]; i++ {
					pts = append(pts, plotter.XY{X: x[i], Y: set.vectors[c][i]})
				}
				if pts = finite(pts); len(pts) == 0 {
					continue
				}
				all = append(all, pts...)
				l, err := plotter.NewLine(pts)
				if err != nil {
					return nil, err
				}
				l.Color = componentColors[c]
				l.Width = vg.Points(1)
				lines = append(lines, l)
				if first {
					pl.Legend.Add(fmt.Sprintf("component %d", c+1), l)
					first = false
				}
			}
		}
		if len(all) == 0 {
			continue
		}
		lo, hi := yRange(all)
		entries := k
		if len(excluded) > 0 {
			entries++
		}
		legendRoom(pl, lo, hi, entries)
		if err := shadeExcluded(pl, excluded, pl.Y.Min, pl.Y.Max); err != nil {
			return nil, err
		}
		pl.Add(lines...)
		svg, err := toSVGSized(pl, wideWidth, plotHeight)
		if err != nil {
			return nil, err
		}
		out = append(out, figure{ID: set.id, SVG: svg, Caption: fmt.Sprintf(
			"%s of the first %d of %d components over the %d wavenumbers the model uses; excluded regions shaded.",
			set.title, k, len(set.vectors), len(figs.Wavenumbers))})
	}
	return out, nil
}

// contiguousRuns splits the points where the gap between neighbouring
// wavenumbers exceeds twice the median spacing (an excluded region).
func contiguousRuns(pts plotter.XYs) []plotter.XYs {
	if len(pts) < 2 {
		return []plotter.XYs{pts}
	}
	gaps := make([]float64, 0, len(pts)-1)
	for i := 1; i < len(pts); i++ {
		gaps = append(gaps, pts[i].X-pts[i-1].X)
	}
	step := median(gaps)
	var runs []plotter.XYs
	start := 0
	for i := 1; i < len(pts); i++ {
		if pts[i].X-pts[i-1].X > 2*step {
			runs = append(runs, pts[start:i])
			start = i
		}
	}
	return append(runs, pts[start:])
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// influenceLeverageFactor times the mean leverage (A+1)/n is the
// leverage limit of the influence plot (Hoaglin & Welsch 1978 use 2 or
// 3 times the mean; 3 flags fewer rows of a small calibration set).
const influenceLeverageFactor = 3

// influenceFigures draws, per analyte, the studentised residual of each
// training row against its leverage, with the residual limits ±3
// (trainer.StudentizedResidualLimit) and the leverage limit
// 3 (A+1)/n: a row beyond both pulls the model towards itself.
func influenceFigures(targets []inference.Analyte, rv *inference.Review, figs *review.Figures) ([]figure, error) {
	if rv == nil || rv.StudentizedResiduals == nil {
		return nil, nil
	}
	n, q := rv.StudentizedResiduals.Dims()
	if n != len(figs.Leverage) || q != len(targets) || n == 0 {
		return nil, nil
	}
	a := len(figs.Components)
	hLimit := influenceLeverageFactor * float64(a+1) / float64(n)
	var out []figure
	for j, t := range targets {
		var normal, flagged plotter.XYs
		for _, i := range thin(n, nil) {
			pt := plotter.XY{X: figs.Leverage[i], Y: rv.StudentizedResiduals.At(i, j)}
			if pt.X > hLimit || math.Abs(pt.Y) > trainer.StudentizedResidualLimit {
				flagged = append(flagged, pt)
			} else {
				normal = append(normal, pt)
			}
		}
		normal, flagged = finite(normal), finite(flagged)
		all := append(append(plotter.XYs{}, normal...), flagged...)
		if len(all) == 0 {
			continue
		}
		p := newPlot(t.String()+": influence", "leverage h", "studentised residual")
		_, xhi := xRange(all)
		ylo, yhi := yRange(all)
		xhi = grow(math.Max(xhi, hLimit), 1.05)
		ylim := trainer.StudentizedResidualLimit
		p.X.Min, p.X.Max = 0, xhi
		p.Y.Min, p.Y.Max = math.Min(ylo, -ylim)*1.05, math.Max(yhi, ylim)*1.05
		if err := addInfluenceLimits(p, hLimit, ylim); err != nil {
			return nil, err
		}
		for _, set := range []struct {
			pts plotter.XYs
			c   bool
		}{{normal, false}, {flagged, true}} {
			if len(set.pts) == 0 {
				continue
			}
			c := colorOf(t)
			if set.c {
				c = outlierColor
			}
			s, err := scatter(set.pts, c)
			if err != nil {
				return nil, err
			}
			p.Add(s)
		}
		svg, err := toSVG(p)
		if err != nil {
			return nil, err
		}
		out = append(out, figure{ID: "influence-" + t.String(), SVG: svg, Caption: fmt.Sprintf(
			"%s. Limits (orange): leverage %s = 3 (A+1)/n, studentised residual ±%g; %d rows beyond one.",
			t.String(), num(hLimit), ylim, len(flagged))})
	}
	return out, nil
}

// addInfluenceLimits draws the limits inside the plot's set axis ranges.
func addInfluenceLimits(p *plot.Plot, hLimit, ylim float64) error {
	h, err := segment(hLimit, p.Y.Min, hLimit, p.Y.Max, limitColor, true)
	if err != nil {
		return err
	}
	p.Add(h)
	for _, y := range []float64{-ylim, ylim} {
		l, err := segment(p.X.Min, y, p.X.Max, y, limitColor, false)
		if err != nil {
			return err
		}
		p.Add(l)
	}
	return nil
}

// setCalibrationError puts RMSEC beside RMSECV in the summary: a model
// whose RMSEC is far below its RMSECV fits its training rows better than
// it predicts new ones.
func (v *view) setCalibrationError(p *inference.PLSParams, rmsec []float64) {
	if len(rmsec) != len(p.Targets) || len(p.Targets) == 0 {
		return
	}
	parts := make([]string, len(p.Targets))
	for j, t := range p.Targets {
		parts[j] = fmt.Sprintf("%s %s / %s", t, num(rmsec[j]), numAt(p.RMSECV, j))
	}
	r := row{Key: summaryErrorKey, Value: strings.Join(parts, ", ")}
	for i := range v.Summary {
		if v.Summary[i].Key == summaryRMSECVKey {
			v.Summary[i] = r
			return
		}
	}
	v.Summary = append(v.Summary, r)
}

// Keys of the summary's error rows.
const (
	summaryRMSECVKey = "RMSECV (g/L)"
	summaryErrorKey  = "RMSEC / RMSECV (g/L)"
)
