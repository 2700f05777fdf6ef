package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// Size of one plot. The page scales it to its column with CSS.
const (
	plotWidth  = 5 * vg.Inch
	plotHeight = 3.4 * vg.Inch
	// The T2/Q plot has a row of its own and many labels.
	wideWidth  = 9 * vg.Inch
	wideHeight = 5 * vg.Inch
)

// analyteColors are the analytes' colours, in Analyte order.
var analyteColors = [inference.NumAnalytes]color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

var (
	guideColor   = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	limitColor   = color.RGBA{R: 0xe0, G: 0x80, B: 0x00, A: 0xff}
	outlierColor = color.RGBA{R: 0xc0, G: 0x00, B: 0x00, A: 0xff}
	shadeColor   = color.NRGBA{R: 0xb0, G: 0xb0, B: 0xb0, A: 0x70}
)

func colorOf(a inference.Analyte) color.Color {
	if a >= 0 && int(a) < len(analyteColors) {
		return analyteColors[a]
	}
	return guideColor
}

// cvFigures draws RMSECV against the component count, one plot per
// analyte, with the chosen count marked.
func cvFigures(targets []inference.Analyte, rv *inference.Review) ([]figure, error) {
	if len(rv.CVCurve) == 0 {
		return nil, nil
	}
	var figs []figure
	for j, a := range targets {
		var pts plotter.XYs
		for _, pt := range rv.CVCurve {
			if j < len(pt.RMSECV) {
				pts = append(pts, plotter.XY{X: float64(pt.Components), Y: pt.RMSECV[j]})
			}
		}
		pts = finite(pts)
		if len(pts) == 0 {
			continue
		}
		p := newPlot(a.String()+": cross-validated error", "latent components", "RMSECV (g/L), log scale")
		lo, hi := yRange(pts)
		// A log axis shows the curve's flat tail, where the rules choose,
		// as plainly as its steep start.
		if lo > 0 {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		} else {
			p.Y.Label.Text = "RMSECV (g/L)"
		}
		if c := rv.Selection.Components; c > 0 {
			mark, err := segment(float64(c), lo, float64(c), hi, limitColor, true)
			if err != nil {
				return nil, err
			}
			p.Add(mark)
			p.Legend.Add(fmt.Sprintf("chosen: %d", c), mark)
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = colorOf(a), colorOf(a)
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		svg, err := toSVG(p)
		if err != nil {
			return nil, err
		}
		figs = append(figs, figure{ID: "cv-" + a.String(), Caption: a.String(), SVG: svg})
	}
	return figs, nil
}

// predictionFigures draws measured against cross-validated predicted with
// the 1:1 line, and the residuals (measured - predicted) against the
// prediction with the zero line, per analyte.
func predictionFigures(targets []inference.Analyte, rv *inference.Review) (meas, res []figure, err error) {
	if rv.Measured == nil || rv.CVPredicted == nil {
		return nil, nil, nil
	}
	n, q := rv.Measured.Dims()
	if pn, pq := rv.CVPredicted.Dims(); pn != n || pq != q || q != len(targets) {
		return nil, nil, nil
	}
	rows := thin(n, nil)
	for j, a := range targets {
		var mp, rp plotter.XYs
		for _, i := range rows {
			y, yhat := rv.Measured.At(i, j), rv.CVPredicted.At(i, j)
			mp = append(mp, plotter.XY{X: y, Y: yhat})
			rp = append(rp, plotter.XY{X: yhat, Y: y - yhat})
		}
		mp, rp = finite(mp), finite(rp)
		if len(mp) == 0 {
			continue
		}
		f, err := measuredFigure(a, mp)
		if err != nil {
			return nil, nil, err
		}
		meas = append(meas, f)
		f, err = residualFigure(a, rp)
		if err != nil {
			return nil, nil, err
		}
		res = append(res, f)
	}
	return meas, res, nil
}

func measuredFigure(a inference.Analyte, pts plotter.XYs) (figure, error) {
	p := newPlot(a.String()+": measured against CV-predicted", "measured (g/L)", "CV-predicted (g/L)")
	xlo, xhi := xRange(pts)
	ylo, yhi := yRange(pts)
	lo, hi := math.Min(xlo, ylo), math.Max(xhi, yhi)
	ident, err := segment(lo, lo, hi, hi, guideColor, true)
	if err != nil {
		return figure{}, err
	}
	s, err := scatter(pts, colorOf(a))
	if err != nil {
		return figure{}, err
	}
	p.Add(ident, s)
	p.Legend.Add("1:1", ident)
	svg, err := toSVG(p)
	return figure{ID: "measured-" + a.String(), Caption: a.String(), SVG: svg}, err
}

func residualFigure(a inference.Analyte, pts plotter.XYs) (figure, error) {
	p := newPlot(a.String()+": CV residuals", "CV-predicted (g/L)", "measured − predicted (g/L)")
	lo, hi := xRange(pts)
	zero, err := segment(lo, 0, hi, 0, guideColor, true)
	if err != nil {
		return figure{}, err
	}
	s, err := scatter(pts, colorOf(a))
	if err != nil {
		return figure{}, err
	}
	p.Add(zero, s)
	svg, err := toSVG(p)
	return figure{ID: "residuals-" + a.String(), Caption: a.String(), SVG: svg}, err
}

// t2qFigure draws Q against T2 of the training rows with the 95 % limits,
// the outliers in red and the most extreme of them labelled by scan id.
func t2qFigure(rv *inference.Review, out []outlier) (*figure, error) {
	n := len(rv.T2)
	if n == 0 || len(rv.Q) != n {
		return nil, nil
	}
	isOut := make(map[int]bool, len(out))
	keep := make([]int, 0, len(out))
	for _, o := range out {
		isOut[o.row] = true
		keep = append(keep, o.row)
	}
	var normal, flagged plotter.XYs
	for _, i := range thin(n, keep) {
		pt := plotter.XY{X: rv.T2[i], Y: rv.Q[i]}
		if isOut[i] {
			flagged = append(flagged, pt)
		} else {
			normal = append(normal, pt)
		}
	}
	normal, flagged = finite(normal), finite(flagged)
	all := append(append(plotter.XYs{}, normal...), flagged...)
	if len(all) == 0 {
		return nil, nil
	}
	p := newPlot("T² against Q of the training spectra", "Hotelling T²", "Q (residual sum of squares)")
	_, xhi := xRange(all)
	_, yhi := yRange(all)
	if usable(rv.T2Limit) {
		xhi = math.Max(xhi, rv.T2Limit)
	}
	if usable(rv.QLimit) {
		yhi = math.Max(yhi, rv.QLimit)
	}
	xhi, yhi = grow(xhi, 1.05), grow(yhi, 1.05)
	if !(xhi > 0) {
		xhi = 1
	}
	if !(yhi > 0) {
		yhi = 1
	}
	// Room on the right for the labels of the points furthest out.
	p.X.Min, p.X.Max = 0, grow(xhi, 1.12)
	p.Y.Min, p.Y.Max = 0, yhi
	if usable(rv.T2Limit) {
		l, err := segment(rv.T2Limit, 0, rv.T2Limit, yhi, limitColor, true)
		if err != nil {
			return nil, err
		}
		p.Add(l)
	}
	if usable(rv.QLimit) {
		l, err := segment(0, rv.QLimit, xhi, rv.QLimit, limitColor, false)
		if err != nil {
			return nil, err
		}
		p.Add(l)
	}
	if len(normal) > 0 {
		s, err := scatter(normal, colorOf(inference.EPA))
		if err != nil {
			return nil, err
		}
		p.Add(s)
	}
	if len(flagged) > 0 {
		s, err := scatter(flagged, outlierColor)
		if err != nil {
			return nil, err
		}
		p.Add(s)
	}
	unplaced, err := placeLabels(p, wideWidth, wideHeight, outlierLabels(rv, out))
	if err != nil {
		return nil, err
	}
	svg, err := toSVGSized(p, wideWidth, wideHeight)
	if err != nil {
		return nil, err
	}
	caption := fmt.Sprintf("%d training spectra. 95 %% limits (orange): T² %s (dashed), Q %s (solid). %d outliers in red",
		n, num(rv.T2Limit), num(rv.QLimit), len(out))
	if len(out) > MaxOutlierLabels {
		caption += fmt.Sprintf(", the %d most extreme labelled", MaxOutlierLabels)
	}
	return &figure{ID: "t2q-plot", Caption: caption + "." + notLabelled(unplaced), SVG: svg}, nil
}

// outlierLabels are the scan ids of the MaxOutlierLabels most extreme
// outliers, at their points, most extreme first.
func outlierLabels(rv *inference.Review, out []outlier) []label {
	var labels []label
	for _, o := range out {
		if len(labels) == MaxOutlierLabels {
			break
		}
		pt := plotter.XY{X: rv.T2[o.row], Y: rv.Q[o.row]}
		if ok(pt.X) && ok(pt.Y) {
			labels = append(labels, label{at: pt, text: shorten(o.scanID)})
		}
	}
	return labels
}

// vectorFigures draws each analyte's regression vector in original units
// (target units per intensity unit after preprocessing: Coef / XScale)
// over the wavenumbers the model uses, with the excluded regions shaded.
func vectorFigures(p *inference.PLSParams) ([]figure, error) {
	if p.Coef == nil {
		return nil, nil
	}
	nf, q := p.Coef.Dims()
	if q != len(p.Targets) || len(p.XScale) != nf {
		return nil, fmt.Errorf("report: coefficients are %d x %d for %d targets and %d scales", nf, q, len(p.Targets), len(p.XScale))
	}
	x, runs, excluded, unit := modelAxis(p, nf)
	var figs []figure
	for j, a := range p.Targets {
		pl := newPlot(a.String()+": regression vector", unit, "g/L per "+recipeUnit(p))
		var all plotter.XYs
		var lines []plot.Plotter
		for _, r := range runs {
			var pts plotter.XYs
			for i := r[0]; i < r[1]; i++ {
				pts = append(pts, plotter.XY{X: x[i], Y: p.Coef.At(i, j) / p.XScale[i]})
			}
			pts = finite(pts)
			if len(pts) == 0 {
				continue
			}
			all = append(all, pts...)
			l, err := plotter.NewLine(pts)
			if err != nil {
				return nil, err
			}
			l.Color = colorOf(a)
			lines = append(lines, l)
		}
		if len(all) == 0 {
			continue
		}
		lo, hi := yRange(all)
		if err := shadeExcluded(pl, excluded, lo, hi); err != nil {
			return nil, err
		}
		pl.Add(lines...)
		svg, err := toSVG(pl)
		if err != nil {
			return nil, err
		}
		figs = append(figs, figure{ID: "vector-" + a.String(), Caption: a.String(), SVG: svg})
	}
	return figs, nil
}

// recipeUnit names the unit of a spectrum after the model's recipe, short
// enough for an axis label, so that no axis claims intensities where SNV
// left none: raw intensity; SNV makes it the spectrum's own standard
// deviation, "SNV unit" (no physical unit); a
// band-area normalisation, intensity per unit band area; a Savitzky-Golay
// derivative divides by the point spacing (over the point index), once
// per order.
func recipeUnit(p *inference.PLSParams) string {
	u := "intensity unit"
	for _, s := range p.Preprocessing {
		switch s.Kind {
		case preprocess.SNV:
			u = "SNV unit" // the spectrum's own standard deviation
		case preprocess.Normalize:
			u = "area-normalised intensity unit"
		case preprocess.Savgol:
			if s.Deriv > 0 {
				u += strings.Repeat(" per point", s.Deriv)
			}
		}
	}
	return u
}

// xUnit names the unit of X as the model sees it: the recipe's unit,
// or, for an autoscaled model, each variable's training standard
// deviation.
func xUnit(p *inference.PLSParams) string {
	for _, s := range p.XScale {
		if s != 1 {
			return "autoscaled: per variable standard deviation"
		}
	}
	return recipeUnit(p)
}

// shadeExcluded shades the excluded wavenumber intervals from lo to hi,
// with a legend entry when there is one.
func shadeExcluded(pl *plot.Plot, excluded [][2]float64, lo, hi float64) error {
	for _, ex := range excluded {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: ex[0], Y: lo}, {X: ex[1], Y: lo}, {X: ex[1], Y: hi}, {X: ex[0], Y: hi}})
		if err != nil {
			return err
		}
		poly.Color = shadeColor
		poly.LineStyle.Width = 0
		pl.Add(poly)
	}
	if len(excluded) > 0 {
		pl.Legend.Add("excluded", &shadeThumb{})
	}
	return nil
}

