package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/platform/pgtest"
)

// Safe concurrent changes and readiness, against real ramanserve
// processes: an Idempotency-Key on POST /training/start, the registry's
// ETag (If-None-Match, If-Match and expected_active on POST /model/load),
// Location on 202, GET /livez and /readyz, and the systemd notifications.

// send sends one request through the validating client and returns the
// response and its body. HEAD, which the contract states in its GET's
// description rather than as an operation, is sent as it is.
func send(t *testing.T, method, url string, header http.Header, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := trySend(method, url, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// trySend is send returning its error, for goroutines of a test.
func trySend(method, url string, header http.Header, body io.Reader) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	var doer interface {
		Do(*http.Request) (*http.Response, error)
	} = validatingDoer{client: httpClient()}
	if method == http.MethodHead {
		doer = httpClient()
	}
	resp, err := doer.Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// keyedUpload posts a training upload with an Idempotency-Key.
func keyedUpload(t *testing.T, p *serverProcess, key string, csv, meta []byte) (*http.Response, []byte) {
	t.Helper()
	resp, b, err := tryKeyedUpload(p, key, csv, meta)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func tryKeyedUpload(p *serverProcess, key string, csv, meta []byte) (*http.Response, []byte, error) {
	contentType, body := client.TrainingBody(meta, bytes.NewReader(csv))
	defer body.Close()
	return trySend(http.MethodPost, "http://"+p.httpAddr+"/training/start",
		http.Header{"Content-Type": {contentType}, "Idempotency-Key": {key}}, body)
}

// TestIdempotentTrainingRetry: the same key with the same upload gets 202
// with the job the first request created, and no second job, also after
// a restart; the same key with another upload gets 422
// IDEMPOTENCY_KEY_REUSED; a key outside the contract's characters 400.
func TestIdempotentTrainingRetry(t *testing.T) {
	t.Parallel() // its own process: runs beside the others
	dir := t.TempDir()
	p := startProcess(t, dir)
	csv := syntheticCSV(t, 7, 40)
	meta := []byte(goodMeta)
	const key = "4f1c2d7e-retry-of-one-upload"

	resp, body := keyedUpload(t, p, key, csv, meta)
	first := acceptedID(t, resp, body)
	if first == "" {
		t.Fatalf("first upload: %d %s", resp.StatusCode, body)
	}
	resp, body = keyedUpload(t, p, key, csv, meta)
	if again := acceptedID(t, resp, body); again != first {
		t.Fatalf("the retry with the same key and upload: %d %s, want 202 with job %s", resp.StatusCode, body, first)
	}
	c := p.client(t)
	if jobs := listJobs(t, c, gen.ListTrainingJobsParams{}).JSON200.Jobs; len(jobs) != 1 {
		t.Fatalf("%d jobs after a retried upload, want 1", len(jobs))
	}

	otherMeta := []byte(`{"operator":"someone else","source_batches":["B-2"]}`)
	resp, body = keyedUpload(t, p, key, csv, otherMeta)
	e := wantError(t, "the same key with another meta", http.StatusUnprocessableEntity, body, resp.StatusCode, "IDEMPOTENCY_KEY_REUSED")
	if !strings.Contains(e.Message, first) {
		t.Errorf("the 422 message does not name the first job %s: %s", first, e.Message)
	}
	resp, body = keyedUpload(t, p, key, syntheticCSV(t, 8, 40), meta)
	wantError(t, "the same key with another csv", http.StatusUnprocessableEntity, body, resp.StatusCode, "IDEMPOTENCY_KEY_REUSED")
	resp, body = keyedUpload(t, p, "has space", csv, meta)
	wantError(t, "a key with a space", http.StatusBadRequest, body, resp.StatusCode, "INVALID_REQUEST")

	// Another key is another request.
	resp, body = keyedUpload(t, p, "another-key", csv, meta)
	if second := acceptedID(t, resp, body); second == "" || second == first {
		t.Fatalf("another key: %d %s, want a new job", resp.StatusCode, body)
	}

	// Keys survive a restart.
	waitJob(t, c, first, 3*time.Minute)
	if err := p.terminate(t); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	p = startProcess(t, dir)
	resp, body = keyedUpload(t, p, key, csv, meta)
	if again := acceptedID(t, resp, body); again != first {
		t.Fatalf("the retry after a restart: %d %s, want 202 with job %s", resp.StatusCode, body, first)
	}
	resp, body = keyedUpload(t, p, key, csv, otherMeta)
	wantError(t, "another meta after a restart", http.StatusUnprocessableEntity, body, resp.StatusCode, "IDEMPOTENCY_KEY_REUSED")
}

// TestModelETagAndPreconditions: the model routes carry one strong ETag
// of the registry's state, If-None-Match gets 304 without a body, and a
// load with a stale If-Match, or an expected_active that is not active,
// gets 412 PRECONDITION_FAILED naming the active version and changes
// nothing; the ETag is the same after a restart.
func TestModelETagAndPreconditions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startProcess(t, dir)
	base := "http://" + p.httpAddr
	c := p.client(t)
	a := trainStaged(t, base, c, 11)
	b := trainStaged(t, base, c, 12)

	list := func(header http.Header) (*http.Response, []byte) {
		return send(t, http.MethodGet, base+"/model/list", header, nil)
	}
	resp, _ := list(nil)
	e1 := resp.Header.Get("ETag")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(e1, `"`) || !strings.HasSuffix(e1, `"`) || len(e1) < 3 {
		t.Fatalf("GET /model/list: %d, ETag %q, want 200 with a strong quoted tag", resp.StatusCode, e1)
	}
	resp, body := list(http.Header{"If-None-Match": {e1}})
	if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != e1 {
		t.Fatalf("If-None-Match with the current tag: %d, %d bytes, ETag %q; want 304, no body, %s", resp.StatusCode, len(body), resp.Header.Get("ETag"), e1)
	}
	if resp, _ := list(http.Header{"If-None-Match": {`"stale", W/` + e1}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("If-None-Match with a stale and a weak tag: %d, want 200", resp.StatusCode)
	}
	if resp, _ := send(t, http.MethodGet, base+"/model/"+a, http.Header{"If-None-Match": {e1}}, nil); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("GET /model/%s with the current tag: %d, want 304", a, resp.StatusCode)
	}

	load := func(version string, header http.Header, extra string) (*http.Response, []byte) {
		h := http.Header{"Content-Type": {"application/json"}}
		for k, v := range header {
			h[k] = v
		}
		return send(t, http.MethodPost, base+"/model/load", h, strings.NewReader(`{"version":"`+version+`"`+extra+`}`))
	}
	// Two consoles read the list (e1); the first promotes a.
	if resp, body := load(a, http.Header{"If-Match": {e1}}, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("load %s with the current If-Match: %d %s", a, resp.StatusCode, body)
	}
	resp, _ = list(nil)
	e2 := resp.Header.Get("ETag")
	if e2 == e1 || e2 == "" {
		t.Fatalf("the ETag did not change with a load: %s then %s", e1, e2)
	}
	if resp, _ := list(http.Header{"If-None-Match": {e1}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("If-None-Match with the tag before the load: %d, want 200", resp.StatusCode)
	}
	// The second console's promotion, from the same list, is refused.
	resp, body = load(b, http.Header{"If-Match": {e1}}, "")
	e := wantError(t, "load with a stale If-Match", http.StatusPreconditionFailed, body, resp.StatusCode, "PRECONDITION_FAILED")
	if !strings.Contains(e.Message, a) {
		t.Errorf("the 412 message does not name the active version %s: %s", a, e.Message)
	}
	resp, body = load(b, nil, `,"expected_active":"`+b+`"`)
	e = wantError(t, "load with a wrong expected_active", http.StatusPreconditionFailed, body, resp.StatusCode, "PRECONDITION_FAILED")
	if !strings.Contains(e.Message, a) {
		t.Errorf("the 412 message does not name the active version %s: %s", a, e.Message)
	}
	info, body := send(t, http.MethodGet, base+"/model/info", nil, nil)
	var mi gen.ModelInfo
	if err := json.Unmarshal(body, &mi); err != nil || info.StatusCode != http.StatusOK || mi.ActiveVersion != a {
		t.Fatalf("after refused loads, GET /model/info: %d %s, want %s active", info.StatusCode, body, a)
	}
	if got := info.Header.Get("ETag"); got != e2 {
		t.Fatalf("GET /model/info ETag %q, the list's is %q", got, e2)
	}
	if resp, _ := send(t, http.MethodGet, base+"/model/info", http.Header{"If-None-Match": {e2}}, nil); resp.StatusCode != http.StatusNotModified {
		t.Fatalf("GET /model/info with the current tag: %d, want 304", resp.StatusCode)
	}
	// Both preconditions right: the load goes ahead.
	if resp, body := load(b, http.Header{"If-Match": {e2}}, `,"expected_active":"`+a+`"`); resp.StatusCode != http.StatusOK {
		t.Fatalf("load %s with both preconditions current: %d %s", b, resp.StatusCode, body)
	}
	resp, _ = list(nil)
	e3 := resp.Header.Get("ETag")

	// The tag names the state, not the process.
	if err := p.terminate(t); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	p = startProcess(t, dir)
	resp, _ = send(t, http.MethodGet, "http://"+p.httpAddr+"/model/list", http.Header{"If-None-Match": {e3}}, nil)
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("after a restart, If-None-Match with the tag of the same state: %d, want 304", resp.StatusCode)
	}
}

// notifySocket is a service manager's NOTIFY_SOCKET: a unixgram socket
// the test reads.
type notifySocket struct {
	path string
	conn *net.UnixConn
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	// A short directory: a socket's path must fit in 108 bytes.
	dir, err := mkShortTemp(t)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &notifySocket{path: path, conn: conn}
}

// await reads notifications until one holds want, within limit.
func (n *notifySocket) await(t *testing.T, want string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	buf := make([]byte, 4096)
	for {
		_ = n.conn.SetReadDeadline(deadline)
		k, err := n.conn.Read(buf)
		if err != nil {
			t.Fatalf("no %q on NOTIFY_SOCKET within %v: %v", want, limit, err)
		}
		if msg := string(buf[:k]); strings.Contains(msg, want) {
			return msg
		}
	}
}

// readyz asks GET /readyz and returns its status and body.
func readyz(t *testing.T, base string) (int, gen.NotReady) {
	t.Helper()
	resp, body := send(t, http.MethodGet, base+"/readyz", nil, nil)
	var nr gen.NotReady
	if resp.StatusCode != http.StatusOK {
		if err := json.Unmarshal(body, &nr); err != nil {
			t.Fatalf("GET /readyz %d: %v: %s", resp.StatusCode, err, body)
		}
	}
	return resp.StatusCode, nr
}

// TestReadinessAndNotify: a process started as a Type=notify service
// says READY=1 once it serves and feeds its watchdog; /livez is 200;
// /readyz is 503 NOT_READY with the reason while no model is loaded,
// 200 after a load, and 503 again from SIGTERM on while the process
// drains (-shutdown-delay), which it announces with STOPPING=1; HEAD
// answers both like GET without a body.
func TestReadinessAndNotify(t *testing.T) {
	t.Parallel()
	sock := listenNotify(t)
	p := startProcessEnv(t, t.TempDir(), []string{"NOTIFY_SOCKET=" + sock.path, "WATCHDOG_USEC=2000000"},
		"-shutdown-delay", "30s", "-shutdown-grace", "60s")
	sock.await(t, "READY=1", 30*time.Second)
	sock.await(t, "WATCHDOG=1", 30*time.Second)
	base := "http://" + p.httpAddr

	if resp, body := send(t, http.MethodGet, base+"/livez", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /livez: %d %s", resp.StatusCode, body)
	}
	if resp, body := send(t, http.MethodHead, base+"/livez", nil, nil); resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("HEAD /livez: %d, %d bytes", resp.StatusCode, len(body))
	}
	status, nr := readyz(t, base)
	if status != http.StatusServiceUnavailable || nr.Code != "NOT_READY" || !strings.Contains(strings.Join(nr.Reasons, "; "), "no model is loaded") {
		t.Fatalf("GET /readyz without a model: %d %+v, want 503 NOT_READY naming the missing model", status, nr)
	}
	if resp, body := send(t, http.MethodHead, base+"/readyz", nil, nil); resp.StatusCode != http.StatusServiceUnavailable || len(body) != 0 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("HEAD /readyz without a model: %d, %d bytes, Retry-After %q", resp.StatusCode, len(body), resp.Header.Get("Retry-After"))
	}

	c := p.client(t)
	v := trainStaged(t, base, c, 21)
	if res := must(c.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: v}))(t); res.StatusCode() != http.StatusOK {
		t.Fatalf("load: %d %s", res.StatusCode(), res.Body)
	}
	if status, nr := readyz(t, base); status != http.StatusOK {
		t.Fatalf("GET /readyz after a load: %d %+v, want 200", status, nr)
	}
	if resp, _ := send(t, http.MethodHead, base+"/readyz", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /readyz after a load: %d", resp.StatusCode)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sock.await(t, "STOPPING=1", 30*time.Second)
	// The server goes on serving for -shutdown-delay, not ready.
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, nr := readyz(t, base)
		if status == http.StatusServiceUnavailable && strings.Contains(strings.Join(nr.Reasons, "; "), "shutting down") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /readyz after SIGTERM: %d %+v, want 503 naming the shutdown", status, nr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp, _ := send(t, http.MethodGet, base+"/livez", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /livez while draining: %d, want 200", resp.StatusCode)
	}
	// A second signal cuts the delay short; the process exits.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the process did not exit after a second SIGTERM")
	}
}

