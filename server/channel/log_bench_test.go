package channel_test

import (
	"context"
	"testing"
	"time"

	"ramanserve/evidence"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/shadow"
	"ramanserve/inference"
	"ramanserve/server/channel"
)

// BenchmarkPredict2048Logged is BenchmarkPredict2048 with the prediction
// log and a shadow model on (a real SQLite log in a temporary directory, a
// real scorer scoring with a second copy of the model): the difference is
// the hot path's cost of the evidence hook. The scorer and the writer run
// on their own goroutines; when they fall behind the full rate of the
// benchmark, their queues drop (and count) rather than slow the predict.
func BenchmarkPredict2048Logged(b *testing.B) { benchLogged(b, false) }

// BenchmarkPredict2048LoggedSpectra is BenchmarkPredict2048Logged with
// -log-spectra: each record carries a float32 copy of the spectrum.
func BenchmarkPredict2048LoggedSpectra(b *testing.B) { benchLogged(b, true) }

func benchLogged(b *testing.B, spectra bool) {
	log, err := sqlitelog.OpenLog(context.Background(), b.TempDir(), predlog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	collector := evidence.New(evidence.Options{Log: log, LogSpectra: spectra, ExplainExceedances: true})
	scorer := shadow.New(shadow.Options{Sink: collector})
	collector.SetShadow(scorer)
	if err := scorer.Set(benchModel(b)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = scorer.Close(context.Background())
		_ = log.Close(context.Background())
		st := log.Stats()
		b.Logf("log: committed %d, dropped %d; shadow: %+v", st.Committed, st.Dropped, scorer.Totals())
	})
	hook := &timedLog{log: collector}
	benchPredictWith(b, benchModel(b), nil, hook)
	b.ReportMetric(float64(hook.took.Nanoseconds())/float64(hook.calls), "hook-ns/predict")
}

// timedLog measures the time the hook itself takes on the request's
// goroutine: the rest of the difference with BenchmarkPredict2048 is the
// writer and the shadow model competing for the cores, which at the
// benchmark's full rate is far more than the rig's rate asks.
type timedLog struct {
	log   channel.PredictionLog
	took  time.Duration
	calls int
}

func (t *timedLog) Logged(at time.Time, m inference.Model, spec *inference.Spectrum, p *inference.Prediction, sc *inference.ScanContext, ct *inference.Contributions) {
	began := time.Now()
	t.log.Logged(at, m, spec, p, sc, ct)
	t.took += time.Since(began)
	t.calls++
}
