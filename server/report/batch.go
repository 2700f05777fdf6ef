package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ramanserve/evidence/batches"
	batchsvc "ramanserve/service/batches"
)

// Section ids of the batch page; the browser test counts the plots in
// SectionBatchTrajectory.
const (
	SectionBatchTrajectory = "batch-trajectory"
	SectionBatchOutside    = "outside-bands"
	SectionBatchReferences = "reference-batches"
	// NoReferencesID marks the paragraph that says the page has no bands.
	NoReferencesID = "no-bands"
)

var (
	bandColor    = color.NRGBA{R: 0x9e, G: 0xc5, B: 0xe8, A: 0x80}
	bandEdge     = color.NRGBA{R: 0x5a, G: 0x8d, B: 0xc0, A: 0xff}
	outsideColor = outlierColor
)

// RenderBatch writes the page of a batch against the control bands.
func RenderBatch(w io.Writer, rep batchsvc.Report) error {
	v, err := newBatchView(rep)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := batchTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = buf.WriteTo(w)
	return err
}

type batchView struct {
	Title      string
	Summary    []row
	NoBands    string
	Notes      []string
	Figures    []figure
	Counts     []outsideCount
	Outside    []outsideRow
	More       int
	References []referenceRow
}

type outsideCount struct {
	Series          string
	Judged, Outside int
}

type outsideRow struct {
	Maturity, Time, Series, Value, Low, High, Model string
}

type referenceRow struct {
	BatchID, MarkedAt, MarkedBy, Use string
}

// maturityAxis is how maturities are shown: the unit label and the
// divisor of the stored value (seconds, shown as hours for long batches).
type maturityAxis struct {
	label string
	scale float64
}

func axisOf(t *batches.Trajectory) maturityAxis {
	if t.Maturity == batches.ByScanSeq {
		return maturityAxis{label: "scan_seq", scale: 1}
	}
	if n := len(t.Points); n > 0 && t.Points[n-1].Maturity > 2*3600 {
		return maturityAxis{label: "hours since the batch's first spectrum", scale: 3600}
	}
	return maturityAxis{label: "seconds since the batch's first spectrum", scale: 1}
}

func newBatchView(rep batchsvc.Report) (*batchView, error) {
	t := &rep.Trajectory.Trajectory
	v := &batchView{Title: "Batch " + t.BatchID}
	models := map[string]bool{}
	var names []string
	for i := range t.Points {
		if m := t.Points[i].ModelVersion; !models[m] {
			models[m] = true
			names = append(names, m)
		}
	}
	status := "not a reference batch"
	if rep.Trajectory.Reference {
		status = "a reference batch (judged against the others)"
	}
	v.Summary = []row{
		{"batch", t.BatchID},
		{"spectra drawn", strconv.Itoa(len(t.Points))},
		{"first spectrum", t.Start.UTC().Format(time.RFC3339Nano)},
		{"maturity", t.Maturity.String()},
		{"answered by", strings.Join(names, ", ")},
		{"status", status},
	}
	if t.Truncated {
		v.Notes = append(v.Notes, fmt.Sprintf("The batch has more than %d spectra: the page shows its first %d.", batches.MaxPoints, batches.MaxPoints))
	}
	if t.Unplaced > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d spectra carry no scan_seq and are left out.", t.Unplaced))
	}
	v.NoBands = noBandsReason(rep)
	if rep.Bands != nil && v.NoBands == "" {
		v.Notes = append(v.Notes, fmt.Sprintf("Bands: mean ± %d standard deviations of %d reference batches at aligned maturity (each interpolated linearly onto a common grid of %d maturities; a band needs %d batches at a maturity).",
			batches.BandWidth, len(rep.Bands.References), batches.GridPoints, batches.MinBandBatches))
	}
	used := map[string]bool{}
	if rep.Bands != nil {
		for _, id := range rep.Bands.References {
			used[id] = true
		}
	}
	for _, r := range rep.References {
		use := "in the bands"
		switch {
		case r.BatchID == t.BatchID:
			use = "this batch: left out of its own bands"
		case !used[r.BatchID]:
			use = "not in the prediction log: left out"
		}
		v.References = append(v.References, referenceRow{BatchID: r.BatchID, MarkedAt: r.MarkedAt.UTC().Format(time.RFC3339), MarkedBy: r.MarkedBy, Use: use})
	}
	ax := axisOf(t)
	for s := range batches.NumSeries {
		fig, err := seriesFigure(t, rep.Bands, rep.Judgement.Outside[s], s, ax)
		if err != nil {
			return nil, err
		}
		if fig != nil {
			v.Figures = append(v.Figures, *fig)
		}
		v.Counts = append(v.Counts, outsideCount{Series: seriesLabel(s), Judged: rep.Judgement.Judged[s], Outside: len(rep.Judgement.Outside[s])})
		for _, i := range rep.Judgement.Outside[s] {
			if len(v.Outside) >= MaxTableRows {
				v.More++
				continue
			}
			p := &t.Points[i]
			mean, sd, _ := rep.Bands.At(s, p.Maturity)
			v.Outside = append(v.Outside, outsideRow{
				Maturity: num(p.Maturity / ax.scale), Time: p.Time.UTC().Format(time.RFC3339Nano), Series: seriesLabel(s),
				Value: num(p.Values[s]), Low: num(mean - batches.BandWidth*sd), High: num(mean + batches.BandWidth*sd), Model: p.ModelVersion,
			})
		}
	}
	return v, nil
}

