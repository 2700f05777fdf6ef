package evidence_test

import (
	"context"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/evidence"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/shadow"
	"ramanserve/inference"
)

func model(t *testing.T, version string, coef []float64) inference.Model {
	t.Helper()
	axis := []float64{500, 600, 700, 800}
	m, err := inference.NewPLSModel(&inference.PLSParams{
		Meta:    inference.Metadata{Version: version, Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA}, XMean: make([]float64, 4), XScale: []float64{1, 1, 1, 1},
		Coef: mat.NewDense(4, 1, coef), Intercept: []float64{1},
	}, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCollector: each logged prediction is an active record with the
// prediction's figures, the scan context and (with LogSpectra) the
// spectrum as float32; the shadow's record carries the same
// PredictionID, time and context; spectra on one axis share its float32
// copy; a spectrum over MaxLoggedPoints is logged without it.
func TestCollector(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	log, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := evidence.New(evidence.Options{Log: log, LogSpectra: true})
	scorer := shadow.New(shadow.Options{Sink: c})
	c.SetShadow(scorer)
	active, candidate := model(t, "v1", []float64{1, 2, 3, 4}), model(t, "v2", []float64{4, 3, 2, 1})
	if err := scorer.Set(candidate); err != nil {
		t.Fatal(err)
	}
	axis := []float64{500, 600, 700, 800}
	at := time.Date(2026, 11, 23, 8, 0, 0, 123456789, time.UTC)
	const n = 5
	for i := range n {
		spec := inference.Spectrum{Wavenumbers: axis, Intensities: []float64{float64(i), 0.25, 0.5, 1}}
		var p inference.Prediction
		if err := active.Predict(&spec, &p); err != nil {
			t.Fatal(err)
		}
		sc := inference.ScanContext{BatchID: "B", HasBatchID: true, Port: "P", HasPort: true, ScanSeq: float64(i), HasScanSeq: true}
		c.Logged(at.Add(time.Duration(i)*time.Second), active, &spec, &p, &sc)
	}
	if err := scorer.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}
	log, err = sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(ctx)
	page, err := log.Page(ctx, predlog.Filter{WithSpectra: true, Role: predlog.RoleActive})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != n {
		t.Fatalf("%d active records with spectra, want %d", len(page.Records), n)
	}
	for i, r := range page.Records {
		if r.ModelVersion != "v1" || !r.Time.Equal(at.Add(time.Duration(i)*time.Second)) || r.BatchID != "B" || r.Port != "P" || r.ScanSeq != float64(i) {
			t.Errorf("active record %d: %+v", i, r)
		}
		if r.Spectrum[0] != float32(i) || r.Spectrum[3] != 1 || r.Wavenumbers[1] != 600 {
			t.Errorf("record %d: spectrum %v on %v", i, r.Spectrum, r.Wavenumbers)
		}
		both, err := log.ByPrediction(ctx, r.PredictionID)
		if err != nil {
			t.Fatal(err)
		}
		if len(both) != 2 || both[1].Role != predlog.RoleShadow || both[1].ModelVersion != "v2" || !both[1].Time.Equal(r.Time) ||
			both[1].BatchID != "B" || both[1].ScanSeq != float64(i) {
			t.Fatalf("records of %s: %+v", r.PredictionID, both)
		}
		spec := inference.Spectrum{Wavenumbers: axis, Intensities: []float64{float64(i), 0.25, 0.5, 1}}
		var want inference.Prediction
		if err := candidate.Predict(&spec, &want); err != nil {
			t.Fatal(err)
		}
		if both[1].Concentrations != want.Concentrations {
			t.Errorf("shadow record %v, the candidate predicts %v", both[1].Concentrations, want.Concentrations)
		}
	}
}

// TestCollectorBounds: with a closed log (which drops every record, so
// nothing else runs) Logged allocates the record only, once the axis is
// cached, and no more with spectra than their float32 copy; a spectrum
// over MaxLoggedPoints is not copied.
func TestCollectorBounds(t *testing.T) {
	ctx := context.Background()
	log, err := sqlitelog.OpenLog(ctx, t.TempDir(), predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m := model(t, "v1", []float64{1, 2, 3, 4})
	spec := inference.Spectrum{Wavenumbers: []float64{500, 600, 700, 800}, Intensities: []float64{1, 2, 3, 4}}
	var p inference.Prediction
	sc := inference.ScanContext{BatchID: "B", HasBatchID: true}
	for _, tc := range []struct {
		spectra bool
		spec    inference.Spectrum
		want    float64
	}{
		{false, spec, 1},
		{true, spec, 2},
		{true, inference.Spectrum{Wavenumbers: make([]float64, evidence.MaxLoggedPoints+1), Intensities: make([]float64, evidence.MaxLoggedPoints+1)}, 1},
	} {
		c := evidence.New(evidence.Options{Log: log, LogSpectra: tc.spectra})
		c.Logged(time.Now(), m, &tc.spec, &p, &sc) // caches the axis
		if got := testing.AllocsPerRun(100, func() { c.Logged(time.Now(), m, &tc.spec, &p, &sc) }); got != tc.want {
			t.Errorf("spectra %v, %d points: %v allocations per record, want %v", tc.spectra, len(tc.spec.Intensities), got, tc.want)
		}
	}
	if d := log.Dropped(); d == 0 {
		t.Error("the closed log counted no drop")
	}
}
