package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

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
	results = slices.DeleteFunc(results, func(res LabResult) bool {
		_, ok := spectra[res.PredictionID].of(version)
		return !ok
	})
	rep.Samples = len(results)
	rep.Version = versionStats(version, results, spectra)
	for _, v := range otherVersions(version, results, spectra) {
		rep.Others = append(rep.Others, versionStats(v, results, spectra))
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
// one set-based read (predlog.Reader.ByPredictions): a report over tens
// of thousands of spectra would otherwise pay a query each. A spectrum
// the log no longer holds gets no entry, as one with no prediction.
func (r *Reconciler) predictionsBySpectrum(ctx context.Context, results []LabResult) (map[predlog.PredictionID]spectrumPredictions, error) {
	ids := make([]predlog.PredictionID, len(results))
	for i, res := range results {
		ids[i] = res.PredictionID
	}
	spectra := make(map[predlog.PredictionID]spectrumPredictions, len(results))
	err := r.log.ByPredictions(ctx, ids, func(recs []predlog.Record) error {
		spectra[recs[0].PredictionID] = choosePredictions(recs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile: predictions of %d spectra: %w", len(results), err)
	}
	return spectra, nil
}

// choosePredictions picks, from one spectrum's records in Role then ID
// order, the one used for each version (active, else shadow, else the
// first re-scoring) and gathers every role each version had.
func choosePredictions(recs []predlog.Record) spectrumPredictions {
	var sp spectrumPredictions
	for _, rec := range recs {
		i := slices.IndexFunc(sp, func(p versionPrediction) bool { return p.version == rec.ModelVersion })
		if i < 0 {
			i = len(sp)
			sp = append(sp, versionPrediction{version: rec.ModelVersion, concentrations: rec.Concentrations})
		}
		sp[i].roles = sp[i].roles.with(rec.Role)
	}
	return sp
}

// otherVersions lists, in order, the versions other than version that
// predicted on the results' spectra.
func otherVersions(version string, results []LabResult, spectra map[predlog.PredictionID]spectrumPredictions) []string {
	var out []string
	for _, res := range results {
		for _, p := range spectra[res.PredictionID] {
			if p.version != version && !slices.Contains(out, p.version) {
				out = append(out, p.version)
			}
		}
	}
	slices.Sort(out)
	return out
}

// versionStats pairs version's predictions with the lab results on the
// spectra it predicted on, per analyte, overall and per batch.
func versionStats(version string, results []LabResult, spectra map[predlog.PredictionID]spectrumPredictions) VersionStats {
	vs := VersionStats{Version: version}
	var predicted, lab [inference.NumAnalytes][]float64
	batches := map[string]*batchPairs{}
	var roles roleSet
	for _, res := range results {
		p, ok := spectra[res.PredictionID].of(version)
		if !ok {
			continue
		}
		roles |= p.roles
		b := batches[res.BatchID]
		if b == nil {
			b = &batchPairs{first: res.SpectrumTime}
			batches[res.BatchID] = b
		}
		if res.SpectrumTime.Before(b.first) {
			b.first = res.SpectrumTime
		}
		for a := range inference.Analyte(inference.NumAnalytes) {
			y, hasLab := res.Lab.Value[a], res.Lab.Valid[a]
			x, hasPred := p.concentrations.Value[a], p.concentrations.Valid[a]
			if hasLab && hasPred {
				predicted[a] = append(predicted[a], x)
				lab[a] = append(lab[a], y)
				b.predicted[a] = append(b.predicted[a], x)
				b.lab[a] = append(b.lab[a], y)
			}
		}
	}
	vs.Roles = roles.roles()
	for a := range inference.Analyte(inference.NumAnalytes) {
		vs.Analytes = append(vs.Analytes, AnalyteStats{Analyte: a, Stats: Statistics(predicted[a], lab[a]), Predicted: predicted[a], Lab: lab[a]})
	}
	vs.Batches = batchSeries(batches)
	return vs
}

// batchPairs gathers one batch's pairs per analyte.
type batchPairs struct {
	first          time.Time
	predicted, lab [inference.NumAnalytes][]float64
}

// batchSeries turns the batches' pairs into the bias series.
func batchSeries(batches map[string]*batchPairs) []BatchBias {
	series := make([]BatchBias, 0, len(batches))
	for id, b := range batches {
		bb := BatchBias{BatchID: id, FirstSampleAt: b.first}
		for a := range inference.Analyte(inference.NumAnalytes) {
			s := Statistics(b.predicted[a], b.lab[a])
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
	versions := otherVersions("", results, spectra)
	out := make([]VersionStats, 0, len(versions))
	for _, v := range versions {
		out = append(out, versionStats(v, results, spectra))
	}
	return out, nil
}
