package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/gen"
)

// The lifecycle endpoints a console needs, against a real ramanserve
// process: GET /training (pages, cursor, filter, after a restart), POST
// /training/{jobId}/cancel, GET and DELETE /model/{version}, and a load
// whose source names the wrong status.

// uploadCSV uploads csv with meta to the process and returns the job id.
func uploadCSV(t *testing.T, p *serverProcess, csv []byte, meta string) string {
	t.Helper()
	resp, body := multipartUpload(t, "http://"+p.httpAddr, bytes.NewReader(csv), []byte(meta))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	return acceptedID(t, resp, body)
}

// wantError checks an error answer's status and code.
func wantError(t *testing.T, what string, status int, body []byte, gotStatus int, code string) gen.ErrorResponse {
	t.Helper()
	if gotStatus != status {
		t.Fatalf("%s = %d %s, want %d %s", what, gotStatus, body, status, code)
	}
	e := errorCode(t, body)
	if e.Code != code {
		t.Fatalf("%s: code %s (%s), want %s", what, e.Code, e.Message, code)
	}
	return e
}

func listJobs(t *testing.T, c *gen.ClientWithResponses, params gen.ListTrainingJobsParams) *gen.ListTrainingJobsResponse {
	t.Helper()
	return must(c.ListTrainingJobsWithResponse(context.Background(), &params))(t)
}

// TestTrainingListPagesFilterAndRestart: jobs come newest first in pages
// whose cursors walk the whole list once, also after a restart; the
// status filter applies; a damaged or made-up cursor is 400
// INVALID_CURSOR and a limit out of range 400 INVALID_REQUEST.
func TestTrainingListPagesFilterAndRestart(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	dir := t.TempDir()
	p := startProcess(t, dir)
	c := p.client(t)
	if res := listJobs(t, c, gen.ListTrainingJobsParams{}); res.StatusCode() != 200 || len(res.JSON200.Jobs) != 0 || res.JSON200.NextCursor != nil {
		t.Fatalf("empty list: %d %s", res.StatusCode(), res.Body)
	}
	var submitted []string // oldest first
	for seed := uint64(1); seed <= 3; seed++ {
		id := uploadCSV(t, p, syntheticCSV(t, seed, trainingSamples), goodMeta)
		submitted = append(submitted, id)
		waitJob(t, c, id, 3*time.Minute)
	}
	// One more that fails: too few rows is refused at upload, so a
	// cancelled job is the failed one.
	big := uploadCSV(t, p, syntheticCSV(t, 9, 1200), goodMeta)
	cancel := must(c.CancelTrainingJobWithResponse(context.Background(), big))(t)
	if cancel.StatusCode() != 200 {
		t.Fatalf("cancel: %d %s", cancel.StatusCode(), cancel.Body)
	}
	submitted = append(submitted, big)
	newestFirst := make([]string, 0, len(submitted))
	for i := len(submitted) - 1; i >= 0; i-- {
		newestFirst = append(newestFirst, submitted[i])
	}

	walk := func(c *gen.ClientWithResponses, status *gen.TrainingJobStatus, limit int) ([]string, []string) {
		t.Helper()
		var got, cursors []string
		params := gen.ListTrainingJobsParams{Limit: &limit, Status: status}
		for pages := 0; pages < 10; pages++ {
			res := listJobs(t, c, params)
			if res.StatusCode() != 200 {
				t.Fatalf("GET /training: %d %s", res.StatusCode(), res.Body)
			}
			if len(res.JSON200.Jobs) > limit {
				t.Fatalf("page of %d with limit %d", len(res.JSON200.Jobs), limit)
			}
			var last time.Time
			for i, j := range res.JSON200.Jobs {
				if j.SubmittedAt == nil || j.Meta == nil || j.Meta.Operator != "op-17" || j.Samples == nil {
					t.Fatalf("job without its submission fields: %+v", j)
				}
				if i > 0 && j.SubmittedAt.After(last) {
					t.Fatalf("not newest first: %v after %v", j.SubmittedAt, last)
				}
				last = *j.SubmittedAt
				got = append(got, j.JobId)
			}
			if res.JSON200.NextCursor == nil {
				return got, cursors
			}
			cursors = append(cursors, *res.JSON200.NextCursor)
			params.Cursor = res.JSON200.NextCursor
		}
		t.Fatal("paging does not end")
		return nil, nil
	}
	for _, limit := range []int{1, 3, 50} {
		if got, _ := walk(c, nil, limit); fmt.Sprint(got) != fmt.Sprint(newestFirst) {
			t.Fatalf("limit %d: %v, want %v", limit, got, newestFirst)
		}
	}
	done, failed := gen.Done, gen.Failed
	if got, _ := walk(c, &done, 2); fmt.Sprint(got) != fmt.Sprint(newestFirst[1:]) {
		t.Fatalf("status done: %v, want %v", got, newestFirst[1:])
	}
	if got, _ := walk(c, &failed, 2); fmt.Sprint(got) != fmt.Sprint(newestFirst[:1]) {
		t.Fatalf("status failed: %v, want %v", got, newestFirst[:1])
	}
	_, cursors := walk(c, nil, 1)

	for _, bad := range []string{"not-a-cursor", cursors[0] + "x", strings.ToUpper(cursors[0]), "AXsidCI6MSwiaWQiOiJ4In0"} {
		bad := bad
		res := listJobs(t, c, gen.ListTrainingJobsParams{Cursor: &bad})
		wantError(t, "cursor "+bad, 400, res.Body, res.StatusCode(), "INVALID_CURSOR")
	}
	for _, limit := range []int{0, 201} {
		limit := limit
		res := listJobs(t, c, gen.ListTrainingJobsParams{Limit: &limit})
		wantError(t, fmt.Sprintf("limit %d", limit), 400, res.Body, res.StatusCode(), "INVALID_REQUEST")
	}

	// After a restart the records on disk are listed, and a cursor of
	// the earlier process still names its place.
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	p2 := startProcess(t, dir)
	c2 := p2.client(t)
	if got, _ := walk(c2, nil, 2); fmt.Sprint(got) != fmt.Sprint(newestFirst) {
		t.Fatalf("after a restart: %v, want %v", got, newestFirst)
	}
	one := 1
	res := listJobs(t, c2, gen.ListTrainingJobsParams{Limit: &one, Cursor: &cursors[1]})
	if res.StatusCode() != 200 || len(res.JSON200.Jobs) != 1 || res.JSON200.Jobs[0].JobId != newestFirst[2] {
		t.Fatalf("old cursor after a restart: %d %s", res.StatusCode(), res.Body)
	}
}