// shadeThumb is the legend entry of the excluded regions.
type shadeThumb struct{}

func (shadeThumb) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(shadeColor, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
}

// modelAxis returns the x value of each of the model's nf points, the
// runs [start, end) of points adjacent on the full axis (drawn as one
// line each), the excluded intervals of the full axis, and the axis
// label. When the stored axis does not give the model's points (an import
// without one), the x values are feature indices and nothing is shaded.
func modelAxis(p *inference.PLSParams, nf int) (x []float64, runs [][2]int, excluded [][2]float64, unit string) {
	axis := p.Meta.Wavenumbers
	sel := selectedPoints(axis, p.Regions)
	if len(sel) != nf {
		x = make([]float64, nf)
		for i := range x {
			x[i] = float64(i)
		}
		return x, [][2]int{{0, nf}}, nil, "feature index (the model file records no matching axis)"
	}
	x = make([]float64, nf)
	start := 0
	for i, k := range sel {
		x[i] = axis[k]
		if i > 0 && k != sel[i-1]+1 {
			runs = append(runs, [2]int{start, i})
			start = i
		}
	}
	runs = append(runs, [2]int{start, nf})
	if len(p.Regions) > 0 {
		excluded = excludedIntervals(axis, sel)
	}
	return x, runs, excluded, "wavenumber (cm⁻¹)"
}

