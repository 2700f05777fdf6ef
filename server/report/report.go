// Package report renders a model's review page: one self-contained HTML
// document a chemometrician reads before promoting a version. Plots are
// drawn with gonum/plot's SVG back end and inlined; the page has no
// script, and nothing in it refers to another URL (no font, style sheet
// or image is fetched), so it can be saved, mailed and archived as one
// file. Every string that comes from the model file or the registry
// (scan ids, operator, notes, batches) is escaped by html/template, or by
// vgsvg inside a plot.
//
// The page is bounded whatever the model holds: scatter plots draw at
// most MaxPlotPoints points, at most MaxOutlierLabels outliers are
// labelled in the T2/Q plot and the tables list at most MaxTableRows rows
// (the page says how many were left out).
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/trainer"
)

// Bounds of the page.
const (
	// MaxPlotPoints bounds the points of one scatter plot; larger
	// training sets are thinned evenly (outliers are always drawn).
	MaxPlotPoints = 5000
	// MaxOutlierLabels bounds the scan ids written into the T2/Q plot,
	// the most extreme first, so that thousands of rows stay readable.
	MaxOutlierLabels = 30
	// MaxTableRows bounds each table (outliers, CV curve, excluded ids).
	MaxTableRows = 100
	// maxLabelRunes bounds one label in a plot; tables show the whole id.
	maxLabelRunes = 24
)

// Model is what a page is made of: the registry's entry (lineage, status,
// checksum) and the parameters read from the version's file.
type Model struct {
	Entry  registry.Entry
	Params *inference.PLSParams
	// Lab is the version's performance against the lab; nil leaves the
	// lab section out (the server keeps no lab results).
	Lab *LabEvidence
	// Scores chooses the scores plot's components and colouring.
	Scores ScoresChoice
}

// Render writes the review page of m to w.
func Render(w io.Writer, m Model) error {
	if m.Params == nil {
		return fmt.Errorf("report: model %q has no parameters", m.Entry.Version)
	}
	v, err := newView(m)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	_, err = buf.WriteTo(w)
	return err
}

// view is the template's data.
type view struct {
	Title     string
	Version   string
	Status    string
	Algorithm string
	Targets   string
	Summary   []row
	Missing   []string
	Notes     []string

	CV        []figure
	CVTable   *cvTable
	Selection []row
	Measured  []figure
	Residuals []figure
	Vectors   []figure
	T2Q       *figure
	// Spectra are the training spectra before and after the recipe.
	Spectra []figure
	// Components, VIP and Influence are trainer/review's figures.
	Components *componentTable
	Scores     *figure
	// Weights holds the X weights and the X loadings of the first
	// components over the wavenumber axis.
	Weights   []figure
	VIP       *figure
	Influence []figure
	Outliers  *outlierTable
	Lineage   []row
	Recipe    []recipeRow
	Regions   []row
	Lab       *labView
}

// row is one line of a two-column table.
type row struct{ Key, Value string }

// figure is one plot: its id (for tests and links), caption and SVG.
type figure struct {
	ID      string
	Caption string
	SVG     template.HTML
}

type cvTable struct {
	Targets []string
	Rows    []cvRow
	More    int
}

type cvRow struct {
	Components int
	RMSECV     []string
	Score      string
	Chosen     bool
}

type outlierTable struct {
	Targets []string
	Rows    []outlierRow
	Total   int
	More    int
}

type outlierRow struct {
	ScanID      string
	T2, Q       string
	Studentized []string
	Why         string
}

type recipeRow struct {
	N      int
	Step   string
	Params string
}

func newView(m Model) (*view, error) {
	p, e := m.Params, m.Entry
	v := &view{
		Version:   e.Version,
		Status:    string(e.Status),
		Algorithm: firstNonEmpty(e.Algorithm, p.Meta.Algorithm),
		Targets:   targetNames(p.Targets),
	}
	v.Title = "Model review: " + e.Version
	v.Summary = summaryRows(m)
	v.Lineage = lineageRows(m)
	v.Recipe = recipeRows(p)
	v.Regions = regionRows(p)

	vec, err := vectorFigures(p)
	if err != nil {
		return nil, err
	}
	v.Vectors = vec
	if v.Lab, err = newLabView(e.Version, m.Lab); err != nil {
		return nil, err
	}

	rv := p.Review
	if rv == nil {
		v.Missing = append(v.Missing,
			"This model carries no training record (it was imported or adopted, not trained here): "+
				"the cross-validation curve, measured against predicted, the residuals and the T² / Q plot of the "+
				"training spectra cannot be drawn. The regression vectors, the recipe and the lineage below come from its file and the registry.")
		return v, nil
	}
	if err := v.addReview(p, rv, m.Scores); err != nil {
		return nil, err
	}
	return v, nil
}

