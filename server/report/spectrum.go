package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
	evidencesvc "ramanserve/service/evidence"
)

// Section ids of the page of one spectrum; the browser test counts the
// plots in each.
const (
	SectionPrediction    = "prediction"
	SectionSpectrum      = "spectrum"
	SectionResidual      = "residual"
	SectionContributions = "contributions"
	SectionRecords       = "records"
)

// labelledContributions is how many of the marked contributions are
// labelled with their wavenumber.
const labelledContributions = 3

// spectrumTopMarked is how many of the largest contributions a
// per-variable plot marks when the log stored none.
const spectrumTopMarked = 10

var (
	calibrationMeanColor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	spectrumColor        = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
)

// spectrumView is the template's data for the page of one spectrum.
type spectrumView struct {
	Title    string
	ID       string
	Summary  []row
	Missing  []string
	Figures  map[string][]figure
	Analytes []analyteRow
	Regions  []regionRow
	Records  []recordRow
}

type analyteRow struct{ Analyte, Concentration, Confidence string }

type regionRow struct{ Statistic, Region, Value, Share string }

type recordRow struct {
	Role, Version, Time string
	Concentrations      string
	T2, Q               string
	Contributions       string
}

// RenderSpectrum writes the page of one logged spectrum to w: the
// prediction with its confidence, T2 and Q against their limits, the
// spectrum against the calibration mean, its residual, and the
// contributions to T2 and Q.
func RenderSpectrum(w io.Writer, r evidencesvc.SpectrumReport) error {
	if len(r.Records) == 0 {
		return fmt.Errorf("report: spectrum %s has no records", r.ID)
	}
	v, err := newSpectrumView(r)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := spectrumTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = buf.WriteTo(w)
	return err
}

func newSpectrumView(r evidencesvc.SpectrumReport) (*spectrumView, error) {
	active := &r.Records[0]
	v := &spectrumView{Title: "Spectrum " + r.ID.String(), ID: r.ID.String(), Figures: map[string][]figure{}}
	if r.Missing != "" {
		v.Missing = append(v.Missing, r.Missing)
	}
	v.Summary = []row{
		{"model version", active.ModelVersion},
		{"role", active.Role.String()},
		{"received", timeString(active.Time)},
	}
	if active.HasBatchID {
		v.Summary = append(v.Summary, row{"batch", active.BatchID})
	}
	if active.HasScanSeq {
		v.Summary = append(v.Summary, row{"scan_seq", num(active.ScanSeq)})
	}
	if r.Limits.HasT2 {
		v.Summary = append(v.Summary, row{"T² 95 % limit", num(r.Limits.T2)})
	}
	if r.Limits.HasQ {
		v.Summary = append(v.Summary, row{"Q 95 % limit", num(r.Limits.Q)})
	}
	for a := range inference.Analyte(inference.NumAnalytes) {
		if !active.Concentrations.Valid[a] {
			continue
		}
		conf := "–"
		if active.Confidence.Valid[a] {
			conf = num(active.Confidence.Value[a])
		}
		v.Analytes = append(v.Analytes, analyteRow{a.String(), num(active.Concentrations.Value[a]), conf})
	}
	figs, err := predictionSummaryFigures(active)
	if err != nil {
		return nil, err
	}
	v.Figures[SectionPrediction] = figs
	stored := storedContributions(r.Records)
	if e := r.Explanation; e != nil {
		if err := v.addExplanation(e, stored); err != nil {
			return nil, err
		}
	} else if stored != nil {
		if err := v.addStored(stored); err != nil {
			return nil, err
		}
	} else {
		v.Missing = append(v.Missing, "The log stored no contributions of this prediction: its reply carried none, and neither T² nor Q was above its limit (or the server runs with -log-exceedance-contributions=false).")
	}
	if stored != nil {
		v.Regions = contributionRegionRows(stored)
	}
	for i := range r.Records {
		v.Records = append(v.Records, newRecordRow(&r.Records[i]))
	}
	return v, nil
}

// storedContributions are the contributions the log stored with the
// active record; nil when it stored none.
func storedContributions(recs []predlog.Record) *inference.Contributions {
	if recs[0].Role == predlog.RoleActive {
		return recs[0].Contributions
	}
	return nil
}

