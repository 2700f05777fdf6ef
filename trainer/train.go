package trainer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// Algorithm is the Meta.Algorithm of models trained here.
const Algorithm = "PLS2-NIPALS"

// DefaultMaxComponents is the largest component count cross-validation
// tries by default.
const DefaultMaxComponents = 20

// foldSeedStream is the PCG stream of the fold shuffle; the seed is
// Options.Seed.
const foldSeedStream = 0x52414d414e // "RAMAN"

// How Options.Segments assigns the n rows (in data set order, after
// exclusion) to the K folds.
const (
	// SegmentsRandom: a permutation seeded with Options.Seed, cut into K
	// contiguous parts (the default).
	SegmentsRandom = "random"
	// SegmentsConsecutive: contiguous blocks in row order.
	SegmentsConsecutive = "consecutive"
	// SegmentsInterleaved: row i (from 0) goes to fold i mod K.
	SegmentsInterleaved = "interleaved"
)

// Options control Train. The zero value means: 10 random folds, up to 20
// components chosen by DefaultRule, mean-centring, seed 0, one worker per
// CPU, the default 2048-point axis and the targets EPA, DHA, DPA.
type Options struct {
	// Folds is K of K-fold cross-validation; 0 means DefaultFolds. K
	// equal to the rows left is leave-one-out.
	Folds int
	// Segments assigns rows to folds: SegmentsRandom (also ""),
	// SegmentsConsecutive or SegmentsInterleaved.
	Segments string
	// Rule chooses the component count from the CV curve (see
	// selection.go): inference.RuleOneStandardError, RuleOneSigma or
	// RuleRandomization; "" means DefaultRule. It must be "" when
	// Components fixes the count.
	Rule string
	// MaxComponents caps the components tried; 0 means
	// DefaultMaxComponents. The cap actually used is
	// min(MaxComponents, n-1, smallest training part - 1, p).
	MaxComponents int
	// Components, when above 0, fixes the component count (selection
	// rule "fixed"): cross-validation still runs for 1..Components, for
	// the CV curve and the model's RMSECV, but does not choose. Above the
	// cap the rows allow it is ErrInvalidOptions. MaxComponents is then
	// ignored.
	Components int
	// ExcludeScanIDs are rows left out of the model; each must name a
	// row of the data set.
	ExcludeScanIDs []string
	// Preprocessing is applied to every row (on the whole axis) before
	// anything else, as the model applies it at predict time.
	Preprocessing preprocess.Recipe
	// Regions restrict the model to the axis points inside these
	// inclusive wavenumber ranges, after Preprocessing; nil means all.
	Regions [][2]float64
	// Autoscale divides every wavenumber (and label) by its standard
	// deviation after centring (scikit-learn's scale=True). The default,
	// false, is mean-centring only: the chemometric norm for spectra (and
	// R pls's default), because autoscaling inflates the noise of
	// wavenumbers without signal to the same weight as the bands.
	Autoscale bool
	// Seed seeds the shuffle that assigns samples to folds (random
	// segments) and the sign flips of the randomization rule.
	Seed uint64
	// Workers is the number of fits run in parallel; 0 means GOMAXPROCS.
	Workers int
	// Wavenumbers is the axis stored in the model, one value per intensity
	// column of the data set (before Regions select points); nil means
	// DefaultWavenumbers() (only valid for 2048 columns).
	Wavenumbers []float64
	// Targets name the label columns; nil means EPA, DHA, DPA (q = 3).
	Targets []inference.Analyte
	// Now stamps Meta.TrainedAt; nil means time.Now.
	Now func() time.Time
}

// ComponentStats are the cross-validated figures of one component count.
type ComponentStats struct {
	Components int
	RMSECV     []float64 // per target, g/L
	R2CV       []float64 // per target
	// Score is the selection criterion: the mean over targets of
	// RMSECV_j / sd(y_j).
	Score float64
	// ScoreSE is the standard error of Score the rule reads: across
	// folds (one_standard_error, fixed), or from the CV residuals
	// (onesigma, randomization; selection.go).
	ScoreSE float64
	// PValue is the randomization rule's p-value of this count against
	// the count of lowest Score; NaN when not tested (other rules, and
	// counts from the lowest on).
	PValue float64
}

// Result is a trained model and its figures.
type Result struct {
	// Params is ready for inference.NewPLSModel; Meta.Version is left
	// empty for the registry to assign.
	Params *inference.PLSParams
	// Components is the chosen count A, out of MaxComponents tried.
	Components    int
	MaxComponents int
	Folds         int
	Autoscale     bool
	// CV holds the cross-validated figures for 1..MaxComponents.
	CV []ComponentStats
	// RMSEC and R2C are the calibration (fit on all samples) figures at A.
	RMSEC, R2C []float64
	// NIter is the number of NIPALS iterations per component of the
	// final fit.
	NIter []int
}