// noBandsReason says why the page has no bands, "" when it has them.
func noBandsReason(rep batchsvc.Report) string {
	others := 0
	for _, r := range rep.References {
		if r.BatchID != rep.Trajectory.BatchID {
			others++
		}
	}
	switch {
	case len(rep.References) == 0:
		return "No reference batches are marked, so there are no control bands: the trajectory is drawn alone. Mark good batches with PUT /batches/{batch_id}/reference."
	case others == 0:
		return "The only reference batch is this one, and a batch is not judged by itself: there are no control bands. Mark other good batches with PUT /batches/{batch_id}/reference."
	case rep.Bands == nil:
		return "None of the other reference batches has spectra in the prediction log (any more): there are no control bands."
	case len(rep.Bands.References) < batches.MinBandBatches:
		return fmt.Sprintf("Control bands need at least %d reference batches with spectra; %d has: the trajectory is drawn alone.", batches.MinBandBatches, len(rep.Bands.References))
	}
	return ""
}

func seriesLabel(s batches.Series) string {
	switch s {
	case batches.SeriesT2:
		return "T² (reduced)"
	case batches.SeriesQ:
		return "Q (reduced)"
	}
	return s.String() + " (g/L)"
}

// seriesFigure draws one series of the trajectory against its band: the
// band shaded with its mean dashed, the trajectory as a line with points,
// the points outside the band ringed. nil when no point has the series.
func seriesFigure(t *batches.Trajectory, b *batches.Bands, outside []int, s batches.Series, ax maturityAxis) (*figure, error) {
	var idx []int
	for i := range t.Points {
		if t.Points[i].Has[s] {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	p := newPlot(seriesLabel(s), ax.label, seriesLabel(s))
	if err := addBand(p, b, s, ax); err != nil {
		return nil, err
	}
	var pts plotter.XYs
	rows := thin(len(idx), nil)
	for _, k := range rows {
		pt := &t.Points[idx[k]]
		pts = append(pts, plotter.XY{X: pt.Maturity / ax.scale, Y: pt.Values[s]})
	}
	pts = plottable(pts)
	if len(pts) == 0 {
		return nil, nil
	}
	c := seriesColor(s)
	line, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = c, vg.Points(0.8)
	dots, err := scatter(pts, c)
	if err != nil {
		return nil, err
	}
	p.Add(line, dots)
	p.Legend.Add("this batch", line, dots)
	var out plotter.XYs
	for _, i := range outside[:min(len(outside), MaxPlotPoints)] {
		pt := &t.Points[i]
		out = append(out, plotter.XY{X: pt.Maturity / ax.scale, Y: pt.Values[s]})
	}
	if out = plottable(out); len(out) > 0 {
		rings, err := plotter.NewScatter(out)
		if err != nil {
			return nil, err
		}
		rings.Color, rings.Radius, rings.Shape = outsideColor, vg.Points(4), draw.RingGlyph{}
		p.Add(rings)
		p.Legend.Add(fmt.Sprintf("outside the band: %d", len(outside)), rings)
	}
	// Room above the data for the legend, which would otherwise sit on
	// the band. Thumbnails first: a browser's font may be wider than the
	// metrics the SVG was laid out with, and text then runs on to the
	// right, not into the thumbnails.
	p.Legend.Left = true
	if span := p.Y.Max - p.Y.Min; ok(span) && span > 0 {
		p.Y.Max += 0.3 * span
	}
	svg, err := toSVG(p)
	if err != nil {
		return nil, err
	}
	return &figure{ID: "batch-" + s.String(), Caption: seriesLabel(s), SVG: svg}, nil
}

// addBand shades series s's band, one polygon for each run of grid
// points where it exists, with the mean dashed.
func addBand(p *plot.Plot, b *batches.Bands, s batches.Series, ax maturityAxis) error {
	if b == nil || len(b.References) < batches.MinBandBatches {
		return nil
	}
	mean, sd := b.Mean[s], b.SD[s]
	drawn := false
	for i := 0; i < len(b.Grid); {
		if !ok(mean[i]) || !ok(sd[i]) {
			i++
			continue
		}
		j := i
		for j < len(b.Grid) && ok(mean[j]) && ok(sd[j]) {
			j++
		}
		var upper, lower, centre plotter.XYs
		for k := i; k < j; k++ {
			x := b.Grid[k] / ax.scale
			upper = append(upper, plotter.XY{X: x, Y: mean[k] + batches.BandWidth*sd[k]})
			lower = append(lower, plotter.XY{X: x, Y: mean[k] - batches.BandWidth*sd[k]})
			centre = append(centre, plotter.XY{X: x, Y: mean[k]})
		}
		ring := append(plotter.XYs{}, upper...)
		for k := len(lower) - 1; k >= 0; k-- {
			ring = append(ring, lower[k])
		}
		if ring = plottable(ring); len(ring) >= 2 {
			poly, err := plotter.NewPolygon(ring)
			if err != nil {
				return err
			}
			poly.Color = bandColor
			poly.LineStyle.Color, poly.LineStyle.Width = bandEdge, vg.Points(0.5)
			line, err := plotter.NewLine(plottable(centre))
			if err != nil {
				return err
			}
			line.Color, line.Width = bandEdge, vg.Points(1)
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(poly, line)
			if !drawn {
				p.Legend.Add(fmt.Sprintf("references: mean ± %d s.d.", batches.BandWidth), poly, line)
			}
			drawn = true
		}
		i = j
	}
	return nil
}

func seriesColor(s batches.Series) color.Color {
	switch s {
	case batches.SeriesT2, batches.SeriesQ:
		return guideColor
	}
	return analyteColors[s]
}

var batchTemplate = newPage("batch", `<header>
<h1>{{.Title}}</h1>
</header>
<section id="summary">
<table>{{range .Summary}}<tr><th>{{.Key}}</th><td class="id">{{.Value}}</td></tr>{{end}}</table>
</section>
{{with .NoBands}}<p id="no-bands" class="missing">{{.}}</p>{{end}}
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
<section id="batch-trajectory">
<h2>Trajectory against the control bands</h2>
<div class="grid">{{range .Figures}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
</section>
<section id="outside-bands">
<h2>Points outside the bands</h2>
<table><tr><th>series</th><th>points judged</th><th>outside</th></tr>
{{range .Counts}}<tr{{if .Outside}} class="out"{{end}}><td>{{.Series}}</td><td class="num">{{.Judged}}</td><td class="num n">{{.Outside}}</td></tr>
{{end}}</table>
{{if .Outside}}<table><tr><th>maturity</th><th>time</th><th>series</th><th>value</th><th>band low</th><th>band high</th><th>model</th></tr>
{{range .Outside}}<tr><td class="num">{{.Maturity}}</td><td>{{.Time}}</td><td>{{.Series}}</td><td class="num">{{.Value}}</td><td class="num">{{.Low}}</td><td class="num">{{.High}}</td><td class="id">{{.Model}}</td></tr>
{{end}}</table>{{if .More}}<p class="note">and {{.More}} more</p>{{end}}{{end}}
</section>
<section id="reference-batches">
<h2>Reference batches</h2>
{{if .References}}<table><tr><th>batch</th><th>marked</th><th>by</th><th>use</th></tr>
{{range .References}}<tr><td class="id">{{.BatchID}}</td><td>{{.MarkedAt}}</td><td class="id">{{.MarkedBy}}</td><td>{{.Use}}</td></tr>
{{end}}</table>{{else}}<p>None is marked.</p>{{end}}
</section>
</body>
</html>
`)