// addReview fills the parts of the page that come from training.
func (v *view) addReview(p *inference.PLSParams, rv *inference.Review, scores ScoresChoice) error {
	v.Selection = selectionRows(rv)
	v.CVTable = newCVTable(p.Targets, rv)
	cv, err := cvFigures(p.Targets, rv)
	if err != nil {
		return err
	}
	v.CV = cv
	if len(cv) == 0 {
		v.Missing = append(v.Missing, "The model's file holds no cross-validation curve.")
	}
	meas, res, err := predictionFigures(p.Targets, rv)
	if err != nil {
		return err
	}
	v.Measured, v.Residuals = meas, res
	if len(meas) == 0 {
		v.Missing = append(v.Missing, "The model's file holds no cross-validated predictions of its training rows.")
	}
	out := findOutliers(p.Targets, rv)
	t2q, err := t2qFigure(rv, out)
	if err != nil {
		return err
	}
	v.T2Q = t2q
	if t2q == nil {
		v.Missing = append(v.Missing, "The model's file holds no T² and Q of its training rows.")
	}
	v.Outliers = newOutlierTable(p.Targets, out)
	if v.Spectra, err = spectraFigures(p); err != nil {
		return err
	}
	if v.Spectra == nil {
		v.Notes = append(v.Notes, "The model's file keeps no training spectra (it was written before they were kept), so the spectra before and after the recipe are not drawn; the regression vectors (and, where the file allows, the weights and loadings) show where on the axis the model looks.")
	}
	if err := v.addFigures(p, scores); err != nil {
		return err
	}
	if n := rowsOf(rv); n > MaxPlotPoints {
		v.Notes = append(v.Notes, fmt.Sprintf("The scatter plots draw %d of the %d training rows, evenly spaced (in T² against Q, the %d most extreme outliers always).", MaxPlotPoints, n, MaxPlotPoints/2))
	}
	return nil
}

func summaryRows(m Model) []row {
	p, e := m.Params, m.Entry
	rows := []row{
		{"Version", e.Version},
		{"Status", string(e.Status)},
		{"Algorithm", firstNonEmpty(e.Algorithm, p.Meta.Algorithm)},
		{"Analytes", targetNames(p.Targets)},
		{"Features in the model", fmt.Sprint(len(p.XMean))},
	}
	if c := p.Meta.LatentComponents; c > 0 {
		rows = append(rows, row{"Latent components", fmt.Sprint(c)})
	} else if p.Rotations != nil {
		_, c := p.Rotations.Dims()
		rows = append(rows, row{"Latent components", fmt.Sprint(c)})
	}
	if len(p.RMSECV) == len(p.Targets) && len(p.Targets) > 0 {
		parts := make([]string, len(p.Targets))
		for j, t := range p.Targets {
			parts[j] = t.String() + " " + num(p.RMSECV[j])
		}
		rows = append(rows, row{summaryRMSECVKey, strings.Join(parts, ", ")})
	}
	return rows
}

