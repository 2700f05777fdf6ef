package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
)

// Bounds of the lab section.
const (
	// MaxBatchPoints bounds the batches of one control chart: the most
	// recent are drawn (the page says how many were left out).
	MaxBatchPoints = 500
	// MaxOtherVersions bounds the other versions listed beside this one
	// in the performance table.
	MaxOtherVersions = 20
	// MaxLabPlotPoints bounds the points of one lab against predicted
	// plot; more pairs are thinned evenly in time.
	MaxLabPlotPoints = 2000
	// maxPlotMagnitude bounds the values drawn: beyond it (a model that
	// predicts 1e300) the axis' tick search does not end. Such pairs still
	// count in the table; the caption says how many are not drawn.
	maxPlotMagnitude = 1e12
	// maxNamedBatches is the most batches whose ids are written under a
	// control chart; beyond it the axis counts batches.
	maxNamedBatches = 12
)

// LabEvidence is the version's performance against the lab's results, as
// the prediction log and the lab store know it. A Model without one has
// no lab section (the server keeps no lab results).
type LabEvidence struct {
	// Report is reconcile's report for the version; Samples 0 when no lab
	// result is matched to a spectrum the version predicted on.
	Report reconcile.Report
	// Unavailable, when not "", says for a person why Report could not
	// be made; the section shows it instead.
	Unavailable string
	// Narrowed, when not "", says for a person that Report covers a
	// shorter range than every lab result, and why.
	Narrowed string
}

// labView is the lab section of the page.
type labView struct {
	Unavailable string
	Notes       []string
	// Summary says what the figures are over; "" when nothing matched.
	Summary  string
	Table    *labTable
	Scatter  []figure
	Control  []figure
	Versions string // the version and its roles, for the headings
}

type labTable struct {
	Rows []labRow
	More int
}

type labRow struct {
	Version, Roles, Analyte       string
	N                             int
	RMSEP, Bias, Slope, Intercept string
	This                          bool
}

// newLabView draws the lab section of version's page.
func newLabView(version string, ev *LabEvidence) (*labView, error) {
	if ev == nil {
		return nil, nil
	}
	lv := &labView{Unavailable: ev.Unavailable}
	if ev.Unavailable != "" {
		return lv, nil
	}
	if ev.Narrowed != "" {
		lv.Notes = append(lv.Notes, ev.Narrowed)
	}
	rep := ev.Report
	if rep.Samples == 0 {
		return lv, nil
	}
	lv.Summary = labSummary(version, rep)
	lv.Table = newLabTable(rep)
	for _, as := range rep.Version.Analytes {
		if as.N == 0 {
			continue
		}
		f, err := labScatterFigure(as)
		if err != nil {
			return nil, err
		}
		lv.Scatter = append(lv.Scatter, f)
		c, note, err := biasControlFigure(as.Analyte, rep.Version.Batches)
		if err != nil {
			return nil, err
		}
		if c != nil {
			lv.Control = append(lv.Control, *c)
		}
		if note != "" && len(lv.Control) == 1 {
			lv.Notes = append(lv.Notes, note)
		}
	}
	if n := maxPairs(rep.Version.Analytes); n > MaxLabPlotPoints {
		lv.Notes = append(lv.Notes, fmt.Sprintf("The lab against predicted plots draw %d of up to %d pairs, evenly spaced in time.", MaxLabPlotPoints, n))
	}
	return lv, nil
}

func labSummary(version string, rep reconcile.Report) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%d lab results matched to spectra %s predicted on as %s", rep.Samples, version, roleNames(rep.Version.Roles))
	if b := len(rep.Version.Batches); b > 0 {
		fmt.Fprintf(&s, ", in %d batches", b)
	}
	switch {
	case !rep.Since.IsZero() && !rep.Until.IsZero():
		fmt.Fprintf(&s, ", spectra logged from %s to %s", timeString(rep.Since), timeString(rep.Until))
	case !rep.Since.IsZero():
		fmt.Fprintf(&s, ", spectra logged since %s", timeString(rep.Since))
	case !rep.Until.IsZero():
		fmt.Fprintf(&s, ", spectra logged before %s", timeString(rep.Until))
	}
	s.WriteString(". Bias is predicted minus lab; slope and intercept are of lab regressed on predicted (1 and 0 for a model right on average).")
	return s.String()
}

func roleNames(roles []predlog.Role) string {
	if len(roles) == 0 {
		return "–"
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = r.String()
	}
	return strings.Join(names, ", ")
}