// TestCancelQueuedRunningFinished: with two training places, the running
// job and a queued one are cancelled (failed/CANCELLED, nothing staged,
// the place free for the next upload at once); a finished job is 409
// JOB_FINISHED and an unknown id 404 JOB_NOT_FOUND. Each cancel is sent
// right after its job is seen in the state under test: the running one as
// soon as it runs, the queued one while a job of 1,500 rows or more holds
// the worker.
func TestCancelQueuedRunningFinished(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	dir := t.TempDir()
	p := startProcess(t, dir, "-training-queue", "1")
	c := p.client(t)
	ctx := context.Background()
	wantCancelled := func(what, id string) {
		t.Helper()
		res := must(c.CancelTrainingJobWithResponse(ctx, id))(t)
		if res.StatusCode() != 200 || res.JSON200.Status != gen.Failed || res.JSON200.Error == nil || res.JSON200.Error.Code != "CANCELLED" {
			t.Fatalf("cancel %s: %d %s", what, res.StatusCode(), res.Body)
		}
	}
	status := func(id string) gen.TrainingJobStatus {
		t.Helper()
		return must(c.GetTrainingJobWithResponse(ctx, id))(t).JSON200.Status
	}

	// Running: cancelled as soon as it has made progress. Its place is
	// free when the answer comes: both places take an upload at once.
	running := startRunningJob(t, p)
	wantCancelled("running", running)
	first := uploadCSV(t, p, syntheticCSV(t, 5, trainingSamples), goodMeta)
	second := uploadCSV(t, p, syntheticCSV(t, 6, trainingSamples), goodMeta)
	for _, id := range []string{first, second} {
		if job := waitJob(t, c, id, 3*time.Minute); job.Status != gen.Done {
			t.Fatalf("job after the running one was cancelled: %+v", job.Error)
		}
	}

	// Queued: behind a slow running job, cancelled at once; its place is
	// free for the next upload, after which the places are full again.
	// The checks need the slow job still running at the end: when it
	// finished first (a fast machine), the round tells nothing, and is
	// repeated with twice the rows.
	var queued, slow, refill string
	for rows := 1500; ; rows *= 2 {
		slow = startRunningJobOf(t, p, rows)
		queued = uploadCSV(t, p, syntheticCSV(t, 7, trainingSamples), goodMeta)
		wantCancelled("queued", queued)
		refill = uploadCSV(t, p, syntheticCSV(t, 8, trainingSamples), goodMeta)
		resp, body := multipartUpload(t, "http://"+p.httpAddr, bytes.NewReader(syntheticCSV(t, 9, trainingSamples)), []byte(goodMeta))
		stillRunning := status(slow) == gen.Running
		if resp.StatusCode == http.StatusTooManyRequests && stillRunning {
			break
		}
		if stillRunning || rows >= 6000 {
			t.Fatalf("upload with the slow job (%d rows, running: %v) and the refill holding both places: %d %s, want 429", rows, stillRunning, resp.StatusCode, body)
		}
		t.Logf("the %d-row job ended before the check; again with %d rows", rows, 2*rows)
		for _, id := range []string{slow, refill, acceptedID(t, resp, body)} {
			if id != "" {
				waitJob(t, c, id, 3*time.Minute)
			}
		}
	}
	// The slow job has shown what it was for; cancelling it (rather than
	// waiting for its thousands of rows) frees its place for the refill.
	wantCancelled("slow", slow)
	if job := waitJob(t, c, refill, 3*time.Minute); job.Status != gen.Done {
		t.Fatalf("job beside the cancels: %+v", job.Error)
	}

	for _, id := range []string{running, queued, slow} {
		job := must(c.GetTrainingJobWithResponse(ctx, id))(t).JSON200
		if job.Status != gen.Failed || job.Error == nil || job.Error.Code != "CANCELLED" || job.Result != nil {
			t.Fatalf("cancelled job %s reads %+v", id, job)
		}
		if rec := jobRecordOnDisk(t, dir, id); rec.Status != gen.Failed || rec.Error == nil || rec.Error.Code != "CANCELLED" {
			t.Fatalf("record of %s on disk: %+v", id, rec)
		}
	}
	// Only the jobs that ran to the end staged a model: one each.
	doneStatus, maxPage := gen.Done, 200
	done := must(c.ListTrainingJobsWithResponse(ctx, &gen.ListTrainingJobsParams{Status: &doneStatus, Limit: &maxPage}))(t).JSON200.Jobs
	list := must(c.ListModelsWithResponse(ctx, nil))(t).JSON200
	if len(done) < 3 || len(list.Models) != len(done) {
		t.Fatalf("%d jobs done, models staged: %+v", len(done), list.Models)
	}
	files, _ := os.ReadDir(filepath.Join(dir, "models"))
	if len(files) != len(done) {
		t.Fatalf("models/ holds %d files for %d jobs done", len(files), len(done))
	}

	res := must(c.CancelTrainingJobWithResponse(ctx, refill))(t)
	wantError(t, "cancel a done job", 409, res.Body, res.StatusCode(), "JOB_FINISHED")
	res = must(c.CancelTrainingJobWithResponse(ctx, running))(t)
	wantError(t, "cancel a cancelled job", 409, res.Body, res.StatusCode(), "JOB_FINISHED")
	res = must(c.CancelTrainingJobWithResponse(ctx, "no-such-job"))(t)
	wantError(t, "cancel an unknown job", 404, res.Body, res.StatusCode(), "JOB_NOT_FOUND")
}