func lineageRows(m Model) []row {
	p, e := m.Params, m.Entry
	var rows []row
	add := func(k, v string) {
		if v != "" {
			rows = append(rows, row{k, v})
		}
	}
	add("Trained at", timeString(firstTime(e.TrainedAt, p.Meta.TrainedAt)))
	add("Added to the registry", timeString(e.AddedAt))
	add("Operator", e.Operator)
	add("Source batches", strings.Join(e.SourceBatches, ", "))
	add("Notes", e.Notes)
	add("Training job", e.JobID)
	add("Training CSV SHA-256", e.TrainingCSVSHA256)
	if e.TrainingRows > 0 {
		add("Rows in the CSV", fmt.Sprint(e.TrainingRows))
	}
	// The excluded ids are in the model file only (the registry's entry
	// keeps the counts).
	used, excluded := e.RowsUsed, []string(nil)
	if rv := p.Review; rv != nil {
		if n := rowsOf(rv); n > 0 {
			used = n
		}
		excluded = rv.ExcludedScanIDs
	}
	if used > 0 {
		add("Rows used", fmt.Sprint(used))
	}
	if len(excluded) > 0 {
		add("Rows excluded", fmt.Sprintf("%d: %s", len(excluded), boundedList(excluded, MaxTableRows)))
	}
	if rv := p.Review; rv != nil {
		add("Spikes repaired", fmt.Sprintf("%d points in %d spectra", rv.SpikesRepaired, rv.SpectraDespiked))
	}
	add("Imported from", e.ImportedFrom)
	add("Target (import sidecar)", e.Target)
	add("Model file", e.File)
	if e.SizeBytes > 0 {
		add("File size", fmt.Sprintf("%d bytes", e.SizeBytes))
	}
	add("File SHA-256", e.SHA256)
	return rows
}

func selectionRows(rv *inference.Review) []row {
	s := rv.Selection
	rule := s.Rule
	switch s.Rule {
	case inference.RuleOneStandardError:
		rule = "one standard error: the fewest components whose CV score is within one standard error (across folds) of the best"
	case inference.RuleOneSigma:
		rule = "onesigma (R pls): the fewest components whose CV score less its own standard error (from the CV residuals) is below the best"
	case inference.RuleRandomization:
		rule = fmt.Sprintf("randomization (van der Voet): the fewest components not significantly worse than the best (p > %g)", trainer.RandomizationAlpha)
	case inference.RuleFixed:
		rule = "fixed: the count was given in the training options"
	}
	rows := []row{{"Chosen components", fmt.Sprint(s.Components)}, {"Rule", rule}}
	if s.MaxComponents > 0 {
		rows = append(rows, row{"Counts tried", fmt.Sprintf("1 to %d", s.MaxComponents)})
	}
	if s.Folds > 0 {
		folds := fmt.Sprint(s.Folds)
		if s.Segments != "" {
			folds += ", " + s.Segments + " segments"
		}
		rows = append(rows, row{"Cross-validation folds", folds})
	}
	if s.MinScoreComponents > 0 {
		rows = append(rows, row{"Lowest CV score at", fmt.Sprintf("%d components", s.MinScoreComponents)})
	}
	return rows
}

