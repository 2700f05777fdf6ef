package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/gen"
	"ramanserve/service/models"
	"ramanserve/trainer/jobs"
)

// heldLog passes a re-scoring job's reads through and holds every write
// until release is closed (or the job's context ends); held is closed
// when the first write waits.
type heldLog struct {
	jobs.RescoreLog
	release chan struct{}
	held    chan struct{}
	once    sync.Once
}

func newHeldLog(l jobs.RescoreLog) *heldLog {
	return &heldLog{RescoreLog: l, release: make(chan struct{}), held: make(chan struct{})}
}

func (h *heldLog) RecordWait(ctx context.Context, rec *predlog.Record) error {
	h.once.Do(func() { close(h.held) })
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.RescoreLog.RecordWait(ctx, rec)
}

func waitClosed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// deleteVersion sends DELETE /model/{version}; the envelope is decoded
// when the answer has a body.
func (f *rescoreFixture) deleteVersion(t *testing.T, version string) (*http.Response, gen.ErrorResponse) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, f.srv.URL+"/model/"+version, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e gen.ErrorResponse
	if len(b) > 0 {
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("DELETE /model/%s: %d %s: %v", version, resp.StatusCode, b, err)
		}
	}
	return resp, e
}

// wantBusy: DELETE /model/{version} answers 409 MODEL_BUSY in the error
// envelope, retryable with Retry-After, naming job jobID.
func (f *rescoreFixture) wantBusy(t *testing.T, version, jobID string) {
	t.Helper()
	resp, e := f.deleteVersion(t, version)
	if resp.StatusCode != http.StatusConflict || e.Code != "MODEL_BUSY" || e.Retryable == nil || !*e.Retryable ||
		resp.Header.Get("Retry-After") != "5" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		!strings.Contains(e.Message, jobID) {
		t.Fatalf("DELETE /model/%s during job %s: %d %+v (Retry-After %q)", version, jobID, resp.StatusCode, e, resp.Header.Get("Retry-After"))
	}
	var d gen.ModelDetail
	if got := f.call(t, http.MethodGet, "/model/"+version, &d); got != http.StatusOK {
		t.Fatalf("GET /model/%s after a refused delete: %d", version, got)
	}
}

// wantDeleted: DELETE /model/{version} answers 204 and the version is gone.
func (f *rescoreFixture) wantDeleted(t *testing.T, version string) {
	t.Helper()
	if resp, e := f.deleteVersion(t, version); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /model/%s: %d %+v", version, resp.StatusCode, e)
	}
	var e gen.ErrorResponse
	if got := f.call(t, http.MethodGet, "/model/"+version, &e); got != http.StatusNotFound || e.Code != "MODEL_NOT_FOUND" {
		t.Fatalf("GET /model/%s after its delete: %d %+v", version, got, e)
	}
}

func (f *rescoreFixture) postRescore(t *testing.T, version string) gen.TrainingJobAccepted {
	t.Helper()
	var acc gen.TrainingJobAccepted
	if got := f.call(t, http.MethodPost, "/model/"+version+"/rescore", &acc); got != http.StatusAccepted {
		t.Fatalf("POST /model/%s/rescore: %d %+v", version, got, acc)
	}
	return acc
}

// TestDeleteRefusedWhileRescoreRuns: while a re-scoring job of a version
// runs, DELETE of that version is 409 MODEL_BUSY and the version stays;
// once the job ended (done, every spectrum scored) the delete goes
// through.
func TestDeleteRefusedWhileRescoreRuns(t *testing.T) {
	const n = 5
	var held *heldLog
	f := newRescoreFixtureWith(t, n, true, func(l jobs.RescoreLog) jobs.RescoreLog { held = newHeldLog(l); return held })
	acc := f.postRescore(t, f.version)
	waitClosed(t, held.held, "the re-scoring job's first write")

	f.wantBusy(t, f.version, acc.JobId)

	close(held.release)
	job, err := f.jobs.Wait(context.Background(), acc.JobId)
	if err != nil || job.Status != jobs.Done || job.Rescore.Spectra != n {
		t.Fatalf("the re-scoring job ended %s (%+v, %+v): %v", job.Status, job.Rescore, job.Error, err)
	}
	f.wantDeleted(t, f.version)
}

// TestDeleteRefusedWhileRescoreQueued: a re-scoring job waiting behind
// another holds its version too; cancelling it frees the version at once,
// while the running job still holds its own.
func TestDeleteRefusedWhileRescoreQueued(t *testing.T) {
	var held *heldLog
	f := newRescoreFixtureWith(t, 5, true, func(l jobs.RescoreLog) jobs.RescoreLog { held = newHeldLog(l); return held })
	other, _, err := models.Stager{Registry: f.reg}.Stage(context.Background(), f.trained, jobs.Lineage{Meta: jobs.Meta{Operator: "op"}})
	if err != nil {
		t.Fatal(err)
	}
	running := f.postRescore(t, other)
	waitClosed(t, held.held, "the running job's first write")
	queued := f.postRescore(t, f.version)
	if j, err := f.jobs.Get(context.Background(), queued.JobId); err != nil || j.Status != jobs.Queued {
		t.Fatalf("second job: %s, %v; want queued", j.Status, err)
	}

	f.wantBusy(t, f.version, queued.JobId)
	f.wantBusy(t, other, running.JobId)

	var cancelled gen.TrainingJob
	if got := f.call(t, http.MethodPost, "/training/"+queued.JobId+"/cancel", &cancelled); got != http.StatusOK {
		t.Fatalf("cancel the queued job: %d %+v", got, cancelled)
	}
	f.wantDeleted(t, f.version)
	f.wantBusy(t, other, running.JobId)

	close(held.release)
	if job, err := f.jobs.Wait(context.Background(), running.JobId); err != nil || job.Status != jobs.Done {
		t.Fatalf("the running job ended %s (%+v): %v", job.Status, job.Error, err)
	}
	f.wantDeleted(t, other)
}
