package evidence_test

import (
	"context"
	"testing"
	"time"

	"ramanserve/evidence"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// BenchmarkLoggedHotPath is what Logged costs the reply's goroutine for
// a 2048-point prediction within its limits and for one above its Q
// limit (the float64 copy the writer explains later), and within its
// limits with -log-spectra (the float32 copy, into a pooled buffer: the
// closed log releases each record at once), on a closed log that refuses
// every record, so that only the hand-off is measured.
func BenchmarkLoggedHotPath(b *testing.B) {
	ctx := context.Background()
	res, err := trainer.Train(ctx, synth.New(synth.Config{Seed: 4}).Dataset(60), trainer.Options{Seed: 1, MaxComponents: 4}, nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	log, err := sqlitelog.OpenLog(ctx, b.TempDir(), predlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := log.Close(ctx); err != nil {
		b.Fatal(err)
	}
	normal := inference.Spectrum{Wavenumbers: synth.Axis(), Intensities: synth.New(synth.Config{Seed: 5}).Next().Intensities}
	odd := inference.Spectrum{Wavenumbers: normal.Wavenumbers, Intensities: append([]float64(nil), normal.Intensities...)}
	for j := 900; j < 940; j++ {
		odd.Intensities[j] *= 3
	}
	for _, c := range []struct {
		name    string
		spec    *inference.Spectrum
		spectra bool
	}{{"within", &normal, false}, {"exceeded", &odd, false}, {"within-log-spectra", &normal, true}} {
		var p inference.Prediction
		if err := m.Predict(c.spec, &p); err != nil {
			b.Fatal(err)
		}
		col := evidence.New(evidence.Options{Log: log, ExplainExceedances: true, LogSpectra: c.spectra})
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				col.Logged(time.Now(), m, c.spec, &p, nil, nil)
			}
		})
	}
}