// selectedPoints lists the indices of axis inside any region (inclusive);
// every index when regions is empty.
func selectedPoints(axis []float64, regions [][2]float64) []int {
	sel := make([]int, 0, len(axis))
	for i, w := range axis {
		if len(regions) == 0 || inRegions(w, regions) {
			sel = append(sel, i)
		}
	}
	return sel
}

func inRegions(w float64, regions [][2]float64) bool {
	for _, r := range regions {
		if w >= math.Min(r[0], r[1]) && w <= math.Max(r[0], r[1]) {
			return true
		}
	}
	return false
}

// excludedIntervals turns the runs of unselected axis points into
// wavenumber intervals, reaching half way to the neighbouring kept points.
func excludedIntervals(axis []float64, sel []int) [][2]float64 {
	kept := make([]bool, len(axis))
	for _, k := range sel {
		kept[k] = true
	}
	var out [][2]float64
	for i := 0; i < len(axis); {
		if kept[i] {
			i++
			continue
		}
		j := i
		for j < len(axis) && !kept[j] {
			j++
		}
		lo, hi := axis[i], axis[j-1]
		if i > 0 {
			lo = (axis[i-1] + axis[i]) / 2
		}
		if j < len(axis) {
			hi = (axis[j-1] + axis[j]) / 2
		}
		if ok(lo) && ok(hi) {
			out = append(out, [2]float64{math.Min(lo, hi), math.Max(lo, hi)})
		}
		i = j
	}
	return out
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	useSans(p)
	p.X.Tick.Marker, p.Y.Tick.Marker = zeroTicks{}, zeroTicks{}
	p.Add(plotter.NewGrid())
	return p
}