// ProgressFunc receives progress: done out of total steps, called
// after each component of each fit (monotonic, done reaches total only at
// the end of the last fit). It is called from the fitting goroutines one
// at a time and must not block for long.
type ProgressFunc func(done, total int)

// TotalSteps returns the number of progress steps Train reports for n
// samples (rows left after exclusion), p features (points left after the
// regions) and the given options: (K + 1) x A_max, one step per fold x
// component plus A_max for the final fit on all samples.
func TotalSteps(n, p int, opts Options) int {
	folds, amax, _ := plan(n, p, opts)
	return (folds + 1) * amax
}

// plan resolves the fold count and the component count cross-validation
// runs up to, for n rows of p features. Errors name the contract's field.
//
// K-fold cross-validation needs at least K + 2 rows (MinRows), except
// leave-one-out (K = n), which needs 3: every training part must keep
// more rows than one component needs.
func plan(n, p int, opts Options) (folds, amax int, err error) {
	folds = opts.Folds
	if folds == 0 {
		folds = DefaultFolds
	}
	if folds < 2 {
		return 0, 0, optionError("cv_folds", "%d folds, need at least 2", folds)
	}
	what := "rows"
	if len(opts.ExcludeScanIDs) > 0 {
		what = fmt.Sprintf("rows left after excluding %d", len(opts.ExcludeScanIDs))
	}
	switch {
	case folds > n:
		return 0, 0, optionError("cv_folds", "%d folds for %d %s; at most %d (leave-one-out)", folds, n, what, n)
	case folds == n && n < minLeaveOneOutRows:
		return 0, 0, optionError("cv_folds", "leave-one-out on %d %s; it needs at least %d", n, what, minLeaveOneOutRows)
	case folds < n && n < MinRows(folds):
		return 0, 0, optionError("cv_folds", "%d %s; %d-fold cross-validation needs at least %d (or cv_folds = %d, leave-one-out)",
			n, what, folds, MinRows(folds), n)
	}
	largestFold := (n + folds - 1) / folds
	allowed := min(n-1, n-largestFold-1, p)
	if opts.Components < 0 || opts.MaxComponents < 0 {
		return 0, 0, optionError("components", "must be positive")
	}
	if opts.Components > 0 {
		if opts.Components > allowed {
			return 0, 0, optionError("components", "%d components, but %d rows in %d folds (and %d features) allow at most %d",
				opts.Components, n, folds, p, allowed)
		}
		if opts.Rule != "" {
			return 0, 0, optionError("component_rule", "%q chooses the count, but components fixes it at %d; give one of the two", opts.Rule, opts.Components)
		}
		return folds, opts.Components, nil
	}
	amax = opts.MaxComponents
	if amax == 0 {
		amax = DefaultMaxComponents
	}
	amax = min(amax, allowed)
	if amax < 1 {
		return 0, 0, optionError("max_components", "no component count fits %d rows", n)
	}
	if opts.Rule == inference.RuleRandomization && amax < 2 {
		return 0, 0, optionError("component_rule", "randomization tests smaller counts against the best one and needs at least 2 counts to try; max_components, %d rows in %d folds and %d features allow %d",
			n, folds, p, amax)
	}
	return folds, amax, nil
}

// minLeaveOneOutRows is the fewest rows leave-one-out accepts: each
// training part of n-1 rows must fit one component on n-2 degrees of
// freedom.
const minLeaveOneOutRows = 3

// checkSegmentsAndRule refuses a segment type or rule this package does
// not know, naming the contract's field.
func checkSegmentsAndRule(opts Options) error {
	switch opts.Segments {
	case "", SegmentsRandom, SegmentsConsecutive, SegmentsInterleaved:
	default:
		return optionError("cv_segments", "%q is not one of %s, %s, %s", opts.Segments, SegmentsRandom, SegmentsConsecutive, SegmentsInterleaved)
	}
	switch opts.Rule {
	case "", inference.RuleOneStandardError, inference.RuleOneSigma, inference.RuleRandomization:
	default:
		return optionError("component_rule", "%q is not one of %s, %s, %s", opts.Rule,
			inference.RuleOneStandardError, inference.RuleOneSigma, inference.RuleRandomization)
	}
	return nil
}