// newLabTable lists the version's statistics, then those of the other
// versions on the same spectra (at most MaxOtherVersions of them).
func newLabTable(rep reconcile.Report) *labTable {
	t := &labTable{}
	t.Rows = appendLabRows(t.Rows, rep.Version, true)
	for i, o := range rep.Others {
		if i == MaxOtherVersions {
			t.More = len(rep.Others) - i
			break
		}
		t.Rows = appendLabRows(t.Rows, o, false)
	}
	return t
}

func appendLabRows(rows []labRow, vs reconcile.VersionStats, this bool) []labRow {
	for _, as := range vs.Analytes {
		if as.N == 0 {
			continue
		}
		rows = append(rows, labRow{
			Version: vs.Version, Roles: roleNames(vs.Roles), Analyte: as.Analyte.String(), N: as.N,
			RMSEP: optNum(as.RMSEP), Bias: optNum(as.Bias), Slope: optNum(as.Slope), Intercept: optNum(as.Intercept),
			This: this,
		})
	}
	return rows
}

func optNum(v *float64) string {
	if v == nil {
		return "–"
	}
	return num(*v)
}

func maxPairs(analytes []reconcile.AnalyteStats) int {
	n := 0
	for _, as := range analytes {
		n = max(n, len(as.Predicted))
	}
	return n
}

// labScatterFigure draws lab against predicted with the identity line
// and, when defined, the least-squares line of lab on predicted.
func labScatterFigure(as reconcile.AnalyteStats) (figure, error) {
	a := as.Analyte
	n := min(len(as.Predicted), len(as.Lab))
	var pts plotter.XYs
	for k := range min(n, MaxLabPlotPoints) {
		i := k
		if n > MaxLabPlotPoints {
			i = k * n / MaxLabPlotPoints
		}
		pts = append(pts, plotter.XY{X: as.Predicted[i], Y: as.Lab[i]})
	}
	drawn := len(pts)
	pts = plottable(pts)
	drawn -= len(pts)
	p := newPlot(a.String()+": lab against predicted", "predicted (g/L)", "lab (g/L)")
	// Points lie along the diagonal: the lower right corner is free.
	p.Legend.Top = false
	caption := fmt.Sprintf("%s: n %d, RMSEP %s g/L, bias %s g/L", a, as.N, optNum(as.RMSEP), optNum(as.Bias))
	if drawn > 0 {
		caption += fmt.Sprintf("; %d pairs not finite or beyond ±%g g/L are not drawn", drawn, maxPlotMagnitude)
	}
	if len(pts) == 0 {
		svg, err := toSVG(p)
		return figure{ID: "lab-" + a.String(), Caption: caption, SVG: svg}, err
	}
	xlo, xhi := xRange(pts)
	ylo, yhi := yRange(pts)
	lo, hi := math.Min(xlo, ylo), math.Max(xhi, yhi)
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	ident, err := segment(lo, lo, hi, hi, guideColor, true)
	if err != nil {
		return figure{}, err
	}
	p.Add(ident)
	p.Legend.Add("1:1", ident)
	if as.Slope != nil && as.Intercept != nil {
		b, c := *as.Slope, *as.Intercept
		if y0, y1 := c+b*xlo, c+b*xhi; inPlotRange(y0) && inPlotRange(y1) {
			fit, err := segment(xlo, y0, xhi, y1, limitColor, false)
			if err != nil {
				return figure{}, err
			}
			p.Add(fit)
			p.Legend.Add(fmt.Sprintf("fit: slope %s", num(b)), fit)
		}
	}
	s, err := scatter(pts, colorOf(a))
	if err != nil {
		return figure{}, err
	}
	p.Add(s)
	svg, err := toSVG(p)
	return figure{ID: "lab-" + a.String(), Caption: caption, SVG: svg}, err
}