func scatter(pts plotter.XYs, c color.Color) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	s.Color = c
	s.Radius = vg.Points(1.8)
	s.Shape = draw.CircleGlyph{}
	return s, nil
}

// segment is a straight guide line from (x0, y0) to (x1, y1).
func segment(x0, y0, x1, y1 float64, c color.Color, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y0}, {X: x1, Y: y1}})
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(1.2)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	return l, nil
}

// thin returns at most MaxPlotPoints rows to draw: all of them up to
// MaxPlotPoints, else the first MaxPlotPoints/2 rows of keep (the
// outliers, most extreme first) and an even selection of the others. keep
// is capped because a model file may flag every one of millions of rows.
func thin(n int, keep []int) []int {
	if n <= MaxPlotPoints {
		rows := make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		return rows
	}
	keep = keep[:min(len(keep), MaxPlotPoints/2)]
	rows := make([]int, 0, MaxPlotPoints)
	seen := make(map[int]bool, len(keep))
	for _, k := range keep {
		seen[k] = true
	}
	even := MaxPlotPoints - len(keep)
	for k := range even {
		if i := k * n / even; !seen[i] {
			rows = append(rows, i)
		}
	}
	return append(rows, keep...)
}

func finite(pts plotter.XYs) plotter.XYs {
	out := pts[:0]
	for _, p := range pts {
		if ok(p.X) && ok(p.Y) {
			out = append(out, p)
		}
	}
	return out
}

