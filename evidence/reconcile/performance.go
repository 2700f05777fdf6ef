package reconcile

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
)

// MaxReportSamples bounds the matched lab results one Performance call
// reads (and the predictions of their spectra it holds at once).
const MaxReportSamples = 50000

// ErrRangeTooLarge: the time range holds more than MaxReportSamples
// matched lab results; a narrower range is needed.
var ErrRangeTooLarge = errors.New("reconcile: too many lab results in the range")

// AnalyteStats are one analyte's Stats, and the pairs they were computed
// from (for a plot of lab against predicted).
type AnalyteStats struct {
	Analyte inference.Analyte
	Stats
	// Predicted and Lab are the pairs, Predicted[i] with Lab[i], in the
	// order of the lab results (by spectrum time), as logged and posted:
	// Statistics leaves out the pairs that are not finite, a plot must
	// too. Their length is bounded by MaxReportSamples.
	Predicted, Lab []float64
}

// BatchBias is one point of a control chart of bias: a batch's lab
// results against one model version.
type BatchBias struct {
	BatchID string
	// FirstSampleAt is when the earliest of the batch's matched spectra
	// was logged; batches are ordered by it.
	FirstSampleAt time.Time
	// Analytes holds, for each analyte in report order, the number of
	// pairs and their bias (predicted minus lab, as Stats.Bias; nil when
	// the batch has no pair for the analyte).
	Analytes []BatchAnalyteBias
}

// BatchAnalyteBias is one analyte's bias over one batch.
type BatchAnalyteBias struct {
	Analyte inference.Analyte
	N       int
	Bias    *float64
}

// VersionStats are a model version's statistics against the lab.
type VersionStats struct {
	Version string
	// Roles are the roles the version had on the spectra counted, in the
	// order active, shadow, rescore.
	Roles []predlog.Role
	// Analytes holds each analyte's statistics, in report order.
	Analytes []AnalyteStats
	// Batches is the per-batch bias series, ordered by FirstSampleAt,
	// then BatchID.
	Batches []BatchBias
}

// Report is the performance of a model version against the lab over a
// time range.
type Report struct {
	// Since and Until are the range asked for: spectra logged in
	// [Since, Until), a zero bound being open.
	Since, Until time.Time
	// Samples is how many matched lab results fall on spectra the
	// version predicted on in the range.
	Samples int
	// Version holds the statistics of the version asked for.
	Version VersionStats
	// Others holds the same statistics for every other version that
	// predicted (as active, shadow or re-scoring) on those same spectra,
	// ordered by version.
	Others []VersionStats
}

// Performance reports how the predictions of version on the spectra
// logged in [since, until) compare with the lab results matched to
// those spectra, and how every other version that predicted on the same
// spectra compares. A version with no prediction on a matched spectrum
// gets a report with Samples 0 (telling unknown versions apart is the
// registry's business). More than MaxReportSamples matched results in
// the range is ErrRangeTooLarge.
//
// Each matched lab result counts once per version and analyte it has a
// value for (two lab samples of one spectrum are two pairs). When a
// version has several predictions on one spectrum, the active one is
// used, else the shadow one, else the first re-scoring one. A lab result
// whose spectrum the log's retention has deleted no longer counts.
func (r *Reconciler) Performance(ctx context.Context, version string, since, until time.Time) (Report, error) {
	rep := Report{Since: since, Until: until}
	results, err := r.store.Range(ctx, since, until, MaxReportSamples+1)
	if err != nil {
		return rep, fmt.Errorf("reconcile: lab results: %w", err)
	}
	if len(results) > MaxReportSamples {
		return rep, fmt.Errorf("%w (more than %d)", ErrRangeTooLarge, MaxReportSamples)
	}
	spectra, err := r.predictionsBySpectrum(ctx, results)
	if err != nil {
		return rep, err
	}
	// Only the spectra the version predicted on count, for every version.
	// Each result's predictions are looked up once, here, and travel
	// beside it: a lookup per result and version was a tenth of the
	// report's time at 45,000 results.
	preds := make([]spectrumPredictions, 0, len(results))
	kept := results[:0]
	for _, res := range results {
		sp := spectra[res.PredictionID]
		if _, ok := sp.of(version); ok {
			kept, preds = append(kept, res), append(preds, sp)
		}
	}
	results = kept
	rep.Samples = len(results)
	batches := groupBatches(results)
	rep.Version = versionStats(version, results, preds, batches)
	for _, v := range otherVersions(version, preds) {
		rep.Others = append(rep.Others, versionStats(v, results, preds, batches))
	}
	return rep, nil
}

// spectrumPredictions holds, for one spectrum, what each version that
// predicted on it predicted. A spectrum has a handful at most, so a
// slice searched in order costs less than a map per spectrum (a report
// holds tens of thousands).
type spectrumPredictions []versionPrediction

// versionPrediction is one version's prediction on one spectrum: the
// concentrations of the record used, and every role the version had.
type versionPrediction struct {
	version        string
	concentrations inference.Breakdown
	roles          roleSet
}