// predictionSummaryFigures draws the prediction's confidence per analyte, and
// T2 and Q divided by their 95 % limits against the line at 1.
func predictionSummaryFigures(rec *predlog.Record) ([]figure, error) {
	var names []string
	var conf plotter.Values
	for a := range inference.Analyte(inference.NumAnalytes) {
		if rec.Concentrations.Valid[a] {
			names = append(names, fmt.Sprintf("%s %s g/L", a, num(rec.Concentrations.Value[a])))
			c := rec.Confidence.Value[a]
			if !rec.Confidence.Valid[a] || !ok(c) {
				c = 0
			}
			conf = append(conf, c)
		}
	}
	var figs []figure
	if len(conf) > 0 {
		p := newPlot("Prediction and its confidence", "", "confidence (0 to 1)")
		bars, err := plotter.NewBarChart(conf, vg.Points(40))
		if err != nil {
			return nil, err
		}
		bars.Color = spectrumColor
		p.Add(bars)
		p.NominalX(names...)
		p.Y.Min, p.Y.Max = 0, 1
		svg, err := toSVG(p)
		if err != nil {
			return nil, err
		}
		figs = append(figs, figure{ID: "prediction-confidence", Caption: "Each analyte's concentration (on the axis) and its confidence", SVG: svg})
	}
	var stats []string
	var reduced plotter.Values
	if rec.HasReducedT2 && ok(rec.ReducedT2) {
		stats, reduced = append(stats, "T² / limit"), append(reduced, rec.ReducedT2)
	}
	if rec.HasReducedQ && ok(rec.ReducedQ) {
		stats, reduced = append(stats, "Q / limit"), append(reduced, rec.ReducedQ)
	}
	if len(reduced) > 0 {
		p := newPlot("T² and Q against their 95 % limits", "", "statistic / 95 % limit")
		bars, err := plotter.NewBarChart(reduced, vg.Points(40))
		if err != nil {
			return nil, err
		}
		bars.Color = limitColor
		hi := 1.2
		for _, r := range reduced {
			hi = math.Max(hi, r*1.1)
		}
		limit, err := segment(-0.5, 1, float64(len(reduced))-0.5, 1, outlierColor, true)
		if err != nil {
			return nil, err
		}
		p.Add(bars, limit)
		p.Legend.Add("limit", limit)
		p.NominalX(stats...)
		p.Y.Min, p.Y.Max = 0, hi
		svg, err := toSVG(p)
		if err != nil {
			return nil, err
		}
		figs = append(figs, figure{ID: "prediction-limits", Caption: "Above 1: outside what the calibration covers", SVG: svg})
	}
	return figs, nil
}

// addExplanation draws the spectrum against the mean, the residual and
// the contribution of every variable, marking the largest (those the log
// stored, else the largest of the explanation).
func (v *spectrumView) addExplanation(e *inference.Explanation, stored *inference.Contributions) error {
	fig, err := linesFigure("spectrum-mean", "Spectrum against the calibration mean", "intensity after the recipe",
		e.Wavenumbers, []series{{"this spectrum", e.Spectrum, spectrumColor}, {"calibration mean", e.Mean, calibrationMeanColor}}, nil, false)
	if err != nil {
		return err
	}
	v.Figures[SectionSpectrum] = []figure{fig}
	if e.Residual != nil {
		fig, err := linesFigure("residual", "Residual: what the components leave", "residual (scaled units)",
			e.Wavenumbers, []series{{"residual", e.Residual, outlierColor}}, nil, true)
		if err != nil {
			return err
		}
		v.Figures[SectionResidual] = []figure{fig}
	} else {
		v.Missing = append(v.Missing, "The model computes no Q, so there is no residual to draw.")
	}
	for _, c := range []struct {
		id, stat string
		values   []float64
		has      bool
		top      []inference.VariableContribution
	}{
		{"contributions-t2", "T²", e.T2, stored != nil && stored.HasT2, topOf(stored, true)},
		{"contributions-q", "Q", e.Q, stored != nil && stored.HasQ, topOf(stored, false)},
	} {
		if c.values == nil {
			continue
		}
		top := c.top
		if !c.has {
			top = largest(e.Wavenumbers, c.values, spectrumTopMarked)
		}
		fig, err := linesFigure(c.id, "Contributions to "+c.stat, "contribution to "+c.stat,
			e.Wavenumbers, []series{{"each variable", c.values, spectrumColor}}, top, true)
		if err != nil {
			return err
		}
		v.Figures[SectionContributions] = append(v.Figures[SectionContributions], fig)
	}
	return nil
}

