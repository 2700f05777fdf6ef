package report

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"ramanserve/inference"
	"ramanserve/trainer/review"
)

// SectionSpectra holds the training spectra before and after the recipe.
const SectionSpectra = "spectra"

// meanColor draws the mean spectrum, thicker than the rows beside it.
var meanColor = color.RGBA{R: 0x22, G: 0x22, B: 0x22, A: 0xff}

// spectraColors tell the kept training spectra apart; colourNames name
// them in the captions, which list the spectra (a legend of six entries
// would cover the data).
var colourNames = []string{"blue", "orange", "green", "purple", "brown"}

var spectraColors = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// spectraFigures draws the mean of the training spectra and the few the
// file keeps (Review.RawSpectra), as uploaded over the whole axis, and
// after the recipe over the points the model uses. The mean after the
// recipe is the model's own x_mean (the mean of the preprocessed rows,
// which is not the recipe applied to the raw mean: SNV and derivatives
// of a mean differ from the mean of theirs); each kept spectrum is run
// through the recipe here. Excluded regions are shaded in both. nil when
// the file keeps no spectra (written before they were).
func spectraFigures(p *inference.PLSParams) ([]figure, error) {
	ts := review.Spectra(p) // the numbers, shared with GET /model/{version}/review
	if ts == nil {
		return nil, nil
	}
	axis := p.Meta.Wavenumbers
	k, n := len(ts.Raw), len(axis)
	x, runs, excluded, unit := modelAxis(p, len(p.XMean))
	name := func(i int) string { return shorten(at(p.Review.ScanIDs, ts.Rows[i])) }

	// Before: every point of the axis.
	before := newPlot("Training spectra as uploaded", "wavenumber (cm⁻¹)", "intensity (as uploaded)")
	var all plotter.XYs
	var lines []plot.Plotter
	for i := range k {
		var pts plotter.XYs
		for j, w := range axis {
			pts = append(pts, plotter.XY{X: w, Y: ts.Raw[i][j]})
		}
		l, err := spectrumLine(finite(pts), i)
		if err != nil {
			return nil, err
		}
		if l == nil {
			continue
		}
		all, lines = append(all, l.XYs...), append(lines, l)
		if i == 0 {
			before.Legend.Add("mean", l)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	if err := finishSpectra(before, all, lines, excluded, 1+min(len(excluded), 1)); err != nil {
		return nil, err
	}
	svgBefore, err := toSVGSized(before, wideWidth, plotHeight)
	if err != nil {
		return nil, err
	}
	listed := make([]string, 0, k-1)
	for i := 1; i < k; i++ {
		listed = append(listed, fmt.Sprintf("%s (%s)", name(i-1), colourNames[(i-1)%len(colourNames)]))
	}
	out := []figure{{ID: "spectra-raw", SVG: svgBefore, Caption: fmt.Sprintf(
		"The mean of the training spectra (black) and %d of them, evenly spaced in training order: %s; as uploaded, over the whole axis of %d points; excluded regions shaded.",
		k-1, strings.Join(listed, ", "), n)}}

	// After: the recipe, then the model's points.
	if ts.Preprocessed == nil {
		return out, nil // the model file's recipe or regions do not apply to its axis: the page says what it can
	}
	after := newPlot("The same after the recipe", unit, recipeUnit(p))
	all, lines = nil, nil
	for i, vals := range ts.Preprocessed {
		if vals == nil {
			continue // a spectrum the recipe refuses is left out, as training would have refused it
		}
		named := false
		for _, r := range runs {
			var pts plotter.XYs
			for m := r[0]; m < r[1]; m++ {
				pts = append(pts, plotter.XY{X: x[m], Y: vals[m]})
			}
			l, err := spectrumLine(finite(pts), i)
			if err != nil {
				return nil, err
			}
			if l == nil {
				continue
			}
			if !named && i == 0 {
				after.Legend.Add("mean", l)
				named = true
			}
			all, lines = append(all, l.XYs...), append(lines, l)
		}
	}
	if len(all) == 0 {
		return out, nil
	}
	if err := finishSpectra(after, all, lines, excluded, 1+min(len(excluded), 1)); err != nil {
		return nil, err
	}
	svgAfter, err := toSVGSized(after, wideWidth, plotHeight)
	if err != nil {
		return nil, err
	}
	recipe := "no recipe: the model uses the intensities as uploaded"
	if len(p.Preprocessing) > 0 {
		recipe = fmt.Sprintf("the recipe (%d steps)", len(p.Preprocessing))
		if len(p.Preprocessing) == 1 {
			recipe = "the recipe (1 step)"
		}
	}
	return append(out, figure{ID: "spectra-preprocessed", SVG: svgAfter, Caption: fmt.Sprintf(
		"The same spectra after %s, over the %d points the model uses, in %ss; the mean is the model's own (the mean of every preprocessed training spectrum).",
		recipe, len(p.XMean), recipeUnit(p))}), nil
}

// maxLinePoints bounds the points of one drawn spectrum: more than the
// plot has columns of pixels only adds bytes.
const maxLinePoints = 800

// decimate keeps at most about maxLinePoints of pts: the first and last,
// and in each of maxLinePoints/2 runs of neighbours the lowest and the
// highest in their order, so that a spike (what a raw spectrum is looked
// at for) survives the thinning.
func decimate(pts plotter.XYs) plotter.XYs {
	if len(pts) <= maxLinePoints {
		return pts
	}
	buckets := maxLinePoints / 2
	out := plotter.XYs{pts[0]}
	for b := range buckets {
		lo, hi := 1+b*(len(pts)-2)/buckets, 1+(b+1)*(len(pts)-2)/buckets
		if lo >= hi {
			continue
		}
		imin, imax := lo, lo
		for i := lo; i < hi; i++ {
			if pts[i].Y < pts[imin].Y {
				imin = i
			}
			if pts[i].Y > pts[imax].Y {
				imax = i
			}
		}
		out = append(out, pts[min(imin, imax)])
		if imin != imax {
			out = append(out, pts[max(imin, imax)])
		}
	}
	return append(out, pts[len(pts)-1])
}

// spectrumLine is spectrum i's line, decimated: the mean (i = 0) thick
// and dark, the others thin in their colours; nil for no points.
func spectrumLine(pts plotter.XYs, i int) (*plotter.Line, error) {
	if len(pts) == 0 {
		return nil, nil
	}
	l, err := plotter.NewLine(decimate(pts))
	if err != nil {
		return nil, err
	}
	if i == 0 {
		l.Color, l.Width = meanColor, vg.Points(1.8)
	} else {
		l.Color, l.Width = spectraColors[(i-1)%len(spectraColors)], vg.Points(0.8)
	}
	return l, nil
}

// finishSpectra sets the y range with room for the legend, shades the
// excluded regions behind the lines and adds them.
func finishSpectra(pl *plot.Plot, all plotter.XYs, lines []plot.Plotter, excluded [][2]float64, entries int) error {
	lo, hi := yRange(all)
	legendRoom(pl, lo, hi, entries)
	if err := shadeExcluded(pl, excluded, pl.Y.Min, pl.Y.Max); err != nil {
		return err
	}
	pl.Add(lines...)
	return nil
}