// of returns version's prediction on the spectrum; ok is false when it
// made none.
func (sp spectrumPredictions) of(version string) (p versionPrediction, ok bool) {
	for _, p := range sp {
		if p.version == version {
			return p, true
		}
	}
	return versionPrediction{}, false
}

// roleSet is a set of roles, bit r standing for predlog.Role r.
type roleSet uint8

func (s roleSet) with(r predlog.Role) roleSet { return s | 1<<r }

// roles lists the set in role order (active, shadow, rescore).
func (s roleSet) roles() []predlog.Role {
	var out []predlog.Role
	for r := range predlog.Role(8) {
		if s&(1<<r) != 0 {
			out = append(out, r)
		}
	}
	return out
}

// predictionsBySpectrum reads the predictions of the results' spectra in
// set-based reads (predlog.Reader.ByPredictions): a report over tens of
// thousands of spectra would otherwise pay a query each. A spectrum the
// log no longer holds gets no entry, as one with no prediction.
//
// A large report reads its spectra in concurrentReads parts at once,
// each a contiguous run of the sorted ids on a connection of its own:
// the read is the store's CPU, and one statement uses one core. Each
// part's predictions share one backing array, so a part allocates by
// doubling, not once a spectrum.
func (r *Reconciler) predictionsBySpectrum(ctx context.Context, results []LabResult) (map[predlog.PredictionID]spectrumPredictions, error) {
	ids := sortedUniqueIDs(results)
	spectra := make(map[predlog.PredictionID]spectrumPredictions, len(ids))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	parts := readParts(len(ids), r.minPartIDs)
	for p := range parts {
		part := ids[p*len(ids)/parts : (p+1)*len(ids)/parts]
		g.Go(func() error {
			backing := make([]versionPrediction, 0, len(part))
			return r.log.ByPredictions(gctx, part, func(recs []predlog.Record) error {
				start := len(backing)
				backing = appendPredictions(backing, recs)
				mu.Lock()
				spectra[recs[0].PredictionID] = backing[start:len(backing):len(backing)]
				mu.Unlock()
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("reconcile: predictions of %d spectra: %w", len(ids), err)
	}
	return spectra, nil
}

// concurrentReads bounds the parts a report's spectra are read in: two
// cores' worth, leaving the store's other connections to the log's
// writer and to other readers. minPartIDs keeps small reports at one
// statement, where a second would cost more than it saves.
const (
	concurrentReads = 2
	minPartIDs      = 4096
)

// readParts is how many parts n spectra are read in, each of at least
// minPart.
func readParts(n, minPart int) int {
	return max(1, min(concurrentReads, runtime.GOMAXPROCS(0), n/minPart))
}

// sortedUniqueIDs lists the results' prediction ids in byte order,
// without repeats, so that each part of a read is a run of the index.
func sortedUniqueIDs(results []LabResult) []predlog.PredictionID {
	ids := make([]predlog.PredictionID, len(results))
	for i, res := range results {
		ids[i] = res.PredictionID
	}
	slices.SortFunc(ids, func(a, b predlog.PredictionID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(ids)
}

// appendPredictions appends to dst the prediction used for each version
// among one spectrum's records, given in Role then ID order (active,
// else shadow, else the first re-scoring), with every role each version
// had.
func appendPredictions(dst []versionPrediction, recs []predlog.Record) []versionPrediction {
	start := len(dst)
	for _, rec := range recs {
		i := slices.IndexFunc(dst[start:], func(p versionPrediction) bool { return p.version == rec.ModelVersion })
		if i < 0 {
			i = len(dst) - start
			dst = append(dst, versionPrediction{version: rec.ModelVersion, concentrations: rec.Concentrations})
		}
		dst[start+i].roles = dst[start+i].roles.with(rec.Role)
	}
	return dst
}

// otherVersions lists, in order, the versions other than version that
// predicted on the spectra.
func otherVersions(version string, preds []spectrumPredictions) []string {
	var out []string
	for _, sp := range preds {
		for _, p := range sp {
			if p.version != version && !slices.Contains(out, p.version) {
				out = append(out, p.version)
			}
		}
	}
	slices.Sort(out)
	return out
}

// batchGroups numbers the batches of a report's results once for every
// version: ids[b] is batch b's id, and order lists the results' indexes
// grouped by batch, batch b's at order[start[b]:start[b+1]], each
// batch's in the results' order.
type batchGroups struct {
	ids   []string
	start []int
	order []int
}

// groupBatches groups results by batch, a counting sort on the batch's
// number, which keeps each batch's results in their order.
func groupBatches(results []LabResult) batchGroups {
	number := make(map[string]int)
	of := make([]int, len(results))
	var g batchGroups
	for i, res := range results {
		b, ok := number[res.BatchID]
		if !ok {
			b = len(g.ids)
			number[res.BatchID] = b
			g.ids = append(g.ids, res.BatchID)
		}
		of[i] = b
	}
	g.start = make([]int, len(g.ids)+1)
	for _, b := range of {
		g.start[b+1]++
	}
	for b := range g.ids {
		g.start[b+1] += g.start[b]
	}
	next := slices.Clone(g.start[:len(g.ids)])
	g.order = make([]int, len(results))
	for i, b := range of {
		g.order[next[b]] = i
		next[b]++
	}
	return g
}

// versionStats pairs version's predictions with the lab results on the
// spectra it predicted on (preds[i] are the predictions on results[i]'s
// spectrum), per analyte, overall and per batch.
func versionStats(version string, results []LabResult, preds []spectrumPredictions, batches batchGroups) VersionStats {
	vs := VersionStats{Version: version}
	var predicted, lab [inference.NumAnalytes][]float64
	for a := range predicted {
		predicted[a] = make([]float64, 0, len(results))
		lab[a] = make([]float64, 0, len(results))
	}
	var roles roleSet
	for i, res := range results {
		p, ok := preds[i].of(version)
		if !ok {
			continue
		}
		roles |= p.roles
		for a := range inference.Analyte(inference.NumAnalytes) {
			if res.Lab.Valid[a] && p.concentrations.Valid[a] {
				predicted[a] = append(predicted[a], p.concentrations.Value[a])
				lab[a] = append(lab[a], res.Lab.Value[a])
			}
		}
	}
	vs.Roles = roles.roles()
	for a := range inference.Analyte(inference.NumAnalytes) {
		vs.Analytes = append(vs.Analytes, AnalyteStats{Analyte: a, Stats: Statistics(predicted[a], lab[a]), Predicted: predicted[a], Lab: lab[a]})
	}
	vs.Batches = batchSeries(version, results, preds, batches)
	return vs
}

// batchSeries is version's bias series: one point for each batch with a
// result on a spectrum the version predicted on, ordered by the batch's
// earliest such spectrum, then id. The pairs of one batch are gathered
// in scratch slices reused from batch to batch.
func batchSeries(version string, results []LabResult, preds []spectrumPredictions, batches batchGroups) []BatchBias {
	series := make([]BatchBias, 0, len(batches.ids))
	var predicted, lab [inference.NumAnalytes][]float64
	for b, id := range batches.ids {
		bb := BatchBias{BatchID: id}
		found := false
		for a := range predicted {
			predicted[a], lab[a] = predicted[a][:0], lab[a][:0]
		}
		for _, i := range batches.order[batches.start[b]:batches.start[b+1]] {
			p, ok := preds[i].of(version)
			if !ok {
				continue
			}
			res := &results[i]
			if !found || res.SpectrumTime.Before(bb.FirstSampleAt) {
				bb.FirstSampleAt = res.SpectrumTime
			}
			found = true
			for a := range inference.Analyte(inference.NumAnalytes) {
				if res.Lab.Valid[a] && p.concentrations.Valid[a] {
					predicted[a] = append(predicted[a], p.concentrations.Value[a])
					lab[a] = append(lab[a], res.Lab.Value[a])
				}
			}
		}
		if !found {
			continue
		}
		bb.Analytes = make([]BatchAnalyteBias, 0, inference.NumAnalytes)
		for a := range inference.Analyte(inference.NumAnalytes) {
			s := Statistics(predicted[a], lab[a])
			bb.Analytes = append(bb.Analytes, BatchAnalyteBias{Analyte: a, N: s.N, Bias: s.Bias})
		}
		series = append(series, bb)
	}
	slices.SortFunc(series, func(a, b BatchBias) int {
		return cmp.Or(a.FirstSampleAt.Compare(b.FirstSampleAt), cmp.Compare(a.BatchID, b.BatchID))
	})
	return series
}

// AllVersions reports, for every version that predicted on a spectrum
// logged in [since, until) that a lab result is matched to, the version's
// statistics against the lab over those of the spectra it predicted on,
// ordered by version: Performance for each version at once, from one
// read of the store and of the log. More than MaxReportSamples matched
// results in the range is ErrRangeTooLarge.
func (r *Reconciler) AllVersions(ctx context.Context, since, until time.Time) ([]VersionStats, error) {
	results, err := r.store.Range(ctx, since, until, MaxReportSamples+1)
	if err != nil {
		return nil, fmt.Errorf("reconcile: lab results: %w", err)
	}
	if len(results) > MaxReportSamples {
		return nil, fmt.Errorf("%w (more than %d)", ErrRangeTooLarge, MaxReportSamples)
	}
	spectra, err := r.predictionsBySpectrum(ctx, results)
	if err != nil {
		return nil, err
	}
	// Each result's predictions travel beside it; versionStats skips the
	// results a version did not predict on.
	preds := make([]spectrumPredictions, len(results))
	for i, res := range results {
		preds[i] = spectra[res.PredictionID]
	}
	batches := groupBatches(results)
	versions := otherVersions("", preds)
	out := make([]VersionStats, 0, len(versions))
	for _, v := range versions {
		out = append(out, versionStats(v, results, preds, batches))
	}
	return out, nil
}