// addStored draws the contributions the log stored when the spectrum
// cannot be laid out: the largest as points over the axis.
func (v *spectrumView) addStored(c *inference.Contributions) error {
	for _, s := range []struct {
		id, stat string
		has      bool
		sum      *inference.ContributionSummary
	}{{"contributions-t2", "T²", c.HasT2, &c.T2}, {"contributions-q", "Q", c.HasQ, &c.Q}} {
		if !s.has || len(s.sum.Top) == 0 {
			continue
		}
		var pts plotter.XYs
		for _, t := range s.sum.Top {
			pts = append(pts, plotter.XY{X: t.Wavenumber, Y: t.Value})
		}
		p := newPlot("Largest contributions to "+s.stat, "wavenumber (cm⁻¹)", "contribution to "+s.stat)
		sc, err := scatter(finite(pts), outlierColor)
		if err != nil {
			return err
		}
		p.Add(sc)
		svg, err := toSVG(p)
		if err != nil {
			return err
		}
		v.Figures[SectionContributions] = append(v.Figures[SectionContributions],
			figure{ID: s.id, Caption: fmt.Sprintf("The %d largest, as the log stored them", len(s.sum.Top)), SVG: svg})
	}
	return nil
}

func topOf(c *inference.Contributions, t2 bool) []inference.VariableContribution {
	switch {
	case c == nil:
		return nil
	case t2:
		return c.T2.Top
	}
	return c.Q.Top
}

// largest returns the k largest values as contributions, largest first.
func largest(wn, values []float64, k int) []inference.VariableContribution {
	var top []inference.VariableContribution
	for j, val := range values {
		if !ok(val) {
			continue
		}
		i := len(top)
		if i == k && val <= top[k-1].Value {
			continue
		}
		if i < k {
			top = append(top, inference.VariableContribution{})
		} else {
			i--
		}
		for i > 0 && top[i-1].Value < val {
			top[i] = top[i-1]
			i--
		}
		top[i] = inference.VariableContribution{Wavenumber: wn[j], Value: val}
	}
	return top
}

// series is one line of a plot over the model's variables.
type series struct {
	name   string
	values []float64
	color  color.Color
}

// linesFigure draws each series over the axis wn, broken where the model
// excludes a region, with a zero line when zero is set and the marked
// contributions as labelled points.
func linesFigure(id, title, ylabel string, wn []float64, ss []series, marked []inference.VariableContribution, zero bool) (figure, error) {
	p := newPlot(title, "wavenumber (cm⁻¹)", ylabel)
	var all plotter.XYs
	for _, s := range ss {
		var pts plotter.XYs
		for j, y := range s.values {
			pts = append(pts, plotter.XY{X: wn[j], Y: y})
		}
		pts = finite(pts)
		all = append(all, pts...)
		var first *plotter.Line
		for _, run := range contiguousRuns(pts) {
			if len(run) == 0 {
				continue
			}
			l, err := plotter.NewLine(run)
			if err != nil {
				return figure{}, err
			}
			l.Color = s.color
			p.Add(l)
			if first == nil {
				first = l
			}
		}
		if first != nil && len(ss) > 1 {
			p.Legend.Add(s.name, first)
		}
	}
	if len(all) == 0 {
		return figure{}, fmt.Errorf("report: %s has nothing finite to draw", id)
	}
	if zero {
		lo, hi := xRange(all)
		z, err := segment(lo, 0, hi, 0, guideColor, true)
		if err != nil {
			return figure{}, err
		}
		p.Add(z)
	}
	if len(marked) > 0 {
		var pts plotter.XYs
		labels := make([]string, 0, len(marked))
		for i, m := range marked {
			pts = append(pts, plotter.XY{X: m.Wavenumber, Y: m.Value})
			// Neighbouring variables of one band crowd each other: the
			// three largest are named, the table names the regions.
			label := ""
			if i < labelledContributions {
				label = fmt.Sprintf("%.0f", m.Wavenumber)
			}
			labels = append(labels, label)
		}
		sc, err := scatter(pts, outlierColor)
		if err != nil {
			return figure{}, err
		}
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(3)
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels})
		if err != nil {
			return figure{}, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(7)
			l.TextStyle[i].Color = outlierColor
		}
		p.Add(sc, l)
		p.Legend.Add(fmt.Sprintf("the %d largest", len(marked)), sc)
	}
	svg, err := toSVGSized(p, wideWidth, plotHeight)
	if err != nil {
		return figure{}, err
	}
	caption := title
	if len(marked) > 0 {
		caption = fmt.Sprintf("%s; the %d largest marked, the %d largest named by wavenumber", title, len(marked), min(len(marked), labelledContributions))
	}
	return figure{ID: id, Caption: caption, SVG: svg}, nil
}