// mkShortTemp is a temporary directory with a short path, removed after
// the test.
func mkShortTemp(t *testing.T) (string, error) {
	dir, err := os.MkdirTemp("", "rs-notify-*")
	if err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	return dir, err
}

// TestFleetIdempotentUploadCreatesOneJob: two replicas on one database
// get the same keyed upload at once; one job is created, and both answer
// 202 with it (after a retryable 409 IDEMPOTENCY_KEY_IN_USE at most).
// Both replicas give the model routes the same ETag.
func TestFleetIdempotentUploadCreatesOneJob(t *testing.T) {
	t.Parallel() // its own processes and database: runs beside the others
	url := pgtest.Database(t)
	fleet := startFleet(t, url, 2)
	csv, meta := syntheticCSV(t, 31, 40), []byte(goodMeta)
	const key = "fleet-retry-7c0e"
	ids := make(chan string, len(fleet))
	for _, p := range fleet {
		go func() {
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
				resp, body, err := tryKeyedUpload(p, key, csv, meta)
				if err != nil {
					t.Errorf("keyed upload to %s: %v", p.httpAddr, err)
					ids <- ""
					return
				}
				if resp.StatusCode == http.StatusAccepted {
					var acc gen.TrainingJobAccepted
					if err := json.Unmarshal(body, &acc); err != nil || resp.Header.Get("Location") != "/training/"+acc.JobId {
						t.Errorf("202 from %s: %v, Location %q: %s", p.httpAddr, err, resp.Header.Get("Location"), body)
					}
					ids <- acc.JobId
					return
				}
				if resp.StatusCode != http.StatusConflict || !bytes.Contains(body, []byte("IDEMPOTENCY_KEY_IN_USE")) || time.Now().After(deadline) {
					t.Errorf("keyed upload to %s: %d %s", p.httpAddr, resp.StatusCode, body)
					ids <- ""
					return
				}
			}
		}()
	}
	first, second := <-ids, <-ids
	if first == "" || first != second {
		t.Fatalf("the replicas answered jobs %q and %q, want one job", first, second)
	}
	if n := countRows(t, url, `SELECT count(*) FROM training_jobs`); n != 1 {
		t.Fatalf("%d jobs in the database after one keyed upload to two replicas", n)
	}
	job := waitJob(t, fleet[0].client(t), first, 3*time.Minute)
	if job.Status != gen.Done {
		t.Fatalf("the job ended %s", job.Status)
	}
	// Either replica may not have caught up with the staged model yet
	// (the job ran on one of them; the other learns of the commit by
	// notification, or by its poll): both are asked again until they
	// agree.
	tags := make([]string, len(fleet))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		for i, p := range fleet {
			resp, _ := send(t, http.MethodGet, "http://"+p.httpAddr+"/model/list", nil, nil)
			tags[i] = resp.Header.Get("ETag")
		}
		if tags[0] != "" && tags[0] == tags[1] {
			return
		}
		if time.Now().After(deadline) {
			_, list0 := send(t, http.MethodGet, "http://"+fleet[0].httpAddr+"/model/list", nil, nil)
			_, list1 := send(t, http.MethodGet, "http://"+fleet[1].httpAddr+"/model/list", nil, nil)
			t.Fatalf("the replicas' model lists carry ETags %q and %q 30 s after the job:\n%s\n%s", tags[0], tags[1], list0, list1)
		}
	}
}
