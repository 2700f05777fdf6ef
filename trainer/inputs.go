package trainer

import (
	"context"
	"errors"
	"fmt"

	"ramanserve/inference/preprocess"
)

// inputs are the options resolved against one data set: what Train fits
// on. Everything here is checked before any fit starts (CheckOptions), so
// an upload whose options cannot apply is refused while its client waits.
type inputs struct {
	axis     []float64            // the full axis, length ds.Features()
	used     []int                // rows that enter the model; nil means all
	excluded []string             // Options.ExcludeScanIDs, as given
	selected []int                // columns (axis points) kept; nil means all
	pipeline *preprocess.Pipeline // nil without a recipe
	folds    int
	amax     int    // components cross-validation runs up to
	fixed    bool   // Options.Components fixes the count
	segments string // Options.Segments, "" resolved to SegmentsRandom
	rule     string // Options.Rule, "" resolved to DefaultRule
}

// rows is the number of rows that enter the model.
func (in *inputs) rows(ds *Dataset) int {
	if in.used == nil {
		return ds.Len()
	}
	return len(in.used)
}

// features is the number of points per row that enter the model.
func (in *inputs) features(ds *Dataset) int {
	if in.selected == nil {
		return ds.Features()
	}
	return len(in.selected)
}

// copies reports whether Train works on a prepared copy of the data set
// rather than on the data set itself.
func (in *inputs) copies() bool {
	return in.used != nil || in.selected != nil || in.pipeline != nil
}

// optionError wraps ErrInvalidOptions, naming the contract's field.
func optionError(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
}

// CheckOptions checks opts against ds without fitting anything: the axis
// (length, finite, strictly increasing), the recipe and the regions on
// that axis, every excluded scan id, the folds against the rows left and
// a fixed component count against what those rows allow. Errors wrap
// ErrInvalidOptions and name the contract's field (for example
// "preprocessing[1].window" or "exclude_scan_ids[3]").
//
// On success it returns the memory Train allocates for its prepared copy
// of ds (the rows left after exclusion, preprocessed, restricted to the
// regions): 0 when the options need no copy. The job that runs the
// training charges it to the training memory budget with the data set.
func CheckOptions(ds *Dataset, opts Options) (preparedBytes int64, err error) {
	in, err := resolve(ds, opts)
	if err != nil {
		return 0, err
	}
	if !in.copies() {
		return 0, nil
	}
	return preparedSize(in.rows(ds), in.features(ds), ds.NumTargets()), nil
}

// preparedSize is what a Dataset of n rows, p features and q targets
// allocates: whole blocks of intensities, labels and scan id headers (the
// ids' bytes are shared with the original).
func preparedSize(n, p, q int) int64 {
	blocks := int64((n + rowsPerBlock - 1) / rowsPerBlock)
	return blocks * rowsPerBlock * (int64(p+q)*8 + idHeaderBytes)
}

// resolve checks opts against ds and resolves them (see CheckOptions).
func resolve(ds *Dataset, opts Options) (*inputs, error) {
	in := &inputs{segments: opts.Segments, rule: opts.Rule}
	if err := checkSegmentsAndRule(opts); err != nil {
		return nil, err
	}
	if in.segments == "" {
		in.segments = SegmentsRandom
	}
	if in.rule == "" {
		in.rule = DefaultRule
	}
	var err error
	if in.axis, err = resolveAxis(opts.Wavenumbers, ds.Features()); err != nil {
		return nil, err
	}
	if in.used, err = resolveExclusions(ds, opts.ExcludeScanIDs); err != nil {
		return nil, err
	}
	in.excluded = append([]string(nil), opts.ExcludeScanIDs...)
	if len(opts.Preprocessing) > 0 {
		if in.pipeline, err = preprocess.Compile(opts.Preprocessing, in.axis); err != nil {
			return nil, RecipeError(err)
		}
	}
	if len(opts.Regions) > 0 {
		if in.selected, err = preprocess.SelectRegions(in.axis, opts.Regions); err != nil {
			return nil, RecipeError(err)
		}
		if len(in.selected) == len(in.axis) {
			in.selected = nil // the regions cover the whole axis
		}
	}
	if in.folds, in.amax, err = plan(in.rows(ds), in.features(ds), opts); err != nil {
		return nil, err
	}
	in.fixed = opts.Components > 0
	return in, nil
}

