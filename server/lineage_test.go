package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"ramanserve/gen"
	"ramanserve/service/training"
	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
	"ramanserve/trainer/synth"
)

// recordingTraining keeps the CSV checksum of the upload it is handed.
type recordingTraining struct {
	quietTraining
	sum chan string
}

func (r recordingTraining) Reserve(context.Context) (training.Upload, error) {
	return recordingUpload(r), nil
}

type recordingUpload recordingTraining

func (recordingUpload) TryAcquire(int64) bool { return true }
func (recordingUpload) Release()              {}
func (u recordingUpload) Submit(_ context.Context, _ *trainer.Dataset, meta jobs.Meta, _ training.Once) (jobs.Job, error) {
	u.sum <- meta.CSVSHA256
	return jobs.Job{ID: "j"}, nil
}

// TestTrainingCSVChecksumIsOfTheBytesAsUploaded: the lineage's
// training_csv_sha256 is the SHA-256 of the csv part byte for byte, not of
// what the parser kept of it: a BOM, CRLF line ends and blank lines after
// the last row are all in it.
func TestTrainingCSVChecksumIsOfTheBytesAsUploaded(t *testing.T) {
	var plain bytes.Buffer
	if err := synth.New(synth.Config{Seed: 3}).WriteCSV(context.Background(), &plain, 12); err != nil {
		t.Fatal(err)
	}
	variants := map[string][]byte{
		"plain": plain.Bytes(),
		"bom, crlf, trailing blank lines": append(append([]byte("\xef\xbb\xbf"),
			bytes.ReplaceAll(plain.Bytes(), []byte("\n"), []byte("\r\n"))...), "\r\n\r\n\n"...),
	}
	for name, csv := range variants {
		t.Run(name, func(t *testing.T) {
			svc := recordingTraining{sum: make(chan string, 1)}
			h, err := NewHTTPHandler(&API{Training: svc}, HTTPConfig{}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			meta, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Disposition": {`form-data; name="meta"`}, "Content-Type": {"application/json"}})
			io.WriteString(meta, `{"operator":"op"}`)
			part, _ := mw.CreateFormFile("csv", "t.csv")
			part.Write(csv)
			mw.Close()
			resp, err := http.Post(srv.URL+"/training/start", mw.FormDataContentType(), &body)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("upload: %d %s", resp.StatusCode, got)
			}
			want := sha256.Sum256(csv)
			if sum := <-svc.sum; sum != hex.EncodeToString(want[:]) {
				t.Fatalf("csv sha256 %s, want %s (of the %d bytes uploaded)", sum, hex.EncodeToString(want[:]), len(csv))
			}
		})
	}
}

// TestTrainingListQueryErrors: a query parameter that cannot be read
// (not an integer, given twice) is 400 INVALID_REQUEST naming it, as the
// contract says, never MALFORMED_JSON: GET /training has no body.
func TestTrainingListQueryErrors(t *testing.T) {
	h, err := newHTTPHandler(&API{Training: quietTraining{}}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, q := range []string{"limit=abc", "limit=1.5", "limit=1&limit=2", "status=done&status=failed"} {
		resp, err := http.Get(srv.URL + "/training?" + q)
		if err != nil {
			t.Fatal(err)
		}
		var e gen.ErrorResponse
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		name, _, _ := strings.Cut(q, "=")
		if resp.StatusCode != http.StatusBadRequest || e.Code != "INVALID_REQUEST" || !strings.Contains(e.Message, name) || strings.Contains(e.Message, "body") {
			t.Errorf("GET /training?%s: %d %s %q, want 400 INVALID_REQUEST naming %s", q, resp.StatusCode, e.Code, e.Message, name)
		}
	}
}

// TestPathsOutsideTheContractAreNotFound: a path the contract does not
// have is 404 NOT_FOUND even where the router would take the rest of it
// for a parameter (/model/a/b as version "a/b"): no handler sees a value
// the contract's pattern was never checked against.
func TestPathsOutsideTheContractAreNotFound(t *testing.T) {
	h, err := newHTTPHandler(&API{Training: quietTraining{}}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, mp := range [][2]string{
		{"GET", "/model/a/b"}, {"DELETE", "/model/list/"}, {"GET", "/model/x/"}, {"DELETE", "/model/" + strings.Repeat("a", 80) + "/"},
		{"GET", "/training/a/b"}, {"POST", "/training/a/b/cancel"},
	} {
		req, _ := http.NewRequest(mp[0], srv.URL+mp[1], nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e gen.ErrorResponse
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || e.Code != "NOT_FOUND" {
			t.Errorf("%s %s: %d %s %q, want 404 NOT_FOUND", mp[0], mp[1], resp.StatusCode, e.Code, e.Message)
		}
	}
}
