package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/gen"
	"ramanserve/trainer"
	"ramanserve/trainer/csvdata"
)

// streamedUpload is a training upload whose CSV part comes from a
// generator, sent with a plain client (the validating one buffers whole
// bodies, which an endless upload does not have).
type streamedUpload struct {
	status   int
	body     []byte
	err      error
	elapsed  time.Duration
	sent     atomic.Int64 // CSV bytes written so far
	finished atomic.Bool  // the generator wrote the whole body
}

// startUpload posts meta and the CSV that csv writes to base+/training/start
// and returns at once; done is closed when the answer (or an error) came.
func startUpload(ctx context.Context, base string, csv func(w io.Writer) error) (*streamedUpload, <-chan struct{}) {
	u := &streamedUpload{}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="meta"`)
			h.Set("Content-Type", "application/json")
			w, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			if _, err := w.Write([]byte(goodMeta)); err != nil {
				return err
			}
			if w, err = mw.CreateFormFile("csv", "training.csv"); err != nil {
				return err
			}
			if err := csv(countingWriter{w, &u.sent}); err != nil {
				return err
			}
			return mw.Close()
		}()
		if err == nil {
			u.finished.Store(true)
		}
		pw.CloseWithError(err)
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer pr.Close() // stops the generator once answered
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/training/start", pr)
		if err != nil {
			u.err = err
			return
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
		start := time.Now()
		resp, err := (&http.Client{}).Do(req)
		u.elapsed = time.Since(start)
		if err != nil {
			u.err = err
			return
		}
		u.status = resp.StatusCode
		u.body, u.err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if u.status >= 400 && u.err == nil {
			if err := validateErrorEnvelope(resp, u.body); err != nil {
				failed.Add(1)
				u.err = err
			} else {
				validated.Add(1)
			}
		}
	}()
	return u, done
}

// onesCSV writes the header and rows of 1-character cells ("1,1,1,..."):
// 2 bytes on the wire and 8 in the matrix each. rows < 0 never ends.
func onesCSV(prefix string, rows int) func(w io.Writer) error {
	return func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		bw.WriteString(strings.Join(csvdata.Header(trainer.NumWavenumbers), ",") + "\n")
		cells := strings.Repeat(",1", trainer.NumWavenumbers+3) + "\n"
		for i := 0; rows < 0 || i < rows; i++ {
			bw.WriteString(prefix + strconv.Itoa(i))
			if _, err := bw.WriteString(cells); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
}

// TestFullQueueRefusesUploadWhileSending: with -training-queue 1 the
// running slot and the waiting slot are held by two uploads that stall
// after their first rows; a third upload, whose client keeps sending a
// body that never ends, gets 429 TRAINING_QUEUE_FULL while it is still
// sending (typically within a few milliseconds), with Retry-After, and
// its body is not parsed.
func TestFullQueueRefusesUploadWhileSending(t *testing.T) {
	p := startProcess(t, t.TempDir(), "-training-queue", "1")
	base := "http://" + p.httpAddr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	stalled := func(w io.Writer) error {
		if err := onesCSV("held-", 3)(w); err != nil {
			return err
		}
		<-release // the upload stays open, holding its slot
		return io.ErrClosedPipe
	}
	var holders []*streamedUpload
	for i := 0; i < 2; i++ {
		u, _ := startUpload(ctx, base, stalled)
		holders = append(holders, u)
	}
	// Both holders have sent their first rows, so their handlers run.
	deadline := time.Now().Add(10 * time.Second)
	for holders[0].sent.Load() == 0 || holders[1].sent.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the holding uploads did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)

	u, done := startUpload(ctx, base, onesCSV("endless-", -1))
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a margin for a machine busy with a second make test
		t.Fatalf("no answer 10 s into an endless upload (%d bytes sent)", u.sent.Load())
	}
	if u.err != nil {
		t.Fatal(u.err)
	}
	var e gen.ErrorResponse
	json.Unmarshal(u.body, &e)
	if u.status != http.StatusTooManyRequests || e.Code != "TRAINING_QUEUE_FULL" {
		t.Fatalf("got %d %s %q, want 429 TRAINING_QUEUE_FULL", u.status, e.Code, e.Message)
	}
	t.Logf("429 after %v, %d bytes of the endless body sent", u.elapsed, u.sent.Load())
	if u.finished.Load() {
		t.Error("the endless body finished?")
	}
	for i, h := range holders {
		if h.status != 0 {
			t.Errorf("holding upload %d was answered %d: %s", i, h.status, h.body)
		}
	}
}

// trainingSideOnly shrinks the prediction channel's connection memory
// bound (which the server adds to its Go soft memory limit) to 3 MiB, so
// that the tests below measure the training side's promise alone: peak RSS
// under the training budget plus its overhead.
var trainingSideOnly = []string{"-max-connections", "16", "-max-partial-bytes", strconv.Itoa(1 << 20)}

// budgetOverhead is app.TrainingMemoryOverhead: peak RSS must stay
// under the budget plus this.
const budgetOverhead = app.TrainingMemoryOverhead

// TestConcurrentUploadsStayInBudget: four concurrent uploads of
// 1-character cells, each of which alone needs more than the training
// memory budget (64 MiB; the four matrices would be about 260 MB, so
// without the budget the test fails on RSS), against a real process.
// RAMAN_BENCH_UPLOAD_BUDGET=1 (make bench) runs the full size: four 100 MB
// uploads against a 1 GiB budget, printing peak RSS. Those that cross the
// budget get 413 PAYLOAD_TOO_LARGE (their own data set crossed it) or 503
// SERVER_BUSY (the others held the room), naming it, while their client is
// still sending, and the server's peak
// RSS (VmHWM) stays under the budget plus the documented overhead.
func TestConcurrentUploadsStayInBudget(t *testing.T) {
	// Each upload alone crosses the budget: all four must be refused.
	budget := int64(64 << 20)
	rows := 4000 // 16 MB on the wire, 66 MB of matrix, per upload
	bench := os.Getenv("RAMAN_BENCH_UPLOAD_BUDGET") == "1"
	if bench {
		// make bench: four 100 MB uploads (400 MB of matrix each) against
		// a 1 GiB budget, which one of them alone would fit.
		budget, rows = 1<<30, 24500
	}
	p := startProcess(t, t.TempDir(), append(trainingSideOnly, "-max-training-memory", strconv.FormatInt(budget, 10),
		"-max-upload-bytes", strconv.Itoa(1<<30))...)
	pid := p.cmd.Process.Pid
	base := "http://" + p.httpAddr
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	uploads := make([]*streamedUpload, 4)
	var wg sync.WaitGroup
	for i := range uploads {
		u, done := startUpload(ctx, base, onesCSV(fmt.Sprintf("u%d-", i), rows))
		uploads[i] = u
		wg.Add(1)
		go func() { defer wg.Done(); <-done }()
	}
	wg.Wait()
	refused := 0
	for i, u := range uploads {
		if u.err != nil {
			t.Fatalf("upload %d after %v, %d bytes sent: %v", i, u.elapsed, u.sent.Load(), u.err)
		}
		var e gen.ErrorResponse
		json.Unmarshal(u.body, &e)
		switch u.status {
		case http.StatusAccepted:
		case http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable:
			// 413 when its own data set crossed the budget, 503 (retryable)
			// when the others' held the room it needed.
			refused++
			want := map[int]string{http.StatusRequestEntityTooLarge: "PAYLOAD_TOO_LARGE", http.StatusServiceUnavailable: "SERVER_BUSY"}[u.status]
			if e.Code != want || !strings.Contains(e.Message, "-max-training-memory") || !strings.Contains(e.Message, strconv.FormatInt(budget, 10)) {
				t.Errorf("upload %d: %d %s %q, want %s naming the budget", i, u.status, e.Code, e.Message, want)
			}
			if u.finished.Load() {
				t.Errorf("upload %d was refused only after its whole body (%d bytes) was sent", i, u.sent.Load())
			}
		default:
			t.Errorf("upload %d: %d %s", i, u.status, u.body)
		}
	}
	if !bench && refused != len(uploads) {
		t.Errorf("%d of %d uploads refused; each alone crosses the budget", refused, len(uploads))
	}
	hwm := rss(t, pid, "VmHWM")
	var sent int64
	for _, u := range uploads {
		sent += u.sent.Load()
	}
	fmt.Printf("upload budget: 4 uploads of %d rows (%.0f MB each on the wire, %.0f MB sent in all), %d refused 413 or 503; budget %d MiB + overhead %d MiB; peak RSS %.0f MiB\n",
		rows, float64(rows)*float64(2*(trainer.NumWavenumbers+4))/1e6, float64(sent)/1e6, refused, budget>>20, budgetOverhead>>20, float64(hwm)/(1<<20))
	if hwm >= budget+budgetOverhead {
		t.Errorf("peak RSS %d MiB, over the budget %d MiB plus overhead %d MiB", hwm>>20, budget>>20, budgetOverhead>>20)
	}
}

// TestReadOnlyRegistryKeepsFailureReason: the registry turns read-only (a
// read-only bind mount over it, so that it holds even for root) while a job
// trains. The job fails publishing its model; GET /training/{id} reports
// the real reason at once although the record on disk still reads running,
// and once the registry is writable again the record is written with that
// reason. Needs root (mount); skipped otherwise.
func TestReadOnlyRegistryKeepsFailureReason(t *testing.T) {
	// Not parallel: mounts are the machine's, and a remount beside
	// another test's mount can fail busy.
	if os.Geteuid() != 0 {
		t.Skip("needs root to bind-mount the registry read-only")
	}
	dir := t.TempDir()
	p := startProcess(t, dir)
	c := p.client(t)
	resp, body := multipartUpload(t, "http://"+p.httpAddr, bytes.NewReader(syntheticCSV(t, 61, 1500)), []byte(goodMeta))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	var acc gen.TrainingJobAccepted
	json.Unmarshal(body, &acc)
	for deadline := time.Now().Add(60 * time.Second); ; {
		job := must(c.GetTrainingJobWithResponse(context.Background(), acc.JobId))(t).JSON200
		if job.Status == gen.Running {
			break
		}
		if job.Status != gen.Queued || time.Now().After(deadline) {
			t.Fatalf("job did not start: %+v", job)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out, err := exec.Command("mount", "--bind", dir, dir).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount (%v: %s)", err, out)
	}
	mounted := true
	unmount := func() {
		if mounted {
			if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
				t.Errorf("umount: %v: %s", err, out)
			}
			mounted = false
		}
	}
	defer unmount()
	if out, err := exec.Command("mount", "-o", "remount,ro,bind", dir).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	job := waitJob(t, c, acc.JobId, 60*time.Second)
	if job.Status != gen.Failed || job.Error == nil || !strings.Contains(job.Error.Message, "read-only") {
		t.Fatalf("job on a read-only registry: %+v %+v", job, job.Error)
	}
	recordPath := filepath.Join(dir, "jobs", acc.JobId+".json")
	readStatus := func() (string, string) {
		b, _ := os.ReadFile(recordPath)
		var j struct {
			Status string `json:"status"`
			Error  *struct{ Message string }
		}
		json.Unmarshal(b, &j)
		if j.Error == nil {
			return j.Status, ""
		}
		return j.Status, j.Error.Message
	}
	if st, _ := readStatus(); st != "running" {
		t.Fatalf("record on the read-only registry reads %q", st)
	}
	unmount()
	for deadline := time.Now().Add(20 * time.Second); ; {
		st, msg := readStatus()
		if st == "failed" {
			if msg != job.Error.Message {
				t.Fatalf("record written with %q, want the reported %q", msg, job.Error.Message)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("record still %q 20 s after the registry became writable", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTrainingStaysInBudget: a 2000 x 2048 job (33 MB of matrix; training
// copies it once per parallel fit) trained under a 100 MB budget, which
// holds the data set and one fit but not a second: the job is done and
// the server's peak RSS stays under the budget plus the overhead.
func TestTrainingStaysInBudget(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	longProcessTest(t)
	const budget = 100_000_000
	p := startProcess(t, t.TempDir(), append(trainingSideOnly, "-max-training-memory", strconv.Itoa(budget))...)
	resp, body := multipartUpload(t, "http://"+p.httpAddr, bytes.NewReader(syntheticCSV(t, 5, 2000)), []byte(goodMeta))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	var acc gen.TrainingJobAccepted
	json.Unmarshal(body, &acc)
	if j := waitJob(t, p.client(t), acc.JobId, 120*time.Second); j.Status != gen.Done {
		t.Fatalf("job: %+v %+v", j, j.Error)
	}
	if hwm := rss(t, p.cmd.Process.Pid, "VmHWM"); hwm >= budget+budgetOverhead {
		t.Errorf("peak RSS %d MiB, over the budget %d MiB plus overhead %d MiB", hwm>>20, budget>>20, budgetOverhead>>20)
	}
}

// tricklingUpload opens a training upload on a raw connection, sends its
// headers, the meta part and the start of the csv part, then one byte
// every 250 ms (4 bytes/s: inside the idle limit for ever) until the test
// ends or the server answers.
func tricklingUpload(t *testing.T, httpAddr string) net.Conn {
	t.Helper()
	conn := stalledUpload(t, httpAddr)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			if _, err := conn.Write([]byte("1")); err != nil {
				return
			}
		}
	}()
	return conn
}

// TestTricklingUploadsFreeTheirSlots: with -training-queue 1 two uploads
// trickling a byte every 250 ms hold both training places; a third upload
// is refused 429 with a message naming two uploads in progress (not
// waiting jobs). Below the 2000 bytes/s floor, once the 2 s grace has
// passed, each trickler is answered 408 REQUEST_TIMEOUT naming the rate,
// and a new upload is accepted: the places are free again. Without the
// floor they would hold the places for as long as they liked.
func TestTricklingUploadsFreeTheirSlots(t *testing.T) {
	t.Parallel() // a process of its own
	p := startProcess(t, t.TempDir(), "-training-queue", "1", "-upload-min-rate", "2000", "-upload-rate-grace", "2s")
	start := time.Now()
	tricklers := []net.Conn{tricklingUpload(t, p.httpAddr), tricklingUpload(t, p.httpAddr)}
	time.Sleep(300 * time.Millisecond) // both handlers hold their places

	resp, body := multipartUpload(t, "http://"+p.httpAddr, bytes.NewReader(syntheticCSV(t, 3, 20)), []byte(goodMeta))
	e := errorCode(t, body)
	if resp.StatusCode != http.StatusTooManyRequests || e.Code != "TRAINING_QUEUE_FULL" ||
		!strings.Contains(e.Message, "2 uploads in progress") || strings.Contains(e.Message, "jobs are waiting") {
		t.Fatalf("third upload: %d %s %q, want 429 naming 2 uploads in progress", resp.StatusCode, e.Code, e.Message)
	}

	for i, conn := range tricklers {
		conn.SetReadDeadline(time.Now().Add(25 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("trickling upload %d got no answer: %v", i, err)
		}
		took := time.Since(start)
		b, _ := io.ReadAll(resp.Body)
		if err := validateErrorEnvelope(resp, b); err != nil {
			failed.Add(1)
			t.Fatal(err)
		}
		validated.Add(1)
		e := errorCode(t, b)
		if resp.StatusCode != http.StatusRequestTimeout || e.Code != "REQUEST_TIMEOUT" || !strings.Contains(e.Message, "2000 bytes/s") {
			t.Fatalf("trickling upload %d: %d %s %q, want 408 REQUEST_TIMEOUT naming the rate", i, resp.StatusCode, e.Code, e.Message)
		}
		// The floor's deadline is about 3 s in (2 s grace, ~2 KB sent
		// first); 20 s is a margin for a loaded machine (10 s was
		// exceeded beside a second make test), below the 30 s idle limit
		// a trickler otherwise never reaches.
		if took > 20*time.Second {
			t.Errorf("trickling upload %d answered %v after it started", i, took)
		}
	}
	submitJob(t, p, 4, 20) // a place is free again: 202
}
