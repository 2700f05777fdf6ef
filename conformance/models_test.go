package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/trainer/synth"
)

// Models for the prediction-channel tests come in through the product's own
// path: a synthetic training CSV is uploaded, the job is polled, and the
// staged model is loaded.

// trainingSamples keeps the in-suite trainings quick while leaving
// cross-validation enough rows.
const trainingSamples = 120

// multipartUpload streams a training upload (csv part from csv, meta part
// from meta; either may be omitted with nil) to base+/training/start.
func multipartUpload(t *testing.T, base string, csv io.Reader, meta []byte) (*http.Response, []byte) {
	t.Helper()
	// A write probe slower than the server's -storage-probe-timeout (a disk busy with the
	// other tests' fsyncs) answers 507, retryable, before the body is read:
	// the upload is sent again, as a client honouring "retryable" would,
	// when its body can be read again. No test is about a slow disk.
	// Each attempt reads its own copy: the body's writer of a refused
	// attempt may still be reading when the next one starts.
	br, rewindable := csv.(*bytes.Reader)
	if !rewindable {
		return uploadOnce(t, base, csv, meta)
	}
	data, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		resp, body := uploadOnce(t, base, bytes.NewReader(data), meta)
		if resp.StatusCode != http.StatusInsufficientStorage || !bytes.Contains(body, []byte("did not answer")) || time.Now().After(deadline) {
			return resp, body
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func uploadOnce(t *testing.T, base string, csv io.Reader, meta []byte) (*http.Response, []byte) {
	t.Helper()
	contentType, pr := client.TrainingBody(meta, csv)
	req, err := http.NewRequest(http.MethodPost, base+"/training/start", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := validatingDoer{client: httpClient()}.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// syntheticCSV renders n synthetic samples from seed as a training CSV.
func syntheticCSV(t *testing.T, seed uint64, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := synth.New(synth.Config{Seed: seed}).WriteCSV(context.Background(), &buf, n); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitJob polls a training job until it leaves queued/running.
func waitJob(t *testing.T, c *gen.ClientWithResponses, id string, limit time.Duration) *gen.TrainingJob {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := -1.0
	for {
		res := must(c.GetTrainingJobWithResponse(context.Background(), id))(t)
		if res.StatusCode() == http.StatusServiceUnavailable && res.JSONDefault != nil && res.JSONDefault.Retryable != nil && *res.JSONDefault.Retryable && time.Now().Before(deadline) {
			// A fleet's store that did not answer in time (a starved
			// machine): the contract says retry, so a client does.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if res.StatusCode() != 200 || res.JSON200 == nil {
			t.Fatalf("GET /training/%s = %d %s", id, res.StatusCode(), res.Body)
		}
		job := res.JSON200
		if float64(job.Progress) < last {
			t.Fatalf("progress went backwards: %v after %v", job.Progress, last)
		}
		last = float64(job.Progress)
		if job.Status == gen.Done || job.Status == gen.Failed {
			return job
		}
		if job.Progress >= 1 {
			t.Fatalf("progress 1.0 while %s", job.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %v", id, job.Status, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// trainStaged uploads a synthetic set and returns the staged version.
func trainStaged(t *testing.T, base string, c *gen.ClientWithResponses, seed uint64) string {
	t.Helper()
	meta := []byte(fmt.Sprintf(`{"operator":"conformance","source_batches":["synthetic-%d"],"notes":"conformance suite"}`, seed))
	resp, body := multipartUpload(t, base, bytes.NewReader(syntheticCSV(t, seed, trainingSamples)), meta)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /training/start = %d %s", resp.StatusCode, body)
	}
	var acc gen.TrainingJobAccepted
	if err := json.Unmarshal(body, &acc); err != nil {
		t.Fatal(err)
	}
	if acc.StatusUrl == nil || *acc.StatusUrl != "/training/"+acc.JobId {
		t.Errorf("status_url = %v, want /training/%s", acc.StatusUrl, acc.JobId)
	}
	job := waitJob(t, c, acc.JobId, 3*time.Minute)
	if job.Status != gen.Done || job.Result == nil {
		t.Fatalf("job ended %s: %+v", job.Status, job.Error)
	}
	if job.Progress != 1 {
		t.Errorf("done job progress = %v, want 1", job.Progress)
	}
	return job.Result.NewVersion
}

// loadVersion activates a registry version and fails the test otherwise.
func loadVersion(t *testing.T, c *gen.ClientWithResponses, version string) *gen.LoadResult {
	t.Helper()
	res := must(c.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: version}))(t)
	if res.StatusCode() != 200 || res.JSON200 == nil {
		// Archived models need source archived.
		src := gen.LoadModelRequestSource("archived")
		res = must(c.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: version, Source: &src}))(t)
	}
	if res.StatusCode() != 200 || res.JSON200 == nil {
		t.Fatalf("load %s = %d %s", version, res.StatusCode(), res.Body)
	}
	return res.JSON200
}

var (
	modelsMu       sync.Mutex
	modelsTried    bool
	modelA, modelB string
)

// twoModels makes sure the suite's server has two trained models, from
// different synthetic data so their outputs differ, and that modelA is
// active. Against an external server (CONFORMANCE_HTTP) it trains them
// there too: a conformance run is allowed to add staged models.
func twoModels(t *testing.T) (string, string) {
	t.Helper()
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if !modelsTried {
		modelsTried = true
		modelA = trainStaged(t, suite.httpBase, api(t), 101)
		modelB = trainStaged(t, suite.httpBase, api(t), 202)
	}
	if modelA == "" || modelB == "" {
		t.Fatal("training the suite's models failed in an earlier test")
	}
	loadVersion(t, api(t), modelA)
	return modelA, modelB
}

// debianPython returns Debian's python3 with the modules the
// conformance scripts need. It skips the test when they are missing,
// except in CI, where the Makefile installs them and their absence is a
// failure.
func debianPython(t *testing.T, modules ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	args := []string{"-c", "import " + joinComma(modules)}
	if err := exec.Command(py, args...).Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s with %v is required in CI (make deps): %v", py, modules, err)
		}
		t.Skipf("%s with %v not available: %v", py, modules, err)
	}
	return py
}

func joinComma(s []string) string {
	out := ""
	for i, m := range s {
		if i > 0 {
			out += ", "
		}
		out += m
	}
	return out
}
