package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/service/models"
	"ramanserve/service/training"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/synth"
)

// rescoreFixture is a registry with one staged model trained here, a job
// manager, a prediction log holding n logged spectra, and the HTTP API
// over them.
type rescoreFixture struct {
	reg     *registry.Registry
	jobs    *jobs.Manager
	log     *predlog.Writer
	version string
	// trained is the staged model's training result: publishing it again
	// stages another version.
	trained *trainer.Result
	srv     *httptest.Server
	logged  []*predlog.Record
}

func newRescoreFixture(t *testing.T, n int, logSpectra bool) *rescoreFixture {
	t.Helper()
	return newRescoreFixtureWith(t, n, logSpectra, nil)
}

// newRescoreFixtureWith is newRescoreFixture whose re-scoring jobs see the
// log through wrap (nil: as it is).
func newRescoreFixtureWith(t *testing.T, n int, logSpectra bool, wrap func(jobs.RescoreLog) jobs.RescoreLog) *rescoreFixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	reg, err := registry.Open(ctx, dir, registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	g := synth.New(synth.Config{Seed: 3})
	res, err := trainer.Train(ctx, g.Dataset(50), trainer.Options{Seed: 1, MaxComponents: 5, Folds: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	version, _, err := models.Stager{Registry: reg}.Stage(ctx, res, jobs.Lineage{Meta: jobs.Meta{Operator: "op"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := jobfiles.Open(reg.JobsDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.New(ctx, files, files, jobs.Options{QueueSize: 1, Publish: models.Stager{Registry: reg}.Stage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	l, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{CommitInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	f := &rescoreFixture{reg: reg, jobs: m, log: l, version: version, trained: res}
	rows := g.Dataset(n)
	axis := make([]float32, 0, 2048)
	for _, w := range synth.Axis() {
		axis = append(axis, float32(w))
	}
	t0 := time.Now().Add(-time.Hour).UTC()
	for i := range n {
		rec := &predlog.Record{PredictionID: predlog.NewPredictionID(), Time: t0.Add(time.Duration(i) * time.Second),
			ModelVersion: "active-0", Role: predlog.RoleActive,
			ScanContext: inference.ScanContext{BatchID: "B1", HasBatchID: true}, Wavenumbers: axis}
		for _, v := range rows.Row(i) {
			rec.Spectrum = append(rec.Spectrum, float32(v))
		}
		if err := l.RecordWait(ctx, rec); err != nil {
			t.Fatal(err)
		}
		f.logged = append(f.logged, rec)
	}
	waitUntil(t, "the logged spectra to commit", func() bool { return l.Stats().Committed >= uint64(n) })
	var spectra jobs.RescoreLog
	if logSpectra {
		spectra = l
		if wrap != nil {
			spectra = wrap(l)
		}
	}
	rs := models.New(reg, m, spectra)
	h, err := NewHTTPHandler(&API{Registry: reg, Training: training.New(m, nil), Rescore: rs, Deleter: rs},
		HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// call sends a bodiless request and decodes the JSON answer into out.
func (f *rescoreFixture) call(t *testing.T, method, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
	}
	return resp.StatusCode
}

func (f *rescoreFixture) wantError(t *testing.T, path string, status int, code string) {
	t.Helper()
	var e gen.ErrorResponse
	if got := f.call(t, http.MethodPost, path, &e); got != status || e.Code != code {
		t.Fatalf("POST %s: %d %s (%s), want %d %s", path, got, e.Code, e.Message, status, code)
	}
}

// TestRescoreEndpoint: POST /model/{version}/rescore queues a job of kind
// rescore (202, its status URL) that scores every logged spectrum with the
// staged model: the rescore records carry the original PredictionID and
// time and what the registry's model predicts on the logged spectrum; GET
// /training/{id} shows kind and spec. Unknown version, a bad range, a
// range without spectra and a full queue answer their contract errors.
func TestRescoreEndpoint(t *testing.T) {
	const n = 30
	f := newRescoreFixture(t, n, true)
	f.wantError(t, "/model/no-such-version/rescore", http.StatusBadRequest, "MODEL_NOT_FOUND")
	f.wantError(t, "/model/"+f.version+"/rescore?since=2026-11-23T11:00:00Z&until=2026-11-23T10:00:00Z", http.StatusBadRequest, "INVALID_REQUEST")
	f.wantError(t, "/model/"+f.version+"/rescore?since=2001-01-01T00:00:00Z&until=2001-01-02T00:00:00Z", http.StatusConflict, "NO_LOGGED_SPECTRA")
	// A since in the future with until left to its default (now).
	f.wantError(t, "/model/"+f.version+"/rescore?since=2999-01-01T00:00:00Z", http.StatusBadRequest, "INVALID_REQUEST")

	var acc gen.TrainingJobAccepted
	if got := f.call(t, http.MethodPost, "/model/"+f.version+"/rescore", &acc); got != http.StatusAccepted || acc.StatusUrl == nil || *acc.StatusUrl != "/training/"+acc.JobId {
		t.Fatalf("POST rescore: %d %+v", got, acc)
	}
	var job gen.TrainingJob
	waitUntil(t, "the re-scoring job to end", func() bool {
		f.call(t, http.MethodGet, "/training/"+acc.JobId, &job)
		return job.Status == gen.Done || job.Status == gen.Failed
	})
	if job.Status != gen.Done || job.Kind == nil || *job.Kind != gen.TrainingJobKindRescore || job.Rescore == nil ||
		job.Rescore.Version != f.version || job.Rescore.Spectra != n || job.Rescore.Until == nil || job.Rescore.Since != nil || job.Progress != 1 {
		t.Fatalf("job: %+v kind %v rescore %+v error %+v", job, job.Kind, job.Rescore, job.Error)
	}
	waitUntil(t, "the rescore records to commit", func() bool { return f.log.Stats().Committed >= 2*n })
	model, err := f.reg.OpenVersion(context.Background(), f.version)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range f.logged {
		recs, err := f.log.ByPrediction(context.Background(), o.PredictionID)
		if err != nil || len(recs) != 2 || recs[1].Role != predlog.RoleRescore {
			t.Fatalf("prediction %s: %d records (%v)", o.PredictionID, len(recs), err)
		}
		r := recs[1]
		spec := inference.Spectrum{}
		for k := range o.Spectrum {
			spec.Wavenumbers = append(spec.Wavenumbers, float64(o.Wavenumbers[k]))
			spec.Intensities = append(spec.Intensities, float64(o.Spectrum[k]))
		}
		var want inference.Prediction
		if err := model.Predict(&spec, &want); err != nil {
			t.Fatal(err)
		}
		if !r.Time.Equal(o.Time) || r.ModelVersion != f.version || r.Concentrations != want.Concentrations || r.BatchID != "B1" {
			t.Fatalf("rescore record %+v; the model predicts %+v at %v", r, want.Concentrations, o.Time)
		}
	}

	// The job list shows the kind too.
	var list gen.TrainingJobList
	f.call(t, http.MethodGet, "/training", &list)
	if len(list.Jobs) != 1 || list.Jobs[0].Kind == nil || *list.Jobs[0].Kind != gen.TrainingJobKindRescore {
		t.Fatalf("GET /training: %+v", list)
	}
}

// TestRescoreQueueFull: with the only places taken (queue size 1: the
// running job and one waiting), the next POST is 429 TRAINING_QUEUE_FULL.
func TestRescoreQueueFull(t *testing.T) {
	f := newRescoreFixture(t, 5, true)
	r, err := f.jobs.Reserve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	r2, err := f.jobs.Reserve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Release()
	f.wantError(t, "/model/"+f.version+"/rescore", http.StatusTooManyRequests, "TRAINING_QUEUE_FULL")
}

// TestRescoreWithoutLoggedSpectra: without -log-spectra every request for
// a known version is 409 NO_LOGGED_SPECTRA, even with spectra in the log.
func TestRescoreWithoutLoggedSpectra(t *testing.T) {
	f := newRescoreFixture(t, 3, false)
	f.wantError(t, "/model/"+f.version+"/rescore", http.StatusConflict, "NO_LOGGED_SPECTRA")
	f.wantError(t, "/model/unknown-7/rescore", http.StatusBadRequest, "MODEL_NOT_FOUND")
}