func contributionRegionRows(c *inference.Contributions) []regionRow {
	var rows []regionRow
	for _, s := range []struct {
		stat string
		has  bool
		sum  *inference.ContributionSummary
	}{{"T²", c.HasT2, &c.T2}, {"Q", c.HasQ, &c.Q}} {
		if !s.has {
			continue
		}
		for _, r := range s.sum.Regions {
			share := "–"
			if s.sum.Total != 0 {
				share = fmt.Sprintf("%.1f %%", 100*r.Value/s.sum.Total)
			}
			rows = append(rows, regionRow{s.stat, fmt.Sprintf("%g–%g cm⁻¹", r.Region[0], r.Region[1]), num(r.Value), share})
		}
	}
	return rows
}

func newRecordRow(r *predlog.Record) recordRow {
	row := recordRow{Role: r.Role.String(), Version: r.ModelVersion, Time: timeString(r.Time), T2: "–", Q: "–", Contributions: "none stored"}
	var conc string
	for a := range inference.Analyte(inference.NumAnalytes) {
		if r.Concentrations.Valid[a] {
			if conc != "" {
				conc += ", "
			}
			conc += fmt.Sprintf("%s %s", a, num(r.Concentrations.Value[a]))
		}
	}
	row.Concentrations = conc
	if r.HasReducedT2 {
		row.T2 = num(r.ReducedT2)
	}
	if r.HasReducedQ {
		row.Q = num(r.ReducedQ)
	}
	if c := r.Contributions; c != nil {
		row.Contributions = fmt.Sprintf("%d largest, %d regions", max(len(c.T2.Top), len(c.Q.Top)), max(len(c.T2.Regions), len(c.Q.Regions)))
	}
	return row
}

var spectrumTemplate = newPage("spectrum", `<header>
<h1>{{.Title}}</h1>
</header>
<section id="summary">
<table>{{range .Summary}}<tr><th>{{.Key}}</th><td class="id">{{.Value}}</td></tr>{{end}}</table>
</section>
{{if .Missing}}<section id="missing" class="missing">
<strong>Not on this page</strong>
<ul>{{range .Missing}}<li>{{.}}</li>{{end}}</ul>
</section>{{end}}
<section id="prediction">
<h2>Prediction</h2>
<table><tr><th>analyte</th><th>g/L</th><th>confidence</th></tr>
{{range .Analytes}}<tr><td>{{.Analyte}}</td><td class="num">{{.Concentration}}</td><td class="num">{{.Confidence}}</td></tr>
{{end}}</table>
<div class="grid">{{range index .Figures "prediction"}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}</div>
</section>
{{with index .Figures "spectrum"}}<section id="spectrum">
<h2>Spectrum against the calibration mean</h2>
{{range .}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
</section>{{end}}
{{with index .Figures "residual"}}<section id="residual">
<h2>Residual</h2>
<p class="note">The part of the spectrum (centred and scaled as the model does) that the model's components do not reproduce; Q is the sum of its squares.</p>
{{range .}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
</section>{{end}}
{{if or (index .Figures "contributions") .Regions}}<section id="contributions">
<h2>Contributions to T² and Q</h2>
<p class="note">Each variable's share of the statistic (api/messages.md, section 8.1): for Q its squared residual; for T² its part of the scores, which is negative when it pulls the spectrum back towards the calibration centre.</p>
{{range index .Figures "contributions"}}<figure id="{{.ID}}">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>{{end}}
{{if .Regions}}<table><tr><th>statistic</th><th>region</th><th>sum</th><th>share</th></tr>
{{range .Regions}}<tr><td>{{.Statistic}}</td><td>{{.Region}}</td><td class="num">{{.Value}}</td><td class="num">{{.Share}}</td></tr>
{{end}}</table>{{end}}
</section>{{end}}
<section id="records">
<h2>Records of this spectrum</h2>
<table><tr><th>role</th><th>model version</th><th>time</th><th>concentrations (g/L)</th><th>T² / limit</th><th>Q / limit</th><th>contributions</th></tr>
{{range .Records}}<tr><td>{{.Role}}</td><td class="id">{{.Version}}</td><td>{{.Time}}</td><td>{{.Concentrations}}</td><td class="num">{{.T2}}</td><td class="num">{{.Q}}</td><td>{{.Contributions}}</td></tr>
{{end}}</table>
</section>
</body>
</html>
`)
