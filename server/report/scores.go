package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"

	"ramanserve/inference"
)

// SectionScores holds the scores plot t1 against t2.
const SectionScores = "scores"

// ellipsePoints is the number of segments of the drawn T² ellipse.
const ellipsePoints = 180

// scoresFigure draws the training rows' scores on the first two
// components with the 95 % Hotelling T² ellipse of a two-component model,
//
//	t1²/s1² + t2²/s2² = T²_lim,  T²_lim = 2 (n² - 1) / (n (n - 2)) F_0.95(2, n - 2),
//
// (inference.HotellingT2Limit; s_a² the score variances, ddof 1), the
// limit for a new observation that SIMCA draws. Rows outside are red. nil
// when the file keeps no scores (written before they were) or the model
// has one component.
func scoresFigure(p *inference.PLSParams) (*figure, error) {
	rv := p.Review
	if rv == nil || rv.Scores == nil || len(p.ScoreVariance) < 2 {
		return nil, nil
	}
	n, a := rv.Scores.Dims()
	if a != len(p.ScoreVariance) || n < 4 || !(p.ScoreVariance[0] > 0 && p.ScoreVariance[1] > 0) {
		return nil, nil
	}
	limit, err := inference.HotellingT2Limit(2, n, inference.DiagnosticsAlpha)
	if err != nil || !usable(limit) {
		return nil, nil
	}
	r1, r2 := math.Sqrt(limit*p.ScoreVariance[0]), math.Sqrt(limit*p.ScoreVariance[1])
	var inside, outside plotter.XYs
	for _, i := range thin(n, nil) {
		t1, t2 := rv.Scores.At(i, 0), rv.Scores.At(i, 1)
		pt := plotter.XY{X: t1, Y: t2}
		if (t1/r1)*(t1/r1)+(t2/r2)*(t2/r2) > 1 {
			outside = append(outside, pt)
		} else {
			inside = append(inside, pt)
		}
	}
	inside, outside = finite(inside), finite(outside)
	pl := newPlot("Scores t1 against t2", "t1", "t2")
	ellipse := make(plotter.XYs, ellipsePoints+1)
	for k := range ellipse {
		phi := 2 * math.Pi * float64(k) / ellipsePoints
		ellipse[k] = plotter.XY{X: r1 * math.Cos(phi), Y: r2 * math.Sin(phi)}
	}
	line, err := plotter.NewLine(ellipse)
	if err != nil {
		return nil, err
	}
	line.Color = limitColor
	line.Dashes = nil
	pl.Add(line)
	pl.Legend.Add("T² 95 %", line)
	for _, set := range []struct {
		pts     plotter.XYs
		outside bool
	}{{inside, false}, {outside, true}} {
		if len(set.pts) == 0 {
			continue
		}
		c := colorOf(inference.EPA)
		if set.outside {
			c = outlierColor
		}
		s, err := scatter(set.pts, c)
		if err != nil {
			return nil, err
		}
		pl.Add(s)
	}
	svg, err := toSVG(pl)
	if err != nil {
		return nil, err
	}
	return &figure{ID: "scores-plot", SVG: svg, Caption: fmt.Sprintf(
		"%d training rows. Ellipse: Hotelling T² of t1 and t2 at its 95 %% limit %s for a two-component model; %d rows outside (red).",
		n, num(limit), len(outside))}, nil
}