func newCVTable(targets []inference.Analyte, rv *inference.Review) *cvTable {
	if len(rv.CVCurve) == 0 {
		return nil
	}
	t := &cvTable{Targets: names(targets)}
	for i, pt := range rv.CVCurve {
		if i == MaxTableRows {
			t.More = len(rv.CVCurve) - i
			break
		}
		r := cvRow{Components: pt.Components, Score: num(pt.Score), Chosen: pt.Components == rv.Selection.Components}
		for j := range targets {
			r.RMSECV = append(r.RMSECV, numAt(pt.RMSECV, j))
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

func newOutlierTable(targets []inference.Analyte, out []outlier) *outlierTable {
	t := &outlierTable{Targets: names(targets), Total: len(out)}
	for i, o := range out {
		if i == MaxTableRows {
			t.More = len(out) - i
			break
		}
		r := outlierRow{ScanID: o.scanID, T2: num(o.t2), Q: num(o.q), Why: strings.Join(o.why, ", ")}
		for j := range targets {
			r.Studentized = append(r.Studentized, numAt(o.studentized, j))
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

func recipeRows(p *inference.PLSParams) []recipeRow {
	rows := make([]recipeRow, 0, len(p.Preprocessing))
	for i, s := range p.Preprocessing {
		var params string
		switch s.Kind {
		case "despike":
			params = fmt.Sprintf("threshold %s, width %d", num(s.Threshold), s.Width)
		case "savgol":
			params = fmt.Sprintf("window %d, polyorder %d, deriv %d", s.Window, s.PolyOrder, s.Deriv)
		case "snv":
			params = "per-spectrum mean and standard deviation"
		case "als_baseline":
			params = fmt.Sprintf("lam %s, p %s, iterations %d", num(s.Lambda), num(s.P), s.Iterations)
		case "normalize":
			params = fmt.Sprintf("divided by the band area over %s to %s cm⁻¹", num(s.Region[0]), num(s.Region[1]))
		}
		rows = append(rows, recipeRow{N: i + 1, Step: string(s.Kind), Params: params})
	}
	return rows
}

func regionRows(p *inference.PLSParams) []row {
	axis := p.Meta.Wavenumbers
	var rows []row
	if lo, hi, ok := p.Meta.WavenumberRange(); ok {
		rows = append(rows, row{"Axis", fmt.Sprintf("%d points, %s to %s cm⁻¹", len(axis), num(lo), num(hi))})
	} else {
		rows = append(rows, row{"Axis", "not recorded in the model file"})
	}
	if len(p.Regions) == 0 {
		rows = append(rows, row{"Regions", "the whole axis"})
		return rows
	}
	parts := make([]string, 0, len(p.Regions))
	for _, r := range p.Regions {
		parts = append(parts, fmt.Sprintf("%s–%s", num(r[0]), num(r[1])))
	}
	rows = append(rows, row{"Regions (cm⁻¹, inclusive)", strings.Join(parts, ", ")})
	rows = append(rows, row{"Points in the model", fmt.Sprint(len(p.XMean))})
	return rows
}

// outlier is one training row beyond a limit.
type outlier struct {
	row         int
	scanID      string
	t2, q       float64
	studentized []float64
	why         []string
	severity    float64 // the largest ratio to its limit
}

// findOutliers lists the rows beyond the 95 % T2 or Q limit or with a
// studentised residual above 3, the most extreme first.
func findOutliers(targets []inference.Analyte, rv *inference.Review) []outlier {
	n := rowsOf(rv)
	var out []outlier
	for i := range n {
		o := outlier{row: i, scanID: at(rv.ScanIDs, i), t2: math.NaN(), q: math.NaN()}
		if len(rv.T2) == n {
			o.t2 = rv.T2[i]
			if rv.T2Limit > 0 && o.t2 > rv.T2Limit {
				o.why = append(o.why, "T²")
				o.severity = max(o.severity, o.t2/rv.T2Limit)
			}
		}
		if len(rv.Q) == n {
			o.q = rv.Q[i]
			if rv.QLimit > 0 && o.q > rv.QLimit {
				o.why = append(o.why, "Q")
				o.severity = max(o.severity, o.q/rv.QLimit)
			}
		}
		if s := rv.StudentizedResiduals; s != nil {
			if r, c := s.Dims(); r == n && c == len(targets) {
				for j := range c {
					v := s.At(i, j)
					o.studentized = append(o.studentized, v)
					if math.Abs(v) > 3 {
						o.why = append(o.why, "residual "+targets[j].String())
						o.severity = max(o.severity, math.Abs(v)/3)
					}
				}
			}
		}
		if len(o.why) > 0 {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].severity > out[b].severity })
	return out
}

// rowsOf is the number of training rows the review describes.
func rowsOf(rv *inference.Review) int {
	switch {
	case len(rv.ScanIDs) > 0:
		return len(rv.ScanIDs)
	case rv.Measured != nil:
		r, _ := rv.Measured.Dims()
		return r
	default:
		return len(rv.T2)
	}
}

func targetNames(t []inference.Analyte) string { return strings.Join(names(t), ", ") }

func names(t []inference.Analyte) []string {
	s := make([]string, len(t))
	for i, a := range t {
		s[i] = a.String()
	}
	return s
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return fmt.Sprintf("row %d", i+1)
}

func numAt(v []float64, i int) string {
	if i < len(v) {
		return num(v[i])
	}
	return "–"
}

// num formats a figure with four significant digits.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.4g", v)
}

func boundedList(s []string, limit int) string {
	if len(s) <= limit {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:limit], ", ") + fmt.Sprintf(" and %d more", len(s)-limit)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstTime(t ...time.Time) time.Time {
	for _, v := range t {
		if !v.IsZero() {
			return v
		}
	}
	return time.Time{}
}

func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// shorten bounds a label drawn into a plot.
func shorten(s string) string {
	r := []rune(s)
	if len(r) <= maxLabelRunes {
		return s
	}
	return string(r[:maxLabelRunes-1]) + "…"
}
