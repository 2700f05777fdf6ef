package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/synth"
)

// t0 is the time of the first logged prediction in these tests.
var rescoreT0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

var (
	modelOnce   sync.Once
	rescoreM    inference.Model
	rescoreErr  error
	rescoreRows *trainer.Dataset
)

// rescoreModel is a real PLS model trained on synthetic spectra, version
// "cand-1", and a data set of other spectra to log.
func rescoreModel(t *testing.T) (inference.Model, *trainer.Dataset) {
	t.Helper()
	modelOnce.Do(func() {
		g := synth.New(synth.Config{Seed: 7})
		res, err := trainer.Train(context.Background(), g.Dataset(60), trainer.Options{Seed: 1, MaxComponents: 6, Folds: 3}, nil)
		if err != nil {
			rescoreErr = err
			return
		}
		res.Params.Meta.Version = "cand-1"
		rescoreM, rescoreErr = inference.NewPLSModel(res.Params, inference.ModelOptions{InstrumentAxis: synth.Axis()})
		rescoreRows = g.Dataset(40)
	})
	if rescoreErr != nil {
		t.Fatal(rescoreErr)
	}
	return rescoreM, rescoreRows
}

func openPredLog(t *testing.T) *predlog.Writer {
	t.Helper()
	l, err := sqlitelog.OpenLog(context.Background(), t.TempDir(), predlog.Options{CommitInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// logSpectra logs n active predictions a second apart from rescoreT0,
// cycling through rows' spectra, with a batch id and scan_seq, and waits
// until they are committed. It returns them by PredictionID.
func logSpectra(t *testing.T, l *predlog.Writer, rows *trainer.Dataset, n int, spectra bool) map[predlog.PredictionID]*predlog.Record {
	t.Helper()
	axis := toF32(synth.Axis())
	out := make(map[predlog.PredictionID]*predlog.Record, n)
	before := l.Stats().Committed
	for i := range n {
		rec := &predlog.Record{PredictionID: predlog.NewPredictionID(), Time: rescoreT0.Add(time.Duration(i) * time.Second),
			ModelVersion: "active-1", Role: predlog.RoleActive,
			ScanContext: inference.ScanContext{BatchID: "B" + string(rune('0'+i%3)), HasBatchID: true, ScanSeq: float64(i), HasScanSeq: true}}
		rec.Concentrations.Set(inference.EPA, 1)
		if spectra {
			rec.Spectrum, rec.Wavenumbers = toF32(rows.Row(i%rows.Len())), axis
		}
		out[rec.PredictionID] = rec
		if err := l.RecordWait(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	waitCommitted(t, l, before+uint64(n))
	return out
}

// waitCommitted waits until the log has committed n records. Its
// deadline is for a machine busy with other race-detector suites, where
// the writer once committed 66 of 1,200 spectra in 20 s.
func waitCommitted(t *testing.T, l *predlog.Writer, n uint64) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for l.Stats().Committed < n {
		if time.Now().After(deadline) {
			t.Fatalf("log committed %d of %d records in 90 s (%+v)", l.Stats().Committed, n, l.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func toF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// records pages every record f selects.
func records(t *testing.T, l predlog.Reader, f predlog.Filter) []predlog.Record {
	t.Helper()
	var all []predlog.Record
	for {
		p, err := l.Page(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Records...)
		if p.Next == "" {
			return all
		}
		f.Cursor = p.Next
	}
}

// TestRescoreWritesWhatTheModelPredicts: a re-scoring job over 1,200
// logged spectra (three pages) writes one rescore record per spectrum,
// with the original PredictionID, time and context, and exactly the
// concentrations, confidence and diagnostics the model gives on the logged
// spectrum directly; its progress only grows and its record says what it
// scored.
func TestRescoreWritesWhatTheModelPredicts(t *testing.T) {
	model, rows := rescoreModel(t)
	l := openPredLog(t)
	const n = 1200
	orig := logSpectra(t, l, rows, n, true)
	dir := t.TempDir()
	m := newManager(t, dir, &publisher{}, 2)
	until := rescoreT0.Add(time.Hour)
	j, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: l, Until: until, Meta: jobs.Meta{Operator: "op"}})
	if err != nil {
		t.Fatal(err)
	}
	if j.Kind != jobs.KindRescore || j.Status != jobs.Queued || j.Rescore == nil || j.Rescore.Version != "cand-1" || !j.Rescore.Until.Equal(until) {
		t.Fatalf("submitted %+v", j)
	}
	done := wait(t, m, j.ID)
	if done.Status != jobs.Done || done.Progress != 1 || done.Rescore.Spectra != n || done.Rescore.Skipped != 0 {
		t.Fatalf("job ended %s (%+v), progress %v, spec %+v", done.Status, done.Error, done.Progress, done.Rescore)
	}
	waitCommitted(t, l, 2*n)
	got := records(t, l, predlog.Filter{Role: predlog.RoleRescore})
	if len(got) != n {
		t.Fatalf("%d rescore records, want %d", len(got), n)
	}
	seen := map[predlog.PredictionID]bool{}
	for i := range got {
		r := &got[i]
		o, ok := orig[r.PredictionID]
		if !ok || seen[r.PredictionID] {
			t.Fatalf("rescore record %d has PredictionID %s: not one logged spectrum's (or twice)", i, r.PredictionID)
		}
		seen[r.PredictionID] = true
		if !r.Time.Equal(o.Time) || r.ModelVersion != "cand-1" || r.BatchID != o.BatchID || !r.HasBatchID || r.ScanSeq != o.ScanSeq {
			t.Fatalf("record %s: time %v version %s batch %q seq %v; original time %v batch %q seq %v",
				r.PredictionID, r.Time, r.ModelVersion, r.BatchID, r.ScanSeq, o.Time, o.BatchID, o.ScanSeq)
		}
		var want inference.Prediction
		spec := inference.Spectrum{Wavenumbers: widen(o.Wavenumbers), Intensities: widen(o.Spectrum)}
		if err := model.Predict(&spec, &want); err != nil {
			t.Fatal(err)
		}
		if r.Concentrations != want.Concentrations || r.Confidence != want.Confidence ||
			!r.HasReducedT2 || r.ReducedT2 != want.Diagnostics.ReducedT2 {
			t.Fatalf("record %s: %+v / %+v / T2 %v; the model predicts %+v / %+v / T2 %v", r.PredictionID,
				r.Concentrations, r.Confidence, r.ReducedT2, want.Concentrations, want.Confidence, want.Diagnostics.ReducedT2)
		}
	}
	// The record on disk says what the job was.
	b, err := os.ReadFile(filepath.Join(dir, j.ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var disk struct {
		Kind    string `json:"kind"`
		Rescore struct {
			Version string `json:"version"`
			Spectra int64  `json:"spectra"`
		} `json:"rescore"`
	}
	if err := json.Unmarshal(b, &disk); err != nil || disk.Kind != "rescore" || disk.Rescore.Version != "cand-1" || disk.Rescore.Spectra != n {
		t.Fatalf("record on disk: %s (%v)", b, err)
	}
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestRescoreNeedsLoggedSpectra: a range without logged spectra, and a log
// of predictions without spectra, are jobs.ErrNoLoggedSpectra at submission,
// and take no place in the queue.
func TestRescoreNeedsLoggedSpectra(t *testing.T) {
	model, rows := rescoreModel(t)
	l := openPredLog(t)
	logSpectra(t, l, rows, 10, false)
	m := newManager(t, t.TempDir(), &publisher{}, 0)
	for _, req := range []jobs.RescoreRequest{
		{Model: model, Log: l, Until: rescoreT0.Add(time.Hour)},                                      // no spectra logged
		{Model: model, Log: l, Since: rescoreT0.Add(-time.Hour), Until: rescoreT0.Add(-time.Minute)}, // nothing in range
	} {
		if _, err := m.SubmitRescore(context.Background(), req); !errors.Is(err, jobs.ErrNoLoggedSpectra) {
			t.Fatalf("SubmitRescore(%v..%v): %v, want jobs.ErrNoLoggedSpectra", req.Since, req.Until, err)
		}
	}
	if _, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: l, Since: rescoreT0, Until: rescoreT0}); !errors.Is(err, trainer.ErrInvalidOptions) {
		t.Fatalf("empty range: %v, want ErrInvalidOptions", err)
	}
	logSpectra(t, l, rows, 1, true)
	if _, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: l, Until: rescoreT0.Add(time.Hour)}); err != nil {
		t.Fatalf("with one spectrum logged: %v", err)
	}
}

// gatedLog lets a re-scoring job write `free` records, then holds its
// next write until gate is closed or the job's context ends.
type gatedLog struct {
	jobs.RescoreLog
	mu      sync.Mutex
	free    int
	gate    chan struct{}
	waiting chan struct{} // closed when a write first waits at the gate
	once    sync.Once
}

func newGatedLog(l jobs.RescoreLog, free int) *gatedLog {
	return &gatedLog{RescoreLog: l, free: free, gate: make(chan struct{}), waiting: make(chan struct{})}
}

func (g *gatedLog) RecordWait(ctx context.Context, rec *predlog.Record) error {
	g.mu.Lock()
	pass := g.free > 0
	g.free--
	g.mu.Unlock()
	if !pass {
		g.once.Do(func() { close(g.waiting) })
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.RescoreLog.RecordWait(ctx, rec)
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestRescoreCancelAndQueueFull: a running re-scoring job holds a place
// of the queue (the next submission past the queue is ErrQueueFull), is
// cancelled mid-way (failed, CANCELLED, its place free again), and the
// records it wrote before stay in the log.
func TestRescoreCancelAndQueueFull(t *testing.T) {
	model, rows := rescoreModel(t)
	l := openPredLog(t)
	logSpectra(t, l, rows, 600, true)
	m := newManager(t, t.TempDir(), &publisher{}, 1)
	g := newGatedLog(l, 550) // past the first page
	req := jobs.RescoreRequest{Model: model, Log: g, Until: rescoreT0.Add(time.Hour)}
	running, err := m.SubmitRescore(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, g.waiting, "the job to reach its gate")
	queued, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: l, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.SubmitRescore(context.Background(), req); !errors.Is(err, jobs.ErrQueueFull) {
		t.Fatalf("third job: %v, want ErrQueueFull", err)
	}
	j, _ := m.Get(context.Background(), running.ID)
	if j.Status != jobs.Running || j.Progress <= 0 || j.Progress >= 1 {
		t.Fatalf("gated job is %s at progress %v; want running between 0 and 1", j.Status, j.Progress)
	}
	c, err := m.Cancel(context.Background(), running.ID)
	if err != nil || c.Status != jobs.Failed || c.Error == nil || c.Error.Code != "CANCELLED" {
		t.Fatalf("Cancel: %+v, %v", c, err)
	}
	// The queued job now runs to the end, and its own records are all there.
	if q := wait(t, m, queued.ID); q.Status != jobs.Done || q.Rescore.Spectra != 600 {
		t.Fatalf("second job: %s %+v %+v", q.Status, q.Error, q.Rescore)
	}
	waitCommitted(t, l, 600+550+600)
	if got := len(records(t, l, predlog.Filter{Role: predlog.RoleRescore})); got != 550+600 {
		t.Fatalf("%d rescore records; want the cancelled job's 550 and the other's 600", got)
	}
	if j, _ := m.Get(context.Background(), running.ID); j.Status != jobs.Failed || j.Error.Code != "CANCELLED" {
		t.Fatalf("cancelled job later reads %s %+v", j.Status, j.Error)
	}
}

// TestRescoreAfterACrash: the records a crash leaves (a re-scoring job
// running mid-way, one queued) read as failed, INTERRUPTED, after a
// restart, keeping their kind, spec and progress; a record written before
// re-scoring existed (no kind) reads as a training job.
func TestRescoreAfterACrash(t *testing.T) {
	model, rows := rescoreModel(t)
	l := openPredLog(t)
	logSpectra(t, l, rows, 600, true)
	dir := t.TempDir()
	m := newManager(t, dir, &publisher{}, 2)
	g := newGatedLog(l, 550)
	running, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: g, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	queued, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: l, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, g.waiting, "the job to reach its gate")
	// Wait until the running record on disk shows progress (saved at
	// most every 250 ms).
	var saved jobs.Job
	deadline := time.Now().Add(20 * time.Second)
	for saved.Progress == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the running job's progress never reached its record")
		}
		time.Sleep(20 * time.Millisecond)
		b, err := os.ReadFile(filepath.Join(dir, running.ID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &saved); err != nil {
			t.Fatal(err)
		}
	}
	// The crash: the directory as this process leaves it, taken while it
	// runs (no Close), plus a record of an older server.
	crashed := t.TempDir()
	for _, id := range []string{running.ID, queued.ID} {
		b, err := os.ReadFile(filepath.Join(dir, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, id+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := `{"job_id": "old-1", "status": "done", "progress": 1, "samples": 60, "submitted_at": "2026-01-01T00:00:00Z", "meta": {"operator": "op", "options": {}}}`
	if err := os.WriteFile(filepath.Join(crashed, "old-1.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	after := newManager(t, crashed, &publisher{}, 2)
	for id, status := range map[string]string{running.ID: "running", queued.ID: "queued"} {
		j, err := after.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "INTERRUPTED" || !strings.Contains(j.Error.Message, "was "+status) ||
			j.KindOf() != jobs.KindRescore || j.Rescore == nil || j.Rescore.Version != "cand-1" {
			t.Fatalf("after the crash, the %s job reads %s %+v kind %s spec %+v", status, j.Status, j.Error, j.KindOf(), j.Rescore)
		}
		if status == "running" && (j.Progress < saved.Progress || j.Progress >= 1) {
			t.Fatalf("interrupted job's progress %v; it had saved %v", j.Progress, saved.Progress)
		}
	}
	if j, err := after.Get(context.Background(), "old-1"); err != nil || j.KindOf() != jobs.KindTraining || j.Rescore != nil {
		t.Fatalf("an old record reads as kind %s (%v)", j.KindOf(), err)
	}
	// And a shutdown (Close) interrupts the running job and the queued
	// one as well: neither can be taken over by the next start.
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{running.ID, queued.ID} {
		b, err := os.ReadFile(filepath.Join(dir, id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var j jobs.Job
		if err := json.Unmarshal(b, &j); err != nil || j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "INTERRUPTED" ||
			!strings.Contains(j.Error.Message, "re-scoring") {
			t.Fatalf("after Close the record reads %s %+v (%v)", j.Status, j.Error, err)
		}
	}
}

// TestRescoreJoinsPerformance: after a re-scoring job, lab results matched
// to the logged spectra count for the re-scored version too (role
// rescore), with the statistics of its own predictions, beside the
// active version that answered the rig.
func TestRescoreJoinsPerformance(t *testing.T) {
	model, rows := rescoreModel(t)
	l := openPredLog(t)
	const n = 12
	orig := logSpectra(t, l, rows, n, true)
	m := newManager(t, t.TempDir(), &publisher{}, 2)
	j, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: l, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if done := wait(t, m, j.ID); done.Status != jobs.Done {
		t.Fatalf("job %s %+v", done.Status, done.Error)
	}
	waitCommitted(t, l, 2*n)
	rec, err := reconcile.New(l, &reconcile.MemoryStore{}, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var labs []reconcile.LabRecord
	var predicted, lab []float64
	byID := map[predlog.PredictionID]predlog.Record{}
	for _, r := range records(t, l, predlog.Filter{Role: predlog.RoleRescore}) {
		byID[r.PredictionID] = r
	}
	for id, o := range orig {
		v := 5 + o.ScanSeq/10
		var b inference.Breakdown
		b.Set(inference.EPA, v)
		labs = append(labs, reconcile.LabRecord{BatchID: o.BatchID, ScanSeq: int64(o.ScanSeq), HasScanSeq: true, Lab: b,
			LabSampleID: "L" + id.String()})
		predicted = append(predicted, byID[id].Concentrations.Value[inference.EPA])
		lab = append(lab, v)
	}
	if res, err := rec.Post(context.Background(), labs); err != nil || res.Matched != n {
		t.Fatalf("lab post: %+v, %v", res, err)
	}
	rep, err := rec.Performance(context.Background(), "cand-1", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Samples != n || len(rep.Version.Roles) != 1 || rep.Version.Roles[0] != predlog.RoleRescore {
		t.Fatalf("performance of the re-scored version: %d samples, roles %v", rep.Samples, rep.Version.Roles)
	}
	want := reconcile.Statistics(predicted, lab)
	var got reconcile.Stats
	for _, a := range rep.Version.Analytes {
		if a.Analyte == inference.EPA {
			got = a.Stats
		}
	}
	// The sums run in another order than here: equal to rounding.
	if got.N != n || got.Bias == nil || math.Abs(*got.Bias-*want.Bias) > 1e-12 || math.Abs(*got.RMSEP-*want.RMSEP) > 1e-12 {
		t.Fatalf("EPA stats %+v, want %+v", got, want)
	}
	if len(rep.Others) != 1 || rep.Others[0].Version != "active-1" {
		t.Fatalf("others: %+v", rep.Others)
	}
}

// TestRescoreInProgressAndWait: a re-scoring job holds its version while
// queued or running, not once cancelled or ended; Wait returns when a
// job ends, including a queued job taken off the queue by Cancel, and at
// once for a job already ended.
func TestRescoreInProgressAndWait(t *testing.T) {
	model, rows := rescoreModel(t)
	l := openPredLog(t)
	logSpectra(t, l, rows, 10, true)
	m := newManager(t, t.TempDir(), &publisher{}, 1)
	version := model.Metadata().Version
	if _, ok := m.RescoreInProgress(version); ok {
		t.Fatal("a version in use before any job")
	}
	g := newGatedLog(l, 0)
	running, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: g, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, g.waiting, "the job to reach its gate")
	// The second job waits at a gate of its own, so that it cannot end
	// before the test has seen it hold the version.
	gq := newGatedLog(l, 0)
	queued, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: gq, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if j, ok := m.RescoreInProgress(version); !ok || j.ID != running.ID || j.Status != jobs.Running {
		t.Fatalf("in use by %s %s (%v); want the running job %s", j.ID, j.Status, ok, running.ID)
	}
	if _, ok := m.RescoreInProgress("other-version"); ok {
		t.Fatal("another version reads in use")
	}

	waited := make(chan jobs.Job, 1)
	go func() {
		j, err := m.Wait(context.Background(), queued.ID)
		if err != nil {
			t.Error(err)
		}
		waited <- j
	}()
	if _, err := m.Cancel(context.Background(), running.ID); err != nil {
		t.Fatal(err)
	}
	// The cancelled job no longer counts; the queued one, now running or
	// still queued, does.
	if j, ok := m.RescoreInProgress(version); !ok || j.ID != queued.ID {
		t.Fatalf("in use by %s (%v); want the second job %s", j.ID, ok, queued.ID)
	}
	close(gq.gate)
	if j := <-waited; j.Status != jobs.Done {
		t.Fatalf("Wait returned the job %s (%+v)", j.Status, j.Error)
	}
	if _, ok := m.RescoreInProgress(version); ok {
		t.Fatal("the version reads in use once every job ended")
	}

	// Cancel of a queued job ends its Wait too.
	g2 := newGatedLog(l, 0)
	blocker, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: g2, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	waitClosed(t, g2.waiting, "the third job to reach its gate")
	fourth, err := m.SubmitRescore(context.Background(), jobs.RescoreRequest{Model: model, Log: l, Until: rescoreT0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		j, err := m.Wait(context.Background(), fourth.ID)
		if err != nil {
			t.Error(err)
		}
		waited <- j
	}()
	if _, err := m.Cancel(context.Background(), fourth.ID); err != nil {
		t.Fatal(err)
	}
	if j := <-waited; j.Status != jobs.Failed || j.Error == nil || j.Error.Code != "CANCELLED" {
		t.Fatalf("Wait of the cancelled queued job returned %s (%+v)", j.Status, j.Error)
	}
	close(g2.gate)
	if j, err := m.Wait(context.Background(), blocker.ID); err != nil || j.Status != jobs.Done {
		t.Fatalf("Wait: %s, %v", j.Status, err)
	}
	if j, err := m.Wait(context.Background(), blocker.ID); err != nil || j.Status != jobs.Done {
		t.Fatalf("Wait of an ended job: %s, %v", j.Status, err)
	}
	if _, err := m.Wait(context.Background(), "no-such-job"); !errors.Is(err, jobs.ErrJobNotFound) {
		t.Fatalf("Wait of an unknown job: %v", err)
	}
}
