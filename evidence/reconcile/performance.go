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
		_, ok := spectra[res.PredictionID].chosen[version]
		return !ok
	})
	rep.Samples = len(results)
	rep.Version = versionStats(version, results, spectra)
	for _, v := range otherVersions(version, results, spectra) {
		rep.Others = append(rep.Others, versionStats(v, results, spectra))
	}
	return rep, nil
}

// spectrumPredictions holds, for one spectrum, the prediction used for
// each version and every role each version had.
type spectrumPredictions struct {
	chosen map[string]predlog.Record
	roles  map[string][]predlog.Role
}

// predictionsBySpectrum reads the predictions of the results' spectra in
// one set-based read (predlog.Reader.ByPredictions): a report over tens
// of thousands of spectra would otherwise pay a query each. A spectrum
// the log no longer holds gets an entry with no version.
func (r *Reconciler) predictionsBySpectrum(ctx context.Context, results []LabResult) (map[predlog.PredictionID]spectrumPredictions, error) {
	ids := make([]predlog.PredictionID, len(results))
	for i, res := range results {
		ids[i] = res.PredictionID
	}
	records, err := r.log.ByPredictions(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("reconcile: predictions of %d spectra: %w", len(results), err)
	}
	spectra := make(map[predlog.PredictionID]spectrumPredictions, len(records))
	for _, id := range ids {
		if _, done := spectra[id]; !done {
			spectra[id] = choosePredictions(records[id])
		}
	}
	return spectra, nil
}

// choosePredictions picks, from one spectrum's records, the one used for
// each version (active, else shadow, else the first re-scoring) and
// gathers every role each version had.
func choosePredictions(recs []predlog.Record) spectrumPredictions {
	// Role order first, so that the first record kept per version is the
	// one to use (the log's order already, kept whatever a store does).
	slices.SortStableFunc(recs, func(a, b predlog.Record) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.ID, b.ID))
	})
	sp := spectrumPredictions{chosen: map[string]predlog.Record{}, roles: map[string][]predlog.Role{}}
	for _, p := range recs {
		if _, ok := sp.chosen[p.ModelVersion]; !ok {
			sp.chosen[p.ModelVersion] = p
		}
		if !slices.Contains(sp.roles[p.ModelVersion], p.Role) {
			sp.roles[p.ModelVersion] = append(sp.roles[p.ModelVersion], p.Role)
		}
	}
	return sp
}

// otherVersions lists, in order, the versions other than version that
// predicted on the results' spectra.
func otherVersions(version string, results []LabResult, spectra map[predlog.PredictionID]spectrumPredictions) []string {
	var out []string
	for _, res := range results {
		for v := range spectra[res.PredictionID].chosen {
			if v != version {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// versionStats pairs version's predictions with the lab results on the
// spectra it predicted on, per analyte, overall and per batch.
func versionStats(version string, results []LabResult, spectra map[predlog.PredictionID]spectrumPredictions) VersionStats {
	vs := VersionStats{Version: version}
	var predicted, lab [inference.NumAnalytes][]float64
	batches := map[string]*batchPairs{}
	var roles []predlog.Role
	for _, res := range results {
		sp := spectra[res.PredictionID]
		p, ok := sp.chosen[version]
		if !ok {
			continue
		}
		for _, role := range sp.roles[version] {
			if !slices.Contains(roles, role) {
				roles = append(roles, role)
			}
		}
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
			x, hasPred := p.Concentrations.Value[a], p.Concentrations.Valid[a]
			if hasLab && hasPred {
				predicted[a] = append(predicted[a], x)
				lab[a] = append(lab[a], y)
				b.predicted[a] = append(b.predicted[a], x)
				b.lab[a] = append(b.lab[a], y)
			}
		}
	}
	slices.Sort(roles) // active, shadow, rescore
	vs.Roles = roles
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
