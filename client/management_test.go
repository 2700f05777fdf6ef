package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
)

// TestTrainingBodyLeavesOutNilParts: a body without its csv part is
// refused with MISSING_PART, read back as *client.Error.
func TestTrainingBodyLeavesOutNilParts(t *testing.T) {
	m, err := client.NewManagement(managementURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	contentType, body := client.TrainingBody([]byte(`{"operator":"x"}`), nil)
	defer body.Close()
	res, err := m.StartTrainingWithBodyWithResponse(context.Background(), nil, contentType, body)
	if err != nil {
		t.Fatal(err)
	}
	var ce *client.Error
	if err := client.HTTPError(res.HTTPResponse, res.Body); !errors.As(err, &ce) || ce.Code != "MISSING_PART" || ce.Status != 400 || ce.Retryable {
		t.Fatalf("body without csv: %v", err)
	}
}

// TestStartTrainingReportsTheReadersError: the CSV is streamed, so a
// reader that fails mid-way fails the upload instead of sending half a
// data set as a whole one.
func TestStartTrainingReportsTheReadersError(t *testing.T) {
	m, err := client.NewManagement(managementURL)
	if err != nil {
		t.Fatal(err)
	}
	csv := &failingReader{r: strings.NewReader("scan_id,wn_0\n1,2\n")}
	if _, err := m.StartTraining(context.Background(), gen.TrainingMeta{Operator: "t"}, csv); err == nil {
		t.Fatal("an upload whose reader failed was accepted")
	}
}

type failingReader struct{ r *strings.Reader }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, errors.New("disk read failed")
	}
	return f.r.Read(p)
}

// TestStartTrainingLeavesTheReaderWhenItReturns: a server may answer an
// upload before it has read the body (429 when its queue is full). The
// caller owns csv again once StartTraining returns (closes the file,
// reuses the buffer), so no Read of csv may run after that.
func TestStartTrainingLeavesTheReaderWhenItReturns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answer at once: net/http would otherwise read up to 256 KiB of
		// the unread body before it writes the answer.
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"code":"SERVER_BUSY","message":"queue full","retryable":true}`))
	}))
	defer srv.Close()
	m, err := client.NewManagement(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	csv := &endlessCSV{}
	_, err = m.StartTraining(context.Background(), gen.TrainingMeta{Operator: "t"}, csv)
	csv.returned.Store(true)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "SERVER_BUSY" || ce.Status != http.StatusTooManyRequests || !ce.Retryable {
		t.Fatalf("early 429: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // let a straggling Read show itself
	if n := csv.readsAfterReturn.Load(); n != 0 {
		t.Fatalf("%d Reads of csv ran after StartTraining returned", n)
	}
}

// endlessCSV is a slow, endless CSV: each Read takes 20 ms. It counts the
// Reads that were running when (or began after) StartTraining returned.
type endlessCSV struct {
	returned         atomic.Bool
	readsAfterReturn atomic.Int64
}

func (c *endlessCSV) Read(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	if c.returned.Load() {
		c.readsAfterReturn.Add(1)
	}
	return copy(p, "1,2.5\n"), nil
}

// A proxy's or gateway's own answer carries no envelope: its status alone
// says whether a retry may help.
func TestHTTPErrorWithoutEnvelope(t *testing.T) {
	for _, c := range []struct {
		status    int
		retryable bool
	}{{429, true}, {502, true}, {503, true}, {504, true}, {500, false}, {404, false}, {400, false}} {
		resp := &http.Response{StatusCode: c.status}
		err := client.HTTPError(resp, []byte("<html>bad gateway</html>"))
		var ce *client.Error
		if !errors.As(err, &ce) {
			t.Fatalf("%d: got %v, want *client.Error", c.status, err)
		}
		if ce.Retryable != c.retryable || ce.Status != c.status || ce.Code != fmt.Sprintf("HTTP_%d", c.status) {
			t.Errorf("%d: got %+v, want retryable %v", c.status, ce, c.retryable)
		}
	}
}

// TestStartTrainingWithAnIdempotencyKey: a retry with the same key and
// upload gets the first job; the same key with another upload is refused
// as IDEMPOTENCY_KEY_REUSED.
func TestStartTrainingWithAnIdempotencyKey(t *testing.T) {
	m, err := client.NewManagement(managementURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := fmt.Sprintf("client-test-%d", time.Now().UnixNano())
	meta := gen.TrainingMeta{Operator: "retry"}
	first, err := m.StartTraining(ctx, meta, syntheticCSV(ctx, 41), client.IdempotencyKey(key))
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.StartTraining(ctx, meta, syntheticCSV(ctx, 41), client.IdempotencyKey(key))
	if err != nil || again.JobId != first.JobId {
		t.Fatalf("the retry: %+v, %v; want job %s", again, err, first.JobId)
	}
	var ce *client.Error
	if _, err := m.StartTraining(ctx, meta, syntheticCSV(ctx, 42), client.IdempotencyKey(key)); !errors.As(err, &ce) || ce.Code != "IDEMPOTENCY_KEY_REUSED" || ce.Status != http.StatusUnprocessableEntity {
		t.Fatalf("another upload with the key: %v", err)
	}
}
