package evidence_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/inference"
	"ramanserve/registry"
	evidencesvc "ramanserve/service/evidence"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// models is a registry of one version.
type models struct {
	version string
	m       inference.Model
}

func (s models) OpenVersion(_ context.Context, version string) (inference.Model, error) {
	if version != s.version {
		return nil, fmt.Errorf("%w: %s", registry.ErrModelNotFound, version)
	}
	return s.m, nil
}

// TestPredictionsReport: an unknown id is ErrPredictionNotFound; a
// logged spectrum of a registered version is explained variable by
// variable; without the spectrum, or with the version gone, the report
// says what is missing and has no explanation.
func TestPredictionsReport(t *testing.T) {
	ctx := context.Background()
	res, err := trainer.Train(ctx, synth.New(synth.Config{Seed: 4}).Dataset(60), trainer.Options{Seed: 1, MaxComponents: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitelog.Open(ctx, t.TempDir(), sqlitelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)
	spec := synth.New(synth.Config{Seed: 5}).Next().Intensities
	record := func(version string, withSpectrum bool) predlog.PredictionID {
		rec := &predlog.Record{PredictionID: predlog.NewPredictionID(), Time: time.Now(), ModelVersion: version, Role: predlog.RoleActive}
		if withSpectrum {
			for i, x := range spec {
				rec.Spectrum = append(rec.Spectrum, float32(x))
				rec.Wavenumbers = append(rec.Wavenumbers, float32(synth.Axis()[i]))
			}
		}
		if err := store.Append(ctx, []*predlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
		return rec.PredictionID
	}
	svc := evidencesvc.NewPredictions(store, models{version: "v1", m: m})

	if _, err := svc.Report(ctx, predlog.NewPredictionID()); !errors.Is(err, predlog.ErrPredictionNotFound) {
		t.Fatalf("an unknown id: %v, want ErrPredictionNotFound", err)
	}
	r, err := svc.Report(ctx, record("v1", true))
	if err != nil || r.Explanation == nil || r.Missing != "" || !r.Limits.HasT2 || !r.Limits.HasQ {
		t.Fatalf("a logged spectrum: explanation %v, missing %q, limits %+v, %v", r.Explanation != nil, r.Missing, r.Limits, err)
	}
	if n := len(r.Explanation.Q); n != len(res.Params.XMean) {
		t.Fatalf("%d Q contributions for %d variables", n, len(res.Params.XMean))
	}
	for name, c := range map[string]struct {
		id      predlog.PredictionID
		missing string
	}{
		"without the spectrum": {record("v1", false), "-log-spectra"},
		"the version gone":     {record("v0", true), "no longer in the registry"},
	} {
		r, err := svc.Report(ctx, c.id)
		if err != nil || r.Explanation != nil || !strings.Contains(r.Missing, c.missing) {
			t.Errorf("%s: explanation %v, missing %q, %v; want it to say %q", name, r.Explanation != nil, r.Missing, err, c.missing)
		}
	}
}