// biasControlFigure draws an individuals control chart of the analyte's
// bias per batch, in time order: the points, the zero line, the centre
// line (the mean of the batch biases) and, from three batches on, the
// limits at the centre ± 2.66 times the mean moving range; points beyond
// them in red. At most MaxBatchPoints batches, the most recent; note says
// how many were left out. nil when no batch has a pair for the analyte.
func biasControlFigure(a inference.Analyte, batches []reconcile.BatchBias) (fig *figure, note string, err error) {
	type point struct {
		id   string
		at   time.Time
		n    int
		bias float64
	}
	var all []point
	for _, b := range batches {
		for _, ab := range b.Analytes {
			if ab.Analyte == a && ab.Bias != nil && inPlotRange(*ab.Bias) {
				all = append(all, point{id: b.BatchID, at: b.FirstSampleAt, n: ab.N, bias: *ab.Bias})
			}
		}
	}
	if len(all) == 0 {
		return nil, "", nil
	}
	if len(all) > MaxBatchPoints {
		note = fmt.Sprintf("The bias charts draw the %d most recent of %d batches.", MaxBatchPoints, len(all))
		all = all[len(all)-MaxBatchPoints:]
	}
	pts := make(plotter.XYs, len(all))
	var sum, mr float64
	for i, pt := range all {
		pts[i] = plotter.XY{X: float64(i + 1), Y: pt.bias}
		sum += pt.bias
		if i > 0 {
			mr += math.Abs(pt.bias - all[i-1].bias)
		}
	}
	k := len(all)
	centre := sum / float64(k)
	var limit float64
	if k >= 3 {
		limit = 2.66 * mr / float64(k-1)
	}
	if !inPlotRange(centre+limit) || !inPlotRange(centre-limit) {
		limit = 0
	}

	p := newPlot(a.String()+": bias by batch", "batch, in time order", "predicted − lab (g/L)")
	lo, hi := yRange(pts)
	lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	if ok(limit) && limit > 0 {
		lo, hi = math.Min(lo, centre-limit), math.Max(hi, centre+limit)
	}
	xlo, xhi := 0.5, float64(k)+0.5
	p.X.Min, p.X.Max = xlo, xhi
	zero, err := segment(xlo, 0, xhi, 0, guideColor, false)
	if err != nil {
		return nil, "", err
	}
	p.Add(zero)
	mean, err := segment(xlo, centre, xhi, centre, colorOf(a), true)
	if err != nil {
		return nil, "", err
	}
	p.Add(mean)
	p.Legend.Add("mean "+num(centre), mean)
	var beyond plotter.XYs
	var out []label // the batches out of control, named beside their points
	if ok(limit) && limit > 0 {
		for _, y := range []float64{centre - limit, centre + limit} {
			l, err := segment(xlo, y, xhi, y, limitColor, true)
			if err != nil {
				return nil, "", err
			}
			p.Add(l)
			if y > centre {
				p.Legend.Add("control limits", l)
			}
		}
		for i, pt := range pts {
			if math.Abs(pt.Y-centre) > limit {
				beyond = append(beyond, pt)
				out = append(out, label{at: pt, text: shorten(all[i].id)})
			}
		}
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, "", err
	}
	line.Color, points.Color = colorOf(a), colorOf(a)
	points.Shape = draw.CircleGlyph{}
	points.Radius = vg.Points(2)
	p.Add(line, points)
	if len(beyond) > 0 {
		s, err := scatter(beyond, outlierColor)
		if err != nil {
			return nil, "", err
		}
		s.Radius = vg.Points(3)
		p.Add(s)
	}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	// Headroom for the legend above the upper limit.
	if top := hi + 0.25*(hi-lo); ok(top) {
		hi = top
	}
	p.Y.Min, p.Y.Max = lo, hi
	// Batch names under the axis: every batch up to maxNamedBatches, else
	// every stride-th, so that the names never overlap.
	stride := (k + maxNamedBatches - 1) / maxNamedBatches
	var ticks []plot.Tick
	for i := 0; i < k; i += stride {
		ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: shorten(all[i].id)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	if len(out) > MaxOutlierLabels {
		out = out[:MaxOutlierLabels]
	}
	unplaced, err := placeLabels(p, plotWidth, plotHeight, out)
	if err != nil {
		return nil, "", err
	}
	svg, err := toSVG(p)
	if err != nil {
		return nil, "", err
	}
	caption := fmt.Sprintf("%s: %d batches, %s (%s) to %s (%s)", a, k,
		all[0].id, timeString(all[0].at), all[k-1].id, timeString(all[k-1].at))
	if limit > 0 {
		caption += fmt.Sprintf("; control limits at the mean ± 2.66 × the mean moving range (± %s g/L)", num(limit))
	}
	if len(beyond) > 0 {
		caption += fmt.Sprintf("; %d outside them, in red, named", len(beyond))
	}
	if stride > 1 {
		caption += fmt.Sprintf("; one batch in %d named on the axis", stride)
	}
	caption += "." + notLabelled(unplaced)
	return &figure{ID: "bias-" + a.String(), Caption: caption, SVG: svg}, note, nil
}

// inPlotRange reports whether v can be drawn on an axis.
func inPlotRange(v float64) bool { return ok(v) && math.Abs(v) <= maxPlotMagnitude }

// plottable keeps the points whose coordinates can both be drawn.
func plottable(pts plotter.XYs) plotter.XYs {
	out := pts[:0]
	for _, p := range pts {
		if inPlotRange(p.X) && inPlotRange(p.Y) {
			out = append(out, p)
		}
	}
	return out
}