// foldAssignment returns fold[i] in [0, K) for each of the n rows, as
// Options.Segments says. Random and consecutive segments cut a sequence
// (a seeded permutation, or the rows in order) into K contiguous parts
// whose sizes differ by at most one, the first n mod K parts one longer:
// the sizes of scikit-learn's KFold and of R pls's cvsegments, which give
// ceiling(n/K) rows to the first K - (K ceiling(n/K) - n) segments and one
// fewer to the rest, the same counts.
func foldAssignment(n, folds int, segments string, seed uint64) []int {
	fold := make([]int, n)
	if segments == SegmentsInterleaved {
		for i := range fold {
			fold[i] = i % folds
		}
		return fold
	}
	var order []int
	if segments == SegmentsConsecutive {
		order = make([]int, n)
		for i := range order {
			order[i] = i
		}
	} else {
		order = rand.New(rand.NewPCG(seed, foldSeedStream)).Perm(n)
	}
	pos := 0
	for f := 0; f < folds; f++ {
		size := n / folds
		if f < n%folds {
			size++
		}
		for _, i := range order[pos : pos+size] {
			fold[i] = f
		}
		pos += size
	}
	return fold
}

// Train fits a PLS2 model to ds, choosing the component count by K-fold
// cross-validation, and returns it with its figures.
//
// Inputs. The excluded rows are left out, the recipe is applied to each
// row once and the regions' points are kept (prepare); n and p below are
// the rows and points left.
//
// Component selection (documented rule). The samples are assigned to K
// folds (default 10) as Options.Segments says: by default shuffled with
// Options.Seed and cut into K parts (foldAssignment); K = n is
// leave-one-out. For each fold, a NIPALS
// PLS2 with A_max = min(MaxComponents (20), n-1, n_train-1, p) components
// (Options.Components when it fixes the count) is fitted once on the
// other folds (centring and scaling estimated on them alone) and predicts
// the held-out fold with k = 1..A_max components (the k-component model
// is the first k components of the A_max fit: B_k = W_k pinv(P_k'W_k)
// Q_k'). From the pooled out-of-fold predictions, for each k and target j:
//
//	RMSECV_jk = sqrt(sum_i (yhat_ijk - y_ij)^2 / n)
//	R2CV_jk   = 1 - sum_i (yhat_ijk - y_ij)^2 / sum_i (y_ij - mean_j)^2
//	Score_k   = (1/q) sum_j RMSECV_jk / sd_j        (sd_j: ddof 1 over all n)
//
// The per-fold score s_fk is the same mean with RMSE over fold f only,
// and SE_k = sd_f(s_fk) / sqrt(K). With k* = argmin_k Score_k, the
// one_standard_error rule chooses the smallest A with Score_A <= Score_k*
// + SE_k* (Hastie, Tibshirani & Friedman, The Elements of Statistical
// Learning, 2nd ed., sec. 7.10); the onesigma and randomization rules (R
// pls's selectNcomp) are defined in selection.go; Options.Rule picks one.
// With Options.Components, A is that count (rule "fixed") and the curve
// only reports. The final model is then fitted on all n samples with A
// components.
//
// Divergence (documented rule). Train fails with ErrTrainingDiverged when
// any fit yields a non-finite weight, loading, coefficient or prediction,
// when a label column has zero variance, or when the chosen model's CV R2
// (R2CV_jA above) is <= 0 for any target: such a model predicts that
// target no better than its mean.
//
// Metrics. Params.Meta.RMSE and R2 and Params.RMSECV are the
// cross-validated RMSECV_jA and R2CV_jA; RMSEC and R2C (fit on all
// samples) are in Result. Params also carries the diagnostics the model
// engine needs: rotations R = W pinv(P'W), loadings P, the ddof-1
// variance of each calibration score t = xs R, each calibration sample's
// Q = ||xs - t P'||^2, and each sample's held-out T2 and Q at the chosen
// count (under its fold's model, Q rescaled to the final model: see
// outOfFold.heldOutQ), to which the model fits its 95 % limits
// (inference.HeldOutLimit).
//
// Progress: see ProgressFunc and TotalSteps. Cancelling ctx stops every
// fit at the next component and returns ctx.Err().
func Train(ctx context.Context, ds *Dataset, opts Options, progress ProgressFunc) (*Result, error) {
	in, err := resolve(ds, opts)
	if err != nil {
		return nil, err
	}
	prep, err := prepare(ctx, ds, in)
	if err != nil {
		return nil, err
	}
	res, err := fit(ctx, prep.ds, in, opts, progress)
	if err != nil {
		return nil, err
	}
	res.Params.Preprocessing = append(preprocess.Recipe(nil), opts.Preprocessing...)
	if in.selected != nil {
		res.Params.Regions = append([][2]float64(nil), opts.Regions...)
	}
	res.Params.Review.SpikesRepaired = prep.spikesRepaired
	res.Params.Review.SpectraDespiked = prep.spectraDespiked
	res.Params.Review.ExcludedScanIDs = in.excluded
	res.Params.Review.RawSpectra, res.Params.Review.RawSpectraRows = rawSpectra(ds, in)
	return res, nil
}

