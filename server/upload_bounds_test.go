package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/service/training"
	"ramanserve/trainer"
	"ramanserve/trainer/csvdata"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/jobs/jobfiles"
	"ramanserve/trainer/membudget"
)

// Training uploads against a real job manager over real TCP: the rate
// floor that frees a slot held by a trickling client, and the memory
// budget's two refusals.

// trainingServer serves the management API on a loopback port with a job
// manager of queue places queue+1 and the given budget (nil: none).
func trainingServer(t *testing.T, cfg HTTPConfig, queue int, budget *membudget.Budget) (*httptest.Server, *jobs.Manager) {
	t.Helper()
	files, err := jobfiles.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := jobs.New(context.Background(), files, files, jobs.Options{
		QueueSize: queue, Budget: budget,
		Publish: func(context.Context, *trainer.Result, jobs.Lineage) (string, string, error) {
			return "", "", errors.New("not publishing in this test")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	h, err := NewHTTPHandler(&API{Training: training.New(m, nil)}, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, m
}

// onesUpload is a multipart upload (meta, then a csv of rows rows of
// 1-character cells) and its Content-Type.
func onesUpload(rows int) ([]byte, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="meta"`)
	h.Set("Content-Type", "application/json")
	w, _ := mw.CreatePart(h)
	w.Write([]byte(`{"operator":"op-1"}`))
	w, _ = mw.CreateFormFile("csv", "t.csv")
	io.WriteString(w, strings.Join(csvdata.Header(trainer.NumWavenumbers), ",")+"\n")
	cells := strings.Repeat(",1", trainer.NumWavenumbers+3) + "\n"
	for i := 0; i < rows; i++ {
		io.WriteString(w, "s"+strconv.Itoa(i)+cells)
	}
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

func decodeError(t *testing.T, b []byte) gen.ErrorResponse {
	t.Helper()
	var e gen.ErrorResponse
	if err := json.Unmarshal(b, &e); err != nil || e.Retryable == nil {
		t.Fatalf("not an error envelope: %v: %s", err, b)
	}
	return e
}

// waitSlotsTaken waits until every queue place is taken (Reserve fails).
func waitSlotsTaken(t *testing.T, m *jobs.Manager) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		r, err := m.Reserve(context.Background())
		if err != nil {
			return
		}
		r.Release()
		if time.Now().After(deadline) {
			t.Fatal("the upload never took its queue place")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTricklingUploadLosesItsSlot: an upload that sends a few bytes every
// 200 ms (far below a 1000 bytes/s floor, but well inside the 30 s idle
// limit) is answered 408 REQUEST_TIMEOUT naming the rate soon after the
// 1 s grace, and its queue place is free again.
func TestTricklingUploadLosesItsSlot(t *testing.T) {
	const grace = time.Second
	srv, m := trainingServer(t, HTTPConfig{UploadMinRate: 1000, UploadRateGrace: grace}, 1, nil)
	held, err := m.Reserve(context.Background()) // one of the two places
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()

	body, ctype := onesUpload(20)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /training/start HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", ctype, len(body))
	conn.Write(body[:300]) // meta and the start of the csv part
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 300; i < len(body); i += 2 {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := conn.Write(body[i : i+2]); err != nil {
				return
			}
		}
	}()
	waitSlotsTaken(t, m)

	conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickling upload: %v", err)
	}
	took := time.Since(start)
	b, _ := io.ReadAll(resp.Body)
	e := decodeError(t, b)
	if resp.StatusCode != http.StatusRequestTimeout || e.Code != "REQUEST_TIMEOUT" ||
		!strings.Contains(e.Message, "1000 bytes/s") || !strings.Contains(e.Message, "-upload-min-rate") {
		t.Fatalf("got %d %s %q, want 408 REQUEST_TIMEOUT naming the rate", resp.StatusCode, e.Code, e.Message)
	}
	// Generous margins: the floor's deadline here is about 1.3 s.
	if took < grace || took > grace+4*time.Second {
		t.Errorf("answered after %v, want soon after the %v grace", took, grace)
	}
	r, err := m.Reserve(context.Background())
	if err != nil {
		t.Fatalf("the cut upload's place is still taken: %v", err)
	}
	r.Release()
}

// slowReader hands out its bytes chunk by chunk, pausing between chunks.
type slowReader struct {
	b     []byte
	chunk int
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	time.Sleep(s.pause)
	n := copy(p[:min(len(p), s.chunk)], s.b)
	s.b = s.b[n:]
	return n, nil
}

// TestUploadAboveTheFloorIsAccepted: an upload that takes about 3 s, three
// times the grace, at about 10 times the floor, is accepted (202): the
// floor counts the bytes received, not only the time.
func TestUploadAboveTheFloorIsAccepted(t *testing.T) {
	t.Parallel() // waits on its own server's timers: runs beside the others
	srv, _ := trainingServer(t, HTTPConfig{UploadMinRate: 2000, UploadRateGrace: time.Second}, 1, nil)
	body, ctype := onesUpload(14) // about 60 KB
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/training/start", &slowReader{b: body, chunk: 1000, pause: 50 * time.Millisecond})
	req.Header.Set("Content-Type", ctype)
	req.ContentLength = int64(len(body))
	start := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("got %d %s after %v", resp.StatusCode, b, time.Since(start))
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("the upload took only %v: it does not outlast the grace, so proves nothing", took)
	}
}

// TestMemoryBudgetHeldByOthersIsRetryable: the budget holds 1.5 blocks of
// rows. While another holder has one block of it, an upload is refused
// 503 SERVER_BUSY, retryable, with Retry-After: it would fit alone. Once
// the budget is free, an upload of two blocks is refused 413
// PAYLOAD_TOO_LARGE, not retryable: it can never fit.
func TestMemoryBudgetHeldByOthersIsRetryable(t *testing.T) {
	block := 128 * trainer.ChargePerRow(trainer.NumWavenumbers, 3)
	budget := membudget.New(block * 3 / 2)
	srv, m := trainingServer(t, HTTPConfig{}, 2, budget)
	post := func(rows int) (*http.Response, gen.ErrorResponse) {
		body, ctype := onesUpload(rows)
		resp, err := http.Post(srv.URL+"/training/start", ctype, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, decodeError(t, b)
	}

	other, err := m.Reserve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !other.TryAcquire(block) {
		t.Fatal("the other holder's charge was refused")
	}
	resp, e := post(20)
	if resp.StatusCode != http.StatusServiceUnavailable || e.Code != "SERVER_BUSY" || !*e.Retryable ||
		resp.Header.Get("Retry-After") == "" || !strings.Contains(e.Message, "-max-training-memory") {
		t.Fatalf("budget held by others: %d %s retryable %v Retry-After %q %q", resp.StatusCode, e.Code, *e.Retryable, resp.Header.Get("Retry-After"), e.Message)
	}
	other.Release()

	resp, e = post(200)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Code != "PAYLOAD_TOO_LARGE" || *e.Retryable ||
		!strings.Contains(e.Message, "-max-training-memory") {
		t.Fatalf("data set larger than the budget: %d %s retryable %v %q", resp.StatusCode, e.Code, *e.Retryable, e.Message)
	}
	if budget.Used() != 0 {
		t.Errorf("%d bytes still charged after both refusals", budget.Used())
	}
}
