package trainer_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// TestCheckOptionsNamesTheField: every option error wraps
// ErrInvalidOptions and names the contract's field.
func TestCheckOptionsNamesTheField(t *testing.T) {
	ds := synth.New(synth.Config{Seed: 3}).Dataset(14)
	axis := trainer.DefaultWavenumbers()
	flat := append([]float64(nil), axis...)
	flat[10] = flat[9]
	ids := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			out = append(out, ds.ScanID(i))
		}
		return out
	}
	cases := []struct {
		name string
		opts trainer.Options
		want string
	}{
		{"axis not increasing", trainer.Options{Wavenumbers: flat}, "wavenumbers[10]: "},
		{"axis not finite", trainer.Options{Wavenumbers: append(append([]float64(nil), axis[:2047]...), math.Inf(1))}, "wavenumbers[2047]: +Inf is not finite"},
		{"axis length", trainer.Options{Wavenumbers: axis[:100]}, "wavenumbers: 100 values for 2048"},
		{"unknown exclude id", trainer.Options{ExcludeScanIDs: []string{ds.ScanID(0), "nope"}}, `exclude_scan_ids[1]: no row of the CSV has scan_id "nope"`},
		{"duplicate exclude id", trainer.Options{ExcludeScanIDs: []string{ds.ScanID(0), ds.ScanID(0)}}, "exclude_scan_ids[1]"},
		{"rows after exclusion", trainer.Options{ExcludeScanIDs: ids(3)}, "cv_folds: 11 rows left after excluding 3; 10-fold cross-validation needs at least 12"},
		{"components above the rows", trainer.Options{Components: 12}, "components: 12 components, but 14 rows in 10 folds"},
		{"one fold", trainer.Options{Folds: 1}, "cv_folds"},
		{"unknown segments", trainer.Options{Segments: "blocks"}, `cv_segments: "blocks" is not one of random, consecutive, interleaved`},
		{"unknown rule", trainer.Options{Rule: "elbow"}, `component_rule: "elbow" is not one of one_standard_error, onesigma, randomization`},
		{"more folds than rows", trainer.Options{Folds: 15}, "cv_folds: 15 folds for 14 rows; at most 14 (leave-one-out)"},
		{"leave-one-out on too few rows", trainer.Options{Folds: 2, ExcludeScanIDs: ids(12)}, "cv_folds: leave-one-out on 2 rows left after excluding 12; it needs at least 3"},
		{"randomization with one count", trainer.Options{Rule: inference.RuleRandomization, MaxComponents: 1}, "component_rule: randomization tests smaller counts against the best one and needs at least 2 counts to try"},
		{"a rule and a fixed count", trainer.Options{Rule: inference.RuleOneSigma, Components: 3}, `component_rule: "onesigma" chooses the count, but components fixes it at 3`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trainer.CheckOptions(ds, tc.opts)
			if !errors.Is(err, trainer.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidOptions naming %q", err, tc.want)
			}
			if _, err := trainer.Train(context.Background(), ds, tc.opts, nil); !errors.Is(err, trainer.ErrInvalidOptions) {
				t.Errorf("Train: %v", err)
			}
		})
	}
	if _, err := trainer.CheckOptions(ds, trainer.Options{ExcludeScanIDs: ids(2), Components: 9}); err != nil {
		t.Errorf("12 rows, 9 components: %v", err)
	}
	if _, err := trainer.CheckOptions(ds, trainer.Options{Folds: 14, Segments: trainer.SegmentsInterleaved, Rule: inference.RuleRandomization}); err != nil {
		t.Errorf("leave-one-out on 14 rows: %v", err)
	}
	if _, err := trainer.CheckOptions(ds, trainer.Options{Folds: 3, ExcludeScanIDs: ids(11)}); err != nil {
		t.Errorf("leave-one-out on the 3 rows left: %v", err)
	}
}