// RecipeError makes a preprocess error (about the axis, the recipe or the
// regions: parsing, compiling or selecting) an ErrInvalidOptions naming
// the same field, as every other option error does.
func RecipeError(err error) error {
	var fe *preprocess.FieldError
	if errors.As(err, &fe) {
		return optionError(fe.Field, "%s", fe.Reason)
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
}

// resolveAxis returns the axis of p points: axis itself when given,
// checked, or the default one.
func resolveAxis(axis []float64, p int) ([]float64, error) {
	if axis == nil {
		if p != NumWavenumbers {
			return nil, optionError("wavenumbers", "the data has %d intensity columns and no axis was given (the default axis has %d points)", p, NumWavenumbers)
		}
		return DefaultWavenumbers(), nil
	}
	if len(axis) != p {
		return nil, optionError("wavenumbers", "%d values for %d intensity columns", len(axis), p)
	}
	// The recipe's own check of the axis, so that the two never disagree.
	if err := preprocess.CheckAxis(axis); err != nil {
		return nil, RecipeError(err)
	}
	return axis, nil
}

// resolveExclusions returns the rows left after leaving out the scan ids
// in exclude (nil when nothing is excluded). Every id must name a row.
func resolveExclusions(ds *Dataset, exclude []string) ([]int, error) {
	if len(exclude) == 0 {
		return nil, nil
	}
	drop := make(map[string]int, len(exclude))
	for k, id := range exclude {
		if prev, dup := drop[id]; dup {
			return nil, optionError(fmt.Sprintf("exclude_scan_ids[%d]", k), "%q is already exclude_scan_ids[%d]", id, prev)
		}
		drop[id] = k
	}
	found := make([]bool, len(exclude))
	used := make([]int, 0, max(ds.Len()-len(exclude), 0))
	for i := 0; i < ds.Len(); i++ {
		if k, ok := drop[ds.ScanID(i)]; ok {
			found[k] = true
			continue
		}
		used = append(used, i)
	}
	for k, ok := range found {
		if !ok {
			return nil, optionError(fmt.Sprintf("exclude_scan_ids[%d]", k), "no row of the CSV has scan_id %q", exclude[k])
		}
	}
	return used, nil
}

// prepared is the data Train fits: the rows left, preprocessed and
// restricted to the regions, with what the despike steps did.
type prepared struct {
	ds                              *Dataset
	spikesRepaired, spectraDespiked int
}

// prepare builds the data Train fits. The recipe is applied to each row
// once, before cross-validation: each step works on one spectrum alone
// and learns nothing from the others, so a held-out fold's rows are
// preprocessed exactly as they would be at predict time (no leakage).
// Without exclusions, recipe or regions, it is ds itself.
func prepare(ctx context.Context, ds *Dataset, in *inputs) (*prepared, error) {
	if !in.copies() {
		return &prepared{ds: ds}, nil
	}
	n, p, q := in.rows(ds), in.features(ds), ds.NumTargets()
	out := NewDataset(p, q)
	var ws *preprocess.Workspace
	var full []float64
	if in.pipeline != nil {
		ws = in.pipeline.NewWorkspace()
		full = make([]float64, ds.Features())
	}
	res := &prepared{ds: out}
	for r := 0; r < n; r++ {
		if r%rowsPerBlock == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		i := r
		if in.used != nil {
			i = in.used[r]
		}
		x, y := out.Append(ds.ScanID(i))
		copy(y, ds.Labels(i))
		src := ds.Row(i)
		if in.pipeline != nil {
			copy(full, src)
			st, err := in.pipeline.Apply(full, ws)
			if err != nil {
				return nil, fmt.Errorf("%w: preprocessing: row of scan_id %q: %w", ErrInvalidOptions, ds.ScanID(i), err)
			}
			if st.Repaired > 0 {
				res.spikesRepaired += st.Repaired
				res.spectraDespiked++
			}
			src = full
		}
		if in.selected == nil {
			copy(x, src)
			continue
		}
		for k, c := range in.selected {
			x[k] = src[c]
		}
	}
	for i := 0; i < n; i++ {
		if !allFinite(out.Row(i)) {
			return nil, fmt.Errorf("%w: preprocessing: row of scan_id %q is not finite after the recipe", ErrInvalidOptions, out.ScanID(i))
		}
	}
	return res, nil
}