// acceptedID is the job id of a 202 answer, "" for any other.
func acceptedID(t *testing.T, resp *http.Response, body []byte) string {
	t.Helper()
	if resp.StatusCode != http.StatusAccepted {
		return ""
	}
	var acc gen.TrainingJobAccepted
	if err := json.Unmarshal(body, &acc); err != nil {
		t.Fatal(err)
	}
	if loc := resp.Header.Get("Location"); loc != "/training/"+acc.JobId {
		t.Errorf("202 with Location %q, want /training/%s", loc, acc.JobId)
	}
	return acc.JobId
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestModelDetailDeleteAndStatusMismatch: GET /model/{version} gives a
// trained model's lineage (with the SHA-256 of the CSV as uploaded and
// the file's own checksum), metrics, size, axis and report URL; a load with the wrong
// source is 409 MODEL_STATUS_MISMATCH naming the status; DELETE removes
// staged and archived versions from the list and from models/, refuses
// the active one (409 MODEL_ACTIVE), and unknown versions are 404.
func TestModelDetailDeleteAndStatusMismatch(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	dir := t.TempDir()
	p := startProcess(t, dir)
	c := p.client(t)
	ctx := context.Background()
	train := func(seed uint64) (version, jobID string, csv []byte) {
		t.Helper()
		csv = syntheticCSV(t, seed, trainingSamples)
		jobID = uploadCSV(t, p, csv, goodMeta)
		job := waitJob(t, c, jobID, 3*time.Minute)
		if job.Status != gen.Done {
			t.Fatalf("training: %+v", job.Error)
		}
		return job.Result.NewVersion, jobID, csv
	}
	a, jobA, csvA := train(11)
	b, _, _ := train(12)

	res := must(c.GetModelWithResponse(ctx, a, nil))(t)
	if res.StatusCode() != 200 {
		t.Fatalf("GET /model/%s: %d %s", a, res.StatusCode(), res.Body)
	}
	d := res.JSON200
	file, err := os.ReadFile(filepath.Join(dir, "models", a+".npz"))
	if err != nil {
		t.Fatal(err)
	}
	lin := d.Lineage
	switch {
	case d.Version != a || d.Status != gen.ModelStatus("staged") || d.Sha256 != sha256Hex(file) || d.SizeBytes != int64(len(file)):
		t.Fatalf("detail: %s", res.Body)
	case lin.TrainingCsvSha256 == nil || *lin.TrainingCsvSha256 != sha256Hex(csvA):
		t.Fatalf("training_csv_sha256 = %v, want %s", lin.TrainingCsvSha256, sha256Hex(csvA))
	case lin.TrainingRows == nil || *lin.TrainingRows != trainingSamples || lin.JobId == nil || *lin.JobId != jobA:
		t.Fatalf("lineage rows/job: %s", res.Body)
	case lin.Operator == nil || *lin.Operator != "op-17" || lin.SourceBatches == nil || strings.Join(*lin.SourceBatches, ",") != "B-1" || lin.Notes == nil || *lin.Notes != "conformance":
		t.Fatalf("lineage meta: %s", res.Body)
	case d.Metrics == nil || d.Metrics.Rmse.EPA == nil || d.Metrics.R2.DHA == nil || d.LatentComponents == nil || *d.LatentComponents < 1:
		t.Fatalf("metrics: %s", res.Body)
	case d.WavenumberCount == nil || *d.WavenumberCount != 2048 || d.WavenumberRange == nil || len(*d.WavenumberRange) != 2 ||
		(*d.WavenumberRange)[0] != 200 || (*d.WavenumberRange)[1] != 3200:
		t.Fatalf("axis (the default 2048 points over 200-3200 cm-1): %s", res.Body)
	case d.ReportUrl == nil || *d.ReportUrl != "/model/"+a+"/report":
		t.Fatalf("report_url: %s", res.Body)
	case d.Regions != nil || d.Preprocessing != nil:
		t.Fatalf("a raw, full-axis model reports regions or preprocessing: %s", res.Body)
	}

	src := func(s string) *gen.LoadModelRequestSource { v := gen.LoadModelRequestSource(s); return &v }
	load := func(version string, source *gen.LoadModelRequestSource) *gen.LoadModelResponse {
		return must(c.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: version, Source: source}))(t)
	}
	lr := load(b, src("archived"))
	if e := wantError(t, "archived load of a staged version", 409, lr.Body, lr.StatusCode(), "MODEL_STATUS_MISMATCH"); !strings.Contains(e.Message, "staged") {
		t.Fatalf("message does not name the status: %s", e.Message)
	}
	loadVersion(t, c, a)
	loadVersion(t, c, b) // a is archived now
	lr = load(a, nil)
	if e := wantError(t, "staged load of an archived version", 409, lr.Body, lr.StatusCode(), "MODEL_STATUS_MISMATCH"); !strings.Contains(e.Message, "archived") {
		t.Fatalf("message does not name the status: %s", e.Message)
	}
	lr = load("never-trained", src("archived"))
	wantError(t, "load of an unknown version", 400, lr.Body, lr.StatusCode(), "MODEL_NOT_FOUND")

	del := func(version string) *gen.DeleteModelResponse {
		return must(c.DeleteModelWithResponse(ctx, version))(t)
	}
	dr := del(b)
	wantError(t, "DELETE the active version", 409, dr.Body, dr.StatusCode(), "MODEL_ACTIVE")
	dr = del("never-trained")
	wantError(t, "DELETE an unknown version", 404, dr.Body, dr.StatusCode(), "MODEL_NOT_FOUND")
	gr := must(c.GetModelWithResponse(ctx, "never-trained", nil))(t)
	wantError(t, "GET an unknown version", 404, gr.Body, gr.StatusCode(), "MODEL_NOT_FOUND")

	// load, list and info are routes, never versions: another method on
	// them is 405 with Allow, as for any route.
	for _, tc := range []struct {
		method, version, allow string
		res                    func() (*http.Response, []byte)
	}{
		{"GET", "load", "POST", func() (*http.Response, []byte) {
			r := must(c.GetModelWithResponse(ctx, "load", nil))(t)
			return r.HTTPResponse, r.Body
		}},
		{"DELETE", "list", "GET", func() (*http.Response, []byte) {
			r := must(c.DeleteModelWithResponse(ctx, "list"))(t)
			return r.HTTPResponse, r.Body
		}},
		{"DELETE", "info", "GET", func() (*http.Response, []byte) {
			r := must(c.DeleteModelWithResponse(ctx, "info"))(t)
			return r.HTTPResponse, r.Body
		}},
	} {
		resp, body := tc.res()
		wantError(t, tc.method+" /model/"+tc.version, 405, body, resp.StatusCode, "METHOD_NOT_ALLOWED")
		if got := resp.Header.Get("Allow"); got != tc.allow {
			t.Fatalf("%s /model/%s: Allow %q, want %q", tc.method, tc.version, got, tc.allow)
		}
	}

	staged, _, _ := train(13)
	for _, v := range []string{a, staged} { // archived, then staged
		if dr := del(v); dr.StatusCode() != 204 {
			t.Fatalf("DELETE %s: %d %s", v, dr.StatusCode(), dr.Body)
		}
		if _, err := os.Stat(filepath.Join(dir, "models", v+".npz")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("models/%s.npz after DELETE: %v", v, err)
		}
		gr := must(c.GetModelWithResponse(ctx, v, nil))(t)
		wantError(t, "GET a deleted version", 404, gr.Body, gr.StatusCode(), "MODEL_NOT_FOUND")
	}
	listed := func(c *gen.ClientWithResponses) []string {
		var out []string
		for _, m := range must(c.ListModelsWithResponse(ctx, nil))(t).JSON200.Models {
			out = append(out, m.Version)
		}
		return out
	}
	if got := listed(c); fmt.Sprint(got) != fmt.Sprint([]string{b}) {
		t.Fatalf("list after the deletes: %v", got)
	}
	// The routes beside /model/{version} still answer as themselves.
	if info := must(c.GetModelInfoWithResponse(ctx, nil))(t); info.StatusCode() != 200 || info.JSON200.ActiveVersion != b {
		t.Fatalf("GET /model/info: %d %s", info.StatusCode(), info.Body)
	}
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}
	p2 := startProcess(t, dir)
	if got := listed(p2.client(t)); fmt.Sprint(got) != fmt.Sprint([]string{b}) {
		t.Fatalf("list after a restart: %v (deleted versions came back?)", got)
	}
}