// reviewSpectra is how many training spectra the review keeps as
// uploaded, beside their mean.
const reviewSpectra = 5

// rawSpectra returns the mean of the rows that enter the model as
// uploaded (before the recipe, over the whole axis), then reviewSpectra
// of those rows evenly spaced in training order, and their numbers among
// the training rows: what the review draws before and after the recipe.
func rawSpectra(ds *Dataset, in *inputs) (*mat.Dense, []int) {
	n, p := in.rows(ds), ds.Features()
	if n == 0 {
		return nil, nil
	}
	source := func(r int) int {
		if in.used != nil {
			return in.used[r]
		}
		return r
	}
	k := min(reviewSpectra, n)
	out := mat.NewDense(k+1, p, nil)
	mean := out.RawRowView(0)
	for r := range n {
		for j, v := range ds.Row(source(r)) {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	rows := make([]int, k)
	for i := range rows {
		if k > 1 {
			rows[i] = i * (n - 1) / (k - 1)
		}
		out.SetRow(i+1, ds.Row(source(rows[i])))
	}
	return out, rows
}

// fit cross-validates and fits the prepared data set ds (rows and points
// that enter the model, preprocessed) as Train documents.
func fit(ctx context.Context, ds *Dataset, in *inputs, opts Options, progress ProgressFunc) (*Result, error) {
	n, q := ds.Len(), ds.NumTargets()
	folds, amax := in.folds, in.amax
	targets := opts.Targets
	if targets == nil {
		targets = DefaultTargets()
	}
	if len(targets) != q {
		return nil, fmt.Errorf("%w: %d targets named for %d label columns", ErrInvalidOptions, len(targets), q)
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}

	sd := make([]float64, q)
	for j := 0; j < q; j++ {
		sd[j] = labelSD(ds, j)
		if sd[j] == 0 || math.IsNaN(sd[j]) {
			return nil, fmt.Errorf("%w: label %s is constant, so R2 is undefined", ErrTrainingDiverged, targets[j])
		}
	}

	fold := foldAssignment(n, folds, in.segments, opts.Seed)
	final, oof, err := fitFolds(ctx, ds, fold, folds, amax, opts.Autoscale, workers, progress)
	if err != nil {
		return nil, err
	}

	stats := cvStatistics(ds, fold, folds, oof.pred, sd)
	chosen, rule := chooseComponents(ds, in, stats, oof.pred, sd, opts.Seed)
	selection := inference.ComponentSelection{Rule: rule, Segments: in.segments, MaxComponents: amax, Folds: folds,
		MinScoreComponents: minScore(stats)}
	chosen = min(chosen, final.Components())
	selection.Components = chosen
	cs := stats[chosen-1]
	for j, r2 := range cs.R2CV {
		if !(r2 > 0) {
			return nil, fmt.Errorf("%w: cross-validated R2 of %s is %.3g with %d components (not better than the mean)",
				ErrTrainingDiverged, targets[j], r2, chosen)
		}
	}

	params, cal, err := buildParams(ds, final, chosen, sd)
	if err != nil {
		return nil, err
	}
	params.HeldOutT2 = oof.t2[chosen-1]
	params.HeldOutQ = oof.heldOutQ(fold, chosen, final.ResidualSS[chosen-1]/float64(n))
	params.Review = newReview(ds, selection, stats, oof.pred[chosen-1], params.HeldOutT2, params.HeldOutQ, cal, chosen)
	params.Targets = append([]inference.Analyte(nil), targets...)
	params.RMSECV = append([]float64(nil), cs.RMSECV...)
	// The scale check (inference/scalecheck.go) is fitted on the rows as
	// the model sees them. A calibration set that cannot determine it (too
	// few rows, a flat row) leaves the model without one, as an imported
	// model is: its confidence then uses T2 and Q alone.
	if sc, err := inference.FitScaleCheck(params, n, ds.Row); err == nil {
		params.ScaleCheck = sc
	}
	params.Meta = inference.Metadata{
		Algorithm:        Algorithm,
		LatentComponents: chosen,
		TrainedAt:        now().UTC(),
		TrainedSamples:   n,
		Wavenumbers:      append([]float64(nil), in.axis...),
	}
	for j, a := range targets {
		params.Meta.RMSE.Set(a, cs.RMSECV[j])
		params.Meta.R2.Set(a, cs.R2CV[j])
	}
	return &Result{
		Params:        params,
		Components:    chosen,
		MaxComponents: amax,
		Folds:         folds,
		Autoscale:     opts.Autoscale,
		CV:            stats,
		RMSEC:         cal.rmsec,
		R2C:           cal.r2c,
		NIter:         append([]int(nil), final.NIter[:chosen]...),
	}, nil
}

// outOfFold is what each sample's fold model, fitted without it, says
// about it, for k = 1..amax components (index k-1).
type outOfFold struct {
	// pred[k-1][i*q+j] is sample i's prediction of target j.
	pred [][]float64
	// t2[k-1][i] and q[k-1][i] are sample i's Hotelling T2 and Q under
	// its fold model, which stand in for a new spectrum's under the final
	// model.
	t2, q [][]float64
	// trainQ[f][k-1] is the mean Q of fold f's training rows under its
	// own model (in-sample).
	trainQ [][]float64
}

func newOutOfFold(n, q, folds, amax int) *outOfFold {
	o := &outOfFold{pred: make([][]float64, amax), t2: make([][]float64, amax), q: make([][]float64, amax),
		trainQ: make([][]float64, folds)}
	for k := range amax {
		o.pred[k] = make([]float64, n*q)
		o.t2[k] = make([]float64, n)
		o.q[k] = make([]float64, n)
	}
	for f := range folds {
		o.trainQ[f] = make([]float64, amax)
	}
	return o
}

// heldOutQ returns the held-out Q of the k-component fold models on the
// scale of the final model, whose mean calibration Q is finalMeanQ:
// sample i's Q under the model of its fold f, times finalMeanQ over the
// mean Q of fold f's training rows under that model.
//
// The final model, fitted on all rows, can leave a different amount of
// the spectra unexplained than the fold models (its last components may
// capture another source of variation), and a new spectrum's Q follows
// the final model's. Dividing each Q by the mean training Q of the model
// that computed it makes the statistic comparable across models (a
// normalised nonconformity score, as in Papadopoulos, Vovk & Gammerman,
// "Regression conformal prediction with nearest neighbours", J. Artif.
// Intell. Res. 40 (2011) 815-840, but per model rather than per sample);
// the limit fitted to the normalised values is put back on the final
// model's scale. T2 needs no such step: each model divides its scores by
// its own calibration variances, so every model's mean training T2 is
// a (n-1)/n. A fold whose training rows have zero Q is left as it is.
func (o *outOfFold) heldOutQ(fold []int, k int, finalMeanQ float64) []float64 {
	out := make([]float64, len(fold))
	for i, f := range fold {
		ratio := 1.0
		if trainQ := o.trainQ[f][k-1]; trainQ > 0 {
			ratio = finalMeanQ / trainQ
		}
		out[i] = o.q[k-1][i] * ratio
	}
	return out
}

// fitFolds runs the K fold fits and the final fit on all samples on
// `workers` goroutines, each fit reporting a progress step per component,
// and returns the final fit and the out-of-fold figures. The first error
// cancels the other fits.
func fitFolds(ctx context.Context, ds *Dataset, fold []int, folds, amax int, autoscale bool, workers int, progress ProgressFunc) (*PLS, *outOfFold, error) {
	n, q := ds.Len(), ds.NumTargets()
	// Each fold writes only its own samples.
	oof := newOutOfFold(n, q, folds, amax)

	total := (folds + 1) * amax
	var progressMu sync.Mutex
	done := 0
	step := func(steps int) {
		progressMu.Lock()
		defer progressMu.Unlock()
		done += steps
		if progress != nil {
			progress(done, total)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var final *PLS
	// Job -1 is the final fit on all samples (the largest, so it starts
	// first); jobs 0..K-1 are the folds.
	jobs := make(chan int, folds+1)
	for f := -1; f < folds; f++ {
		jobs <- f
	}
	close(jobs)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	for w := 0; w < min(workers, folds+1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				if ctx.Err() != nil {
					return
				}
				m, err := fitFold(ctx, ds, fold, f, amax, autoscale, step)
				if err != nil {
					fail(err)
					return
				}
				if f < 0 {
					final = m
					continue
				}
				if err := predictFold(ds, fold, f, m, amax, oof); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return final, oof, nil
}

// fitFold fits amax components on the samples outside fold f (all
// samples for f < 0), reporting one progress step per component.
func fitFold(ctx context.Context, ds *Dataset, fold []int, f, amax int, autoscale bool, step func(int)) (*PLS, error) {
	p, q := ds.Features(), ds.NumTargets()
	rows := 0
	for _, g := range fold {
		if g != f {
			rows++
		}
	}
	X := mat.NewDense(rows, p, nil)
	Y := mat.NewDense(rows, q, nil)
	xr, yr := X.RawMatrix(), Y.RawMatrix()
	r := 0
	for i, g := range fold {
		if g == f {
			continue
		}
		copy(xr.Data[r*xr.Stride:r*xr.Stride+p], ds.Row(i))
		copy(yr.Data[r*yr.Stride:r*yr.Stride+q], ds.Labels(i))
		r++
	}
	reported := 0
	m, err := fitPLSInPlace(ctx, X, Y, amax, autoscale, func(k int) {
		reported = k
		step(1)
	})
	if err != nil {
		return nil, fmt.Errorf("fold %d: %w", f+1, err)
	}
	if reported < amax {
		step(amax - reported) // the Y residual vanished: nothing left to fit
	}
	return m, nil
}

// predictFold writes the out-of-fold predictions, T2 and Q of fold f for
// k = 1..amax components. Past the components m extracted, the last model
// stands (scikit-learn's zero components add nothing).
func predictFold(ds *Dataset, fold []int, f int, m *PLS, amax int, oof *outOfFold) error {
	cvPred := oof.pred
	p, q := ds.Features(), ds.NumTargets()
	var test []int
	for i, g := range fold {
		if g == f {
			test = append(test, i)
		}
	}
	Xs := mat.NewDense(len(test), p, nil)
	for r, i := range test {
		row := Xs.RawRowView(r)
		for j, v := range ds.Row(i) {
			row[j] = (v - m.XMean[j]) / m.XScale[j]
		}
	}
	var pred mat.Dense
	for k := 1; k <= amax; k++ {
		if k <= m.Components() {
			pred.Reset()
			pred.Mul(Xs, m.Coef(k))
		}
		for r, i := range test {
			for j := 0; j < q; j++ {
				v := pred.At(r, j) + m.YMean[j]
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("%w: fold %d: non-finite prediction with %d components", ErrTrainingDiverged, f+1, k)
				}
				cvPred[k-1][i*q+j] = v
			}
		}
	}
	heldOutDiagnostics(Xs, test, m, amax, oof)
	trainRows := float64(len(fold) - len(test))
	for k := 1; k <= amax; k++ {
		oof.trainQ[f][k-1] = m.ResidualSS[min(k, m.Components())-1] / trainRows
	}
	return nil
}

// heldOutDiagnostics writes T2 and Q of the held-out rows Xs (centred and
// scaled by the fold model m; row r is sample test[r]) for k = 1..amax
// components. The scores come by NIPALS deflation of each row,
//
//	t_k = r_{k-1}' w_k,  r_k = r_{k-1} - t_k p_k,  r_0 = xs,
//
// which equals xs R_k for every k (P'W is upper triangular), so that one
// pass per component gives T2_k = sum_{c<=k} t_c^2 / s_c^2 (s_c^2 the
// fold's training score variance) and Q_k = ||r_k||^2 for all k at once.
// A component with zero score variance adds nothing to T2, as in
// buildParams.
func heldOutDiagnostics(Xs *mat.Dense, test []int, m *PLS, amax int, oof *outOfFold) {
	_, p := Xs.Dims()
	fitted := m.Components()
	wg, pg := m.W.RawMatrix(), m.P.RawMatrix()
	resid := make([]float64, p)
	rv := blas64.Vector{N: p, Inc: 1, Data: resid}
	for r, i := range test {
		copy(resid, Xs.RawRowView(r))
		t2, q := 0.0, blas64.Dot(rv, rv)
		for k := 0; k < amax; k++ {
			if k < fitted {
				t := blas64.Dot(rv, blas64.Vector{N: p, Inc: wg.Stride, Data: wg.Data[k:]})
				if v := m.ScoreVariance[k]; v > 0 {
					t2 += t * t / v
				}
				blas64.Axpy(-t, blas64.Vector{N: p, Inc: pg.Stride, Data: pg.Data[k:]}, rv)
				q = blas64.Dot(rv, rv)
			}
			oof.t2[k][i] = t2
			oof.q[k][i] = q
		}
	}
}

// labelSD is the ddof-1 standard deviation of label column j.
func labelSD(ds *Dataset, j int) float64 {
	n := ds.Len()
	mean := 0.0
	for i := 0; i < n; i++ {
		mean += ds.Labels(i)[j]
	}
	mean /= float64(n)
	ss := 0.0
	for i := 0; i < n; i++ {
		d := ds.Labels(i)[j] - mean
		ss += d * d
	}
	return math.Sqrt(ss / float64(n-1))
}

// cvStatistics computes RMSECV, R2CV, Score and its standard error for
// every component count (formulas in Train's comment).
func cvStatistics(ds *Dataset, fold []int, folds int, cvPred [][]float64, sd []float64) []ComponentStats {
	n, q := ds.Len(), ds.NumTargets()
	mean := make([]float64, q)
	ssTot := make([]float64, q)
	for i := 0; i < n; i++ {
		for j, v := range ds.Labels(i) {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	for i := 0; i < n; i++ {
		for j, v := range ds.Labels(i) {
			ssTot[j] += (v - mean[j]) * (v - mean[j])
		}
	}
	foldSize := make([]int, folds)
	for _, f := range fold {
		foldSize[f]++
	}
	stats := make([]ComponentStats, len(cvPred))
	for k := range cvPred {
		press := make([]float64, q)
		foldPress := make([]float64, folds*q)
		for i := 0; i < n; i++ {
			for j, y := range ds.Labels(i) {
				e := cvPred[k][i*q+j] - y
				press[j] += e * e
				foldPress[fold[i]*q+j] += e * e
			}
		}
		st := ComponentStats{Components: k + 1, RMSECV: make([]float64, q), R2CV: make([]float64, q), PValue: math.NaN()}
		for j := 0; j < q; j++ {
			st.RMSECV[j] = math.Sqrt(press[j] / float64(n))
			st.R2CV[j] = 1 - press[j]/ssTot[j]
			st.Score += st.RMSECV[j] / sd[j] / float64(q)
		}
		// Per-fold scores, their ddof-1 standard deviation, and SE.
		foldScore := make([]float64, folds)
		meanScore := 0.0
		for f := 0; f < folds; f++ {
			for j := 0; j < q; j++ {
				foldScore[f] += math.Sqrt(foldPress[f*q+j]/float64(foldSize[f])) / sd[j] / float64(q)
			}
			meanScore += foldScore[f] / float64(folds)
		}
		ss := 0.0
		for _, s := range foldScore {
			ss += (s - meanScore) * (s - meanScore)
		}
		st.ScoreSE = math.Sqrt(ss/float64(folds-1)) / math.Sqrt(float64(folds))
		stats[k] = st
	}
	return stats
}

// minScore returns the component count with the lowest CV score.
func minScore(stats []ComponentStats) int {
	best := 0
	for k := range stats {
		if stats[k].Score < stats[best].Score {
			best = k
		}
	}
	return best + 1
}

// oneStandardError applies the one-standard-error rule to the scores and
// returns the chosen component count.
func oneStandardError(stats []ComponentStats) int {
	best := 0
	for k := range stats {
		if stats[k].Score < stats[best].Score {
			best = k
		}
	}
	limit := stats[best].Score + stats[best].ScoreSE
	for k := range stats {
		if stats[k].Score <= limit {
			return k + 1
		}
	}
	return best + 1
}

// calibration is the final model's fit of its own training rows.
type calibration struct {
	rmsec, r2c []float64 // per target
	// t2 (n) is each row's Hotelling T2 and q (n) its Q under the final
	// model; resid (n*q, row-major) its label residuals y - yhat.
	t2, q, resid []float64
	// scores (n x a) are the rows' X scores under the final model.
	scores *mat.Dense
}

// buildParams turns the final fit, truncated to a components, into
// PLSParams with calibration diagnostics, and returns the calibration
// figures of the training rows.
func buildParams(ds *Dataset, m *PLS, a int, sd []float64) (*inference.PLSParams, *calibration, error) {
	n, p, q := ds.Len(), ds.Features(), ds.NumTargets()
	R := m.Rotations(a)
	Qa := m.Q.Slice(0, q, 0, a)
	coef := m.coefFromRotations(R, Qa)
	Pa := mat.DenseCopyOf(m.P.Slice(0, p, 0, a))
	for _, M := range []*mat.Dense{R, coef, Pa} {
		if !allFinite(M.RawMatrix().Data) {
			return nil, nil, fmt.Errorf("%w: final model has non-finite coefficients", ErrTrainingDiverged)
		}
	}

	// Calibration scores t = xs R, residual Q = ||xs - P t||^2, and
	// calibration predictions, one sample at a time.
	rg, pg, cg := R.RawMatrix(), Pa.RawMatrix(), coef.RawMatrix()
	xs := make([]float64, p)
	t := make([]float64, a)
	resid := make([]float64, p)
	yhat := make([]float64, q)
	scores := make([]float64, n*a)
	calQ := make([]float64, n)
	press := make([]float64, q)
	labelResid := make([]float64, n*q)
	for i := 0; i < n; i++ {
		for j, v := range ds.Row(i) {
			xs[j] = (v - m.XMean[j]) / m.XScale[j]
		}
		xv := blas64.Vector{N: p, Inc: 1, Data: xs}
		blas64.Gemv(blas.Trans, 1, rg, xv, 0, blas64.Vector{N: a, Inc: 1, Data: t})
		copy(resid, xs)
		rv := blas64.Vector{N: p, Inc: 1, Data: resid}
		blas64.Gemv(blas.NoTrans, -1, pg, blas64.Vector{N: a, Inc: 1, Data: t}, 1, rv)
		calQ[i] = blas64.Dot(rv, rv)
		copy(scores[i*a:(i+1)*a], t)
		blas64.Gemv(blas.Trans, 1, cg, xv, 0, blas64.Vector{N: q, Inc: 1, Data: yhat})
		for j, y := range ds.Labels(i) {
			e := yhat[j] + m.YMean[j] - y
			press[j] += e * e
			labelResid[i*q+j] = -e
		}
	}
	scoreVar := make([]float64, a)
	for c := 0; c < a; c++ {
		mean := 0.0
		for i := 0; i < n; i++ {
			mean += scores[i*a+c]
		}
		mean /= float64(n)
		ss := 0.0
		for i := 0; i < n; i++ {
			d := scores[i*a+c] - mean
			ss += d * d
		}
		scoreVar[c] = ss / float64(n-1)
	}
	rmsec := make([]float64, q)
	r2c := make([]float64, q)
	for j := 0; j < q; j++ {
		rmsec[j] = math.Sqrt(press[j] / float64(n))
		// sd_j^2 (n-1) is the total sum of squares about the mean.
		r2c[j] = 1 - press[j]/(sd[j]*sd[j]*float64(n-1))
	}
	if !allFinite(calQ) || !allFinite(scoreVar) || !allFinite(rmsec) {
		return nil, nil, fmt.Errorf("%w: non-finite calibration diagnostics", ErrTrainingDiverged)
	}
	t2 := make([]float64, n)
	for i := range t2 {
		for c := 0; c < a; c++ {
			if scoreVar[c] > 0 {
				s := scores[i*a+c]
				t2[i] += s * s / scoreVar[c]
			}
		}
	}
	cal := &calibration{rmsec: rmsec, r2c: r2c, t2: t2, q: append([]float64(nil), calQ...), resid: labelResid,
		scores: mat.NewDense(n, a, scores)}
	return &inference.PLSParams{
		XMean:         append([]float64(nil), m.XMean...),
		XScale:        append([]float64(nil), m.XScale...),
		Coef:          coef,
		Intercept:     append([]float64(nil), m.YMean...),
		Rotations:     R,
		Loadings:      Pa,
		ScoreVariance: scoreVar,
		NCalibration:  n,
		CalibrationQ:  calQ,
	}, cal, nil
}

// Memory Train uses beyond the data set. Each parallel fit (Options.Workers
// of them, at most folds+1) copies the rows it trains on, up to all n for
// the final fit, and then the held-out fold's rows for prediction; the
// copies die with the fit but the next fit may allocate before the
// collector frees them. Measured on 2000 x 2048 with 2 workers: about 2.3
// data sets live beside the data set itself. FitBytesPerRow charges 5/4 of
// a row per fit for that, plus the out-of-fold predictions, T2 and Q (up
// to DefaultMaxComponents x (q + 2) per row), which are shared by all
// fits.
//
// With exclusions, regions or a recipe, Train first builds a prepared copy
// (the rows left, preprocessed, restricted to the regions) and fits on it:
// at most one more row of intensities and labels per row, whose size
// CheckOptions reports and the job charges on top when it is accepted.
// The fits then copy rows of the prepared set, no wider than the
// original, so the charges above still cover them.

// FitBytesPerRow is what one fit, and the shared predictions, need per
// sample: the charge that lets an accepted data set train with one worker.
func FitBytesPerRow(p, q int) int64 {
	return WorkerBytesPerRow(p, q) + int64(DefaultMaxComponents*(q+2)*8)
}

// WorkerBytesPerRow is what each further parallel fit needs per sample.
func WorkerBytesPerRow(p, q int) int64 {
	return int64(p+q) * 8 * 5 / 4
}