func ok(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// grow scales a positive axis bound by f, unless that overflows.
func grow(v, f float64) float64 {
	if g := v * f; ok(g) {
		return g
	}
	return v
}

// usable reports whether a 95 % limit can be drawn: finite and positive.
func usable(limit float64) bool { return ok(limit) && limit > 0 }

func xRange(pts plotter.XYs) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.X), math.Max(hi, p.X)
	}
	return lo, hi
}

func yRange(pts plotter.XYs) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
	}
	return lo, hi
}

// toSVG draws p and returns its SVG element for inlining in HTML: the XML
// prelude and vgsvg's opening tag (with its namespace URLs, which HTML
// does not need) are replaced by a plain <svg> with the same viewBox.
// Text is escaped by vgsvg; fonts are named, never embedded or fetched.
func toSVG(p *plot.Plot) (template.HTML, error) { return toSVGSized(p, plotWidth, plotHeight) }

func toSVGSized(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(false))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	doc := buf.String()
	start := strings.Index(doc, "<svg")
	end := -1
	if start >= 0 {
		end = strings.IndexByte(doc[start:], '>')
	}
	if end < 0 {
		return "", fmt.Errorf("report: vgsvg wrote no <svg> element")
	}
	open := fmt.Sprintf(`<svg viewBox="0 0 %.6g %.6g" role="img">`, w.Points(), h.Points())
	// #nosec: the SVG is vgsvg's own output; every text it holds went
	// through html.EscapeString (vgsvg.Canvas.FillString).
	return template.HTML(open + doc[start+end+1:]), nil
}

// sansFont is the plots' one font family: Liberation Sans, whose metrics
// gonum/plot lays the text out with and which the page's style names
// first (Arial and Helvetica share its metrics; DejaVu Sans Condensed,
// on Linux without them, is close), so plot and page text look alike
// and text placed by those metrics stays where it was placed.
const sansFont = "Sans"

// useSans sets every text style of p to sansFont.
func useSans(p *plot.Plot) {
	for _, f := range []*font.Font{
		&p.Title.TextStyle.Font, &p.Legend.TextStyle.Font,
		&p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font,
	} {
		f.Variant = sansFont
	}
}

// legendRoom sets the y range to [lo, hi] plus room above for a legend
// of the given number of entries, so that the legend, drawn in the top
// right corner, covers no data.
func legendRoom(p *plot.Plot, lo, hi float64, entries int) {
	if !(hi > lo) {
		lo, hi = lo-1, hi+1
	}
	p.Y.Min, p.Y.Max = lo, hi
	if top := hi + (hi-lo)*0.09*float64(entries); ok(top) {
		p.Y.Max = top
	}
}

// zeroTicks are plot.DefaultTicks with zero written as 0: the default
// steps add multiples of the step to a rounded start, so the tick at zero
// can come out as 4e-19, and a range that crosses zero between two major
// ticks gets no labelled zero at all. A figure whose guide line is zero
// shows where zero is.
type zeroTicks struct{}

