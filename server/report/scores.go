package report

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ramanserve/inference"
)

// SectionScores holds the scores plot of two components.
const SectionScores = "scores"

// ellipsePoints is the number of segments of the drawn T² ellipse.
const ellipsePoints = 180

// ErrScoresNotInModel: the scores plot was asked for a component the
// model does not have, or for the same component on both axes.
var ErrScoresNotInModel = errors.New("report: the scores asked for are not two different components of the model")

// ScoresChoice chooses the scores plot: the components on its axes
// (1-based; zero means the default, 1 and 2) and the analyte whose
// measured concentration colours the points (HasColor false: the model's
// first analyte).
type ScoresChoice struct {
	X, Y     int
	Color    inference.Analyte
	HasColor bool
}

// axes returns the 0-based components of the plot for a model of a
// components, or ErrScoresNotInModel.
func (c ScoresChoice) axes(a int) (x, y int, err error) {
	x, y = cmpOr(c.X, 1), cmpOr(c.Y, 2)
	if c.X == 0 && c.Y == 1 {
		x = 2 // scores_y=1 alone: t2 against t1
	}
	if x == y || x > a || y > a || x < 1 || y < 1 {
		return 0, 0, fmt.Errorf("%w: t%d against t%d, the model has %d", ErrScoresNotInModel, x, y, a)
	}
	return x - 1, y - 1, nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// colorStops are the scores plot's colour scale, low to high measured
// concentration (a perceptually ordered blue, teal, yellow; the outliers'
// red stays apart from it).
var colorStops = []color.RGBA{
	{R: 0x44, G: 0x01, B: 0x54, A: 0xff},
	{R: 0x21, G: 0x90, B: 0x8d, A: 0xff},
	{R: 0xfd, G: 0xe7, B: 0x25, A: 0xff},
}

// scaleColor is the colour of f in [0, 1] on colorStops.
func scaleColor(f float64) color.Color {
	if !ok(f) {
		return guideColor
	}
	f = math.Max(0, math.Min(1, f)) * float64(len(colorStops)-1)
	i := min(int(f), len(colorStops)-2)
	t := f - float64(i)
	a, b := colorStops[i], colorStops[i+1]
	mix := func(u, v uint8) uint8 { return uint8(math.Round(float64(u) + t*(float64(v)-float64(u)))) }
	return color.RGBA{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: 0xff}
}

// scoresFigure draws the training rows' scores on two components, t_x
// against t_y, with the 95 % Hotelling T² ellipse of those two,
//
//	t_x²/s_x² + t_y²/s_y² = T²_lim,  T²_lim = 2 (n² - 1) / (n (n - 2)) F_0.95(2, n - 2),
//
// (inference.HotellingT2Limit; s² the score variances, ddof 1), the
// limit for a new observation that SIMCA draws. Each point is coloured
// by its row's measured concentration of the chosen analyte; rows outside
// the ellipse are ringed in red. nil when the file keeps no scores
// (written before they were) or the model has one component;
// ErrScoresNotInModel when the choice names a component the model lacks.
func scoresFigure(p *inference.PLSParams, choice ScoresChoice) (*figure, error) {
	rv := p.Review
	if rv == nil || rv.Scores == nil || len(p.ScoreVariance) < 2 {
		return nil, nil
	}
	n, a := rv.Scores.Dims()
	if a != len(p.ScoreVariance) || n < 4 {
		return nil, nil
	}
	cx, cy, err := choice.axes(a)
	if err != nil {
		return nil, err
	}
	vx, vy := p.ScoreVariance[cx], p.ScoreVariance[cy]
	if !(vx > 0 && vy > 0) {
		return nil, nil
	}
	limit, err := inference.HotellingT2Limit(2, n, inference.DiagnosticsAlpha)
	if err != nil || !usable(limit) {
		return nil, nil
	}
	rx, ry := math.Sqrt(limit*vx), math.Sqrt(limit*vy)

	// The colouring analyte's column of the measured labels.
	analyte := firstOr(p.Targets, inference.EPA)
	if choice.HasColor {
		analyte = choice.Color
	}
	col := slices.Index(p.Targets, analyte)
	var measured []float64
	if rv.Measured != nil && col >= 0 {
		if mn, _ := rv.Measured.Dims(); mn == n {
			for i := range n {
				measured = append(measured, rv.Measured.At(i, col))
			}
		}
	}
	lo, hi := finiteRange(measured)

	var pts, outside plotter.XYs
	var colors []color.Color
	for _, i := range thin(n, nil) {
		tx, ty := rv.Scores.At(i, cx), rv.Scores.At(i, cy)
		if !ok(tx) || !ok(ty) {
			continue
		}
		pt := plotter.XY{X: tx, Y: ty}
		pts = append(pts, pt)
		c := colorOf(inference.EPA)
		if measured != nil {
			c = scaleColor(fraction(measured[i], lo, hi))
		}
		colors = append(colors, c)
		if (tx/rx)*(tx/rx)+(ty/ry)*(ty/ry) > 1 {
			outside = append(outside, pt)
		}
	}
	tx, ty := fmt.Sprintf("t%d", cx+1), fmt.Sprintf("t%d", cy+1)
	pl := newPlot("Scores "+tx+" against "+ty, tx, ty)
	ellipse := make(plotter.XYs, ellipsePoints+1)
	for k := range ellipse {
		phi := 2 * math.Pi * float64(k) / ellipsePoints
		ellipse[k] = plotter.XY{X: rx * math.Cos(phi), Y: ry * math.Sin(phi)}
	}
	line, err := plotter.NewLine(ellipse)
	if err != nil {
		return nil, err
	}
	line.Color = limitColor
	pl.Add(line)
	pl.Legend.Add("T² 95 %", line)
	if len(pts) > 0 {
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		s.GlyphStyleFunc = func(i int) draw.GlyphStyle {
			return draw.GlyphStyle{Color: colors[i], Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		}
		pl.Add(s)
	}
	if len(outside) > 0 {
		s, err := plotter.NewScatter(outside)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: outlierColor, Radius: vg.Points(3.5), Shape: draw.RingGlyph{}}
		pl.Add(s)
		pl.Legend.Add("outside", s)
	}
	if measured != nil && hi > lo {
		for _, end := range []struct {
			label string
			f     float64
		}{{analyte.String() + " " + num(lo) + " g/L", 0}, {analyte.String() + " " + num(hi) + " g/L", 1}} {
			pl.Legend.Add(end.label, swatch{scaleColor(end.f)})
		}
	}
	ylo, yhi := yRange(append(append(plotter.XYs{}, pts...), plotter.XY{Y: -ry}, plotter.XY{Y: ry}))
	entries := 1 // the ellipse
	if len(outside) > 0 {
		entries++
	}
	if measured != nil && hi > lo {
		entries += 2
	}
	legendRoom(pl, ylo-0.05*(yhi-ylo), yhi+0.05*(yhi-ylo), entries)
	svg, err := toSVG(pl)
	if err != nil {
		return nil, err
	}
	colour := "one colour: the file keeps no measured " + analyte.String()
	if measured != nil {
		colour = fmt.Sprintf("colour: measured %s, %s g/L (dark blue) to %s g/L (yellow)", analyte, num(lo), num(hi))
	}
	return &figure{ID: "scores-plot", SVG: svg, Caption: fmt.Sprintf(
		"%d training rows; %s. Ellipse: Hotelling T² of %s and %s at its 95 %% limit %s for two components; %d rows outside (ringed in red). Any pair: ?scores_x=&scores_y=&scores_color=.",
		n, colour, tx, ty, num(limit), len(outside))}, nil
}

// swatch is a legend entry of one colour of the scale.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := vg.Points(2.5)
	mid := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	c.DrawGlyph(draw.GlyphStyle{Color: s.c, Radius: r, Shape: draw.CircleGlyph{}}, mid)
}

func firstOr(t []inference.Analyte, def inference.Analyte) inference.Analyte {
	if len(t) > 0 {
		return t[0]
	}
	return def
}

// finiteRange is the least and greatest finite value of v (NaN, NaN when
// there is none).
func finiteRange(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		if ok(x) {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	if lo > hi {
		return math.NaN(), math.NaN()
	}
	return lo, hi
}

// fraction is v's place in [lo, hi], 0.5 when the range is one value.
func fraction(v, lo, hi float64) float64 {
	if !(hi > lo) {
		return 0.5
	}
	return (v - lo) / (hi - lo)
}
