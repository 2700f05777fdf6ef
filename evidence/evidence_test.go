package evidence_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/evidence"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/shadow"
	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
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
		c.Logged(at.Add(time.Duration(i)*time.Second), active, &spec, &p, &sc, nil)
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
// cached, with spectra too: the log releases each dropped record, so its
// float32 copy goes back to the pool and the next record reuses it; a
// spectrum over MaxLoggedPoints is not copied; the exceedance policy adds
// nothing to a prediction within its limits.
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
		{true, spec, 1},
		{true, inference.Spectrum{Wavenumbers: make([]float64, evidence.MaxLoggedPoints+1), Intensities: make([]float64, evidence.MaxLoggedPoints+1)}, 1},
	} {
		// The exceedance policy is on, as by default: a prediction within
		// its limits must cost nothing more for it.
		c := evidence.New(evidence.Options{Log: log, LogSpectra: tc.spectra, ExplainExceedances: true})
		c.Logged(time.Now(), m, &tc.spec, &p, &sc, nil) // caches the axis
		if got := testing.AllocsPerRun(100, func() { c.Logged(time.Now(), m, &tc.spec, &p, &sc, nil) }); got != tc.want {
			t.Errorf("spectra %v, %d points: %v allocations per record, want %v", tc.spectra, len(tc.spec.Intensities), got, tc.want)
		}
	}
	if d := log.Dropped(); d == 0 {
		t.Error("the closed log counted no drop")
	}
}

// TestCollectorStoresContributions: a reply's contributions are stored
// with its record; an exceedance whose reply carried none gets them
// computed by the log's writer, the same as the reply would have
// carried; a prediction within its limits, or an exceedance with
// ExplainExceedances off, stores none.
func TestCollectorStoresContributions(t *testing.T) {
	ctx := context.Background()
	res, err := trainer.Train(ctx, synth.New(synth.Config{Seed: 4}).Dataset(60), trainer.Options{Seed: 1, MaxComponents: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	normal := inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: synth.New(synth.Config{Seed: 5}).Next().Intensities}
	odd := inference.Spectrum{Wavenumbers: normal.Wavenumbers, Intensities: append([]float64(nil), normal.Intensities...)}
	for j := 900; j < 940; j++ {
		odd.Intensities[j] *= 3 // a band the calibration never saw
	}
	predict := func(s *inference.Spectrum, top int) (inference.Prediction, *inference.Contributions) {
		var p inference.Prediction
		var c inference.Contributions
		if err := m.PredictWithContributions(s, &p, top, &c); err != nil {
			t.Fatal(err)
		}
		return p, &c
	}
	pn, asked := predict(&normal, 5)
	if pn.Diagnostics.ReducedT2 > 1 || pn.Diagnostics.ReducedQ > 1 {
		t.Fatalf("the in-domain spectrum exceeds a limit: %+v", pn.Diagnostics)
	}
	po, wantOdd := predict(&odd, evidence.ExceedanceTop)
	if po.Diagnostics.ReducedQ <= 1 {
		t.Fatalf("the spectrum with a foreign band is within the Q limit: %+v", po.Diagnostics)
	}

	dir := t.TempDir()
	log, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	on := evidence.New(evidence.Options{Log: log, ExplainExceedances: true})
	off := evidence.New(evidence.Options{Log: log})
	ids := map[string]time.Time{}
	logAt := func(c *evidence.Collector, name string, s *inference.Spectrum, p inference.Prediction, ct *inference.Contributions) {
		at := time.Date(2026, 11, 23, 8, 0, len(ids), 0, time.UTC)
		ids[name] = at
		c.Logged(at, m, s, &p, nil, ct)
	}
	logAt(on, "asked", &normal, pn, asked)
	logAt(on, "within", &normal, pn, nil)
	logAt(on, "exceeded", &odd, po, nil)
	logAt(off, "exceeded, policy off", &odd, po, nil)
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := log.Stats(); st.Explained != 1 || st.ExplainFailed != 0 {
		t.Fatalf("the writer explained %d records (%d failed), want 1", st.Explained, st.ExplainFailed)
	}
	log, err = sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(ctx)
	page, err := log.Page(ctx, predlog.Filter{})
	if err != nil || len(page.Records) != len(ids) {
		t.Fatalf("%d records, %v; want %d", len(page.Records), err, len(ids))
	}
	want := map[string]*inference.Contributions{"asked": asked, "exceeded": wantOdd}
	for name, at := range ids {
		var id predlog.PredictionID
		for _, r := range page.Records {
			if r.Time.Equal(at) {
				id = r.PredictionID
			}
		}
		recs, err := log.ByPrediction(ctx, id)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: %d records, %v", name, len(recs), err)
		}
		if got := recs[0].Contributions; !reflect.DeepEqual(got, want[name]) {
			t.Errorf("%s: stored contributions\n got %+v\nwant %+v", name, got, want[name])
		}
	}
	if got := wantOdd.Q.Total; got != po.Diagnostics.Q {
		t.Errorf("the stored Q total %v is not the reply's Q %v", got, po.Diagnostics.Q)
	}

	// A record the log refuses (here: closed) gives its place among the
	// pending explanations back, so refusals never starve later ones.
	closed := evidence.New(evidence.Options{Log: log, ExplainExceedances: true})
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 * evidence.MaxPendingExplains {
		closed.Logged(time.Now(), m, &odd, &po, nil, nil)
	}
	if n := closed.ExplainsSkipped(); n != 0 {
		t.Errorf("%d exceedances skipped for want of room, after the closed log refused every record", n)
	}
}