func (zeroTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	step := math.Inf(1)
	prev := math.NaN()
	for _, t := range ticks {
		if t.Label == "" {
			continue
		}
		if ok(prev) {
			step = math.Min(step, t.Value-prev)
		}
		prev = t.Value
	}
	if !ok(step) || step <= 0 {
		return ticks
	}
	labelled := false
	for i := range ticks {
		if math.Abs(ticks[i].Value) < step*1e-6 {
			ticks[i].Value = 0
			if ticks[i].Label != "" {
				ticks[i].Label, labelled = "0", true
			}
		}
	}
	if lo < 0 && hi > 0 && !labelled {
		ticks = slices.DeleteFunc(ticks, func(t plot.Tick) bool { return t.Value == 0 })
		ticks = append(ticks, plot.Tick{Value: 0, Label: "0"})
	}
	return ticks
}

// label is a text to write beside a point of a plot.
type label struct {
	at   plotter.XY
	text string
}

// Approximate text metrics of the labels placed by placeLabels: 7 pt
// Liberation Sans averages about 0.55 em a character.
const (
	labelSize      = 7
	labelCharWidth = 0.55 * labelSize
	labelHeight    = labelSize + 1
	// The plot's data area within its canvas, roughly: room for the tick
	// labels and axis label on the left and below, the title above.
	dataLeft, dataRight, dataBottom, dataTop = 55, 12, 38, 24
)

// placeLabels writes the labels, in order of importance, beside their
// points (right of the point, else left of it), skipping any that would
// overlap one already written; it returns the texts it could not place,
// for the figure to list instead. The plot's axis ranges must be set.
func placeLabels(p *plot.Plot, w, h vg.Length, labels []label) (unplaced []string, err error) {
	xw := float64(w.Points()) - dataLeft - dataRight
	yh := float64(h.Points()) - dataBottom - dataTop
	toPt := func(xy plotter.XY) (float64, float64) {
		return (xy.X - p.X.Min) / (p.X.Max - p.X.Min) * xw, (xy.Y - p.Y.Min) / (p.Y.Max - p.Y.Min) * yh
	}
	type box struct{ x0, y0, x1, y1 float64 }
	var placed []box
	free := func(b box) bool {
		if b.x0 < 0 || b.x1 > xw || b.y0 < 0 || b.y1 > yh {
			return false
		}
		for _, o := range placed {
			if b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 {
				return false
			}
		}
		return true
	}
	var right, left plotter.XYLabels
	for _, l := range labels {
		if !ok(l.at.X) || !ok(l.at.Y) {
			continue
		}
		x, y := toPt(l.at)
		width := labelCharWidth * float64(len([]rune(l.text)))
		if b := (box{x + 3, y + 1, x + 3 + width, y + 1 + labelHeight}); free(b) {
			placed = append(placed, b)
			right.XYs, right.Labels = append(right.XYs, l.at), append(right.Labels, l.text)
			continue
		}
		if b := (box{x - 3 - width, y + 1, x - 3, y + 1 + labelHeight}); free(b) {
			placed = append(placed, b)
			left.XYs, left.Labels = append(left.XYs, l.at), append(left.Labels, l.text)
			continue
		}
		unplaced = append(unplaced, l.text)
	}
	for _, set := range []struct {
		l     plotter.XYLabels
		align text.XAlignment
		dx    vg.Length
	}{{right, draw.XLeft, 3}, {left, draw.XRight, -3}} {
		if len(set.l.Labels) == 0 {
			continue
		}
		pl, err := plotter.NewLabels(set.l)
		if err != nil {
			return nil, err
		}
		for i := range pl.TextStyle {
			pl.TextStyle[i].Font.Size = vg.Points(labelSize)
			pl.TextStyle[i].Font.Variant = sansFont
			pl.TextStyle[i].Color = outlierColor
			pl.TextStyle[i].XAlign = set.align
		}
		pl.Offset = vg.Point{X: set.dx, Y: 1}
		p.Add(pl)
	}
	return unplaced, nil
}

// notLabelled is the caption's list of the labels placeLabels left out.
func notLabelled(unplaced []string) string {
	if len(unplaced) == 0 {
		return ""
	}
	return " Not labelled for lack of room: " + strings.Join(unplaced, ", ") + "."
}