// TestTrainFixedComponentsExclusionsAndReview: a fixed count is used as
// given, with the CV curve 1..count; excluded rows are out of the model
// (the fit equals one on a data set without them); the review holds every
// row's figures, and its limits are the ones the model computes.
func TestTrainFixedComponentsExclusionsAndReview(t *testing.T) {
	ds := synth.New(synth.Config{Seed: 11}).Dataset(120)
	exclude := []string{ds.ScanID(5), ds.ScanID(77)}
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 2, Components: 7, Folds: 5, ExcludeScanIDs: exclude}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Params.Review
	if res.Components != 7 || r.Selection.Rule != inference.RuleFixed || r.Selection.Components != 7 || r.Selection.Folds != 5 ||
		len(r.CVCurve) != 7 || r.Selection.MaxComponents != 7 || r.Selection.MinScoreComponents < 1 {
		t.Fatalf("selection %+v, %d CV points", r.Selection, len(r.CVCurve))
	}
	if len(r.ScanIDs) != 118 || res.Params.Meta.TrainedSamples != 118 || strings.Join(r.ExcludedScanIDs, ",") != strings.Join(exclude, ",") {
		t.Fatalf("%d rows used, %d trained samples, excluded %v", len(r.ScanIDs), res.Params.Meta.TrainedSamples, r.ExcludedScanIDs)
	}
	for _, id := range r.ScanIDs {
		if id == exclude[0] || id == exclude[1] {
			t.Fatalf("excluded row %s was used", id)
		}
	}
	// The same fit on a data set built without the two rows.
	kept := trainer.NewDataset(ds.Features(), 3)
	for i := 0; i < ds.Len(); i++ {
		if i != 5 && i != 77 {
			kept.AppendRow(ds.ScanID(i), ds.Row(i), ds.Labels(i))
		}
	}
	ref, err := trainer.Train(context.Background(), kept, trainer.Options{Seed: 2, Components: 7, Folds: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(ref.Params.Coef, res.Params.Coef, 1e-12) || ref.Params.RMSECV[0] != res.Params.RMSECV[0] {
		t.Error("a fit with exclusions differs from one on the data set without those rows")
	}

	m, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t2Lim, hasT2, qLim, hasQ := m.Limits()
	if !hasT2 || !hasQ || t2Lim != r.T2Limit || qLim != r.QLimit {
		t.Errorf("review limits %v %v, model's %v %v", r.T2Limit, r.QLimit, t2Lim, qLim)
	}
	n, q := r.Measured.Dims()
	if n != 118 || q != 3 || len(r.T2) != n || len(r.Q) != n {
		t.Fatalf("review shapes %d x %d, T2 %d, Q %d", n, q, len(r.T2), len(r.Q))
	}
	// The out-of-fold predictions reproduce RMSECV at the chosen count;
	// each row's T2 and Q are the model's own diagnostics of that row.
	for j := 0; j < 3; j++ {
		ss := 0.0
		for i := 0; i < n; i++ {
			e := r.CVPredicted.At(i, j) - r.Measured.At(i, j)
			ss += e * e
		}
		if got := math.Sqrt(ss / float64(n)); math.Abs(got-res.Params.RMSECV[j]) > 1e-9*got {
			t.Errorf("target %d: RMSECV from the review %v, model %v", j, got, res.Params.RMSECV[j])
		}
	}
	for _, i := range []int{0, 50, 117} {
		row := kept.Row(i)
		if kept.ScanID(i) != r.ScanIDs[i] {
			t.Fatalf("row %d is %s in the review", i, r.ScanIDs[i])
		}
		var pred inference.Prediction
		if err := m.Predict(&inference.Spectrum{Wavenumbers: res.Params.Meta.Wavenumbers, Intensities: row}, &pred); err != nil {
			t.Fatal(err)
		}
		d := pred.Diagnostics
		if math.Abs(d.T2-r.T2[i]) > 1e-8*d.T2 || math.Abs(d.Q-r.Q[i]) > 1e-8*d.Q {
			t.Errorf("row %d: review T2 %v Q %v, model %v %v", i, r.T2[i], r.Q[i], d.T2, d.Q)
		}
	}
	// Studentised residuals: finite, and about unit spread.
	ss := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < q; j++ {
			v := r.StudentizedResiduals.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("residual (%d,%d) = %v", i, j, v)
			}
			ss += v * v
		}
	}
	if rms := math.Sqrt(ss / float64(n*q)); rms < 0.7 || rms > 1.3 {
		t.Errorf("studentised residuals have rms %v, want about 1", rms)
	}
}

// TestTrainRecipeAndRegions: the model carries the recipe and regions,
// its coefficients have the selected points' length and its axis the
// whole spectrum's; a row the recipe cannot apply to (a zero band area
// under normalize) fails the training as an options error naming it.
func TestTrainRecipeAndRegions(t *testing.T) {
	ds := synth.New(synth.Config{Seed: 12}).Dataset(60)
	recipe, err := preprocess.ParseRecipe([]byte(`[{"step":"savgol","window":15,"polyorder":2,"deriv":1},{"step":"snv"}]`))
	if err != nil {
		t.Fatal(err)
	}
	regions := [][2]float64{{600, 1800}, {2800, 3100}}
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1, Components: 5, Folds: 5, Preprocessing: recipe, Regions: regions}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := preprocess.SelectRegions(trainer.DefaultWavenumbers(), regions)
	p := res.Params
	if len(p.XMean) != len(sel) || len(p.Meta.Wavenumbers) != 2048 || len(p.Regions) != 2 || len(p.Preprocessing) != 2 ||
		p.Review == nil || p.Review.SpikesRepaired != 0 {
		t.Fatalf("params: %d means for %d selected, axis %d, regions %v, recipe %v", len(p.XMean), len(sel), len(p.Meta.Wavenumbers), p.Regions, p.Preprocessing)
	}
	if _, err := inference.NewPLSModel(p, inference.ModelOptions{}); err != nil {
		t.Fatal(err)
	}

	norm, _ := preprocess.ParseRecipe([]byte(`[{"step":"normalize","region":[1000,1100]}]`))
	axis := trainer.DefaultWavenumbers()
	for j, w := range axis {
		if w >= 990 && w <= 1110 {
			ds.Row(17)[j] = 0 // the data set is ours: zero the band of one row
		}
	}
	_, err = trainer.Train(context.Background(), ds, trainer.Options{Seed: 1, Folds: 5, Preprocessing: norm}, nil)
	if !errors.Is(err, trainer.ErrInvalidOptions) || !strings.Contains(err.Error(), ds.ScanID(17)) {
		t.Errorf("err = %v, want ErrInvalidOptions naming %s", err, ds.ScanID(17))
	}
}
