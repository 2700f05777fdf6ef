package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/platform/atomicfile"
	"ramanserve/server"
	"ramanserve/trainer"
	"ramanserve/trainer/csvdata"
	"ramanserve/trainer/synth"
)

// csvRows builds a small valid training CSV as rows of fields (header
// first), for tests to break one cell at a time.
func csvRows(n int) [][]string {
	rows := [][]string{csvdata.Header(trainer.NumWavenumbers)}
	g := synth.New(synth.Config{Seed: 5})
	for i := 0; i < n; i++ {
		s := g.Next()
		row := []string{fmt.Sprintf("scan-%03d", i)}
		for _, v := range s.Intensities {
			row = append(row, strconv.FormatFloat(v, 'g', 8, 64))
		}
		for _, c := range s.Conc {
			row = append(row, strconv.FormatFloat(c, 'g', 8, 64))
		}
		rows = append(rows, row)
	}
	return rows
}

func renderCSV(rows [][]string) []byte {
	var b bytes.Buffer
	for _, r := range rows {
		b.WriteString(strings.Join(r, ","))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

const goodMeta = `{"operator":"op-17","source_batches":["B-1"],"notes":"conformance"}`

func TestTrainingRejectsBadCSV(t *testing.T) {
	const n = 14 // above trainer.MinRows(10)
	// Field indexes are 0-based, CSV columns 1-based: scan_id is index 0
	// and column 1, the last wavenumber index lastWN and column lastWN+1.
	lastWN := trainer.NumWavenumbers
	cases := []struct {
		name  string
		edit  func([][]string) [][]string
		where []string // substrings the message must contain
	}{
		{"header order", func(r [][]string) [][]string { r[0][2], r[0][3] = r[0][3], r[0][2]; return r }, []string{"line 1", "column 3"}},
		{"header name", func(r [][]string) [][]string { r[0][lastWN+1] = "EPA"; return r }, []string{"line 1", fmt.Sprintf("column %d", lastWN+2)}},
		{"field count", func(r [][]string) [][]string { r[3] = r[3][:len(r[3])-1]; return r }, []string{"line 4"}},
		{"non-numeric cell", func(r [][]string) [][]string { r[2][5] = "abc"; return r }, []string{"line 3", "column 6"}},
		{"NaN", func(r [][]string) [][]string { r[4][10] = "NaN"; return r }, []string{"line 5", "column 11"}},
		{"Inf", func(r [][]string) [][]string { r[4][11] = "+Inf"; return r }, []string{"line 5", "column 12"}},
		{"missing label", func(r [][]string) [][]string { r[5][lastWN+1] = ""; return r }, []string{"line 6", fmt.Sprintf("column %d", lastWN+2)}},
		{"negative concentration", func(r [][]string) [][]string { r[6][lastWN+2] = "-0.5"; return r }, []string{"line 7", fmt.Sprintf("column %d", lastWN+3)}},
		{"duplicate scan_id", func(r [][]string) [][]string { r[8][0] = r[2][0]; return r }, []string{"line 9", "column 1", r0(2)}},
		{"too few rows", func(r [][]string) [][]string { return r[:6] }, []string{"rows"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := multipartUpload(t, suite.httpBase, bytes.NewReader(renderCSV(tc.edit(csvRows(n)))), []byte(goodMeta))
			e := errorCode(t, body)
			if resp.StatusCode != 400 || e.Code != "INVALID_CSV" {
				t.Fatalf("got %d %s %s, want 400 INVALID_CSV", resp.StatusCode, e.Code, e.Message)
			}
			for _, w := range tc.where {
				if !strings.Contains(e.Message, w) {
					t.Errorf("message %q does not contain %q", e.Message, w)
				}
			}
		})
	}
}

func r0(i int) string { return fmt.Sprintf("scan-%03d", i-1) }

func TestTrainingRejectsBadUpload(t *testing.T) {
	good := renderCSV(csvRows(14))
	cases := []struct {
		name       string
		csv        []byte
		meta       []byte
		code       string
		msgContain string
	}{
		{"meta without operator", good, []byte(`{"notes":"x"}`), "INVALID_METADATA", "operator"},
		{"meta not JSON", good, []byte(`{operator`), "INVALID_METADATA", "JSON"},
		{"meta wrong type", good, []byte(`{"operator":"a","source_batches":"B-1"}`), "INVALID_METADATA", "source_batches"},
		{"no meta part", good, nil, "MISSING_PART", "meta"},
		{"no csv part", nil, []byte(goodMeta), "MISSING_PART", "csv"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var csv io.Reader
			if tc.csv != nil {
				csv = bytes.NewReader(tc.csv)
			}
			resp, body := multipartUpload(t, suite.httpBase, csv, tc.meta)
			e := errorCode(t, body)
			if resp.StatusCode != 400 || e.Code != tc.code || !strings.Contains(e.Message, tc.msgContain) {
				t.Fatalf("got %d %s %q, want 400 %s mentioning %q", resp.StatusCode, e.Code, e.Message, tc.code, tc.msgContain)
			}
		})
	}
}

// TestTrainingUploadLimit: an upload over the configured limit gets 413
// PAYLOAD_TOO_LARGE.
func TestTrainingUploadLimit(t *testing.T) {
	needInProcess(t)
	proc, err := app.Start(context.Background(), app.Config{
		HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: t.TempDir(),
		HTTP:   server.HTTPConfig{MaxUploadBytes: 256 << 10},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Shutdown(context.Background())
	csv := renderCSV(csvRows(20)) // about 400 KB
	resp, body := multipartUpload(t, "http://"+proc.HTTPAddr(), bytes.NewReader(csv), []byte(goodMeta))
	e := errorCode(t, body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || e.Code != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("got %d %s %s", resp.StatusCode, e.Code, e.Message)
	}
}

// TestTrainingJobLifecycle trains a model end to end and checks what the
// job and the registry report.
func TestTrainingJobLifecycle(t *testing.T) {
	a, _ := twoModels(t)
	list := must(api(t).ListModelsWithResponse(context.Background(), nil))(t).JSON200
	var entry *gen.ModelVersion
	for i := range list.Models {
		if list.Models[i].Version == a {
			entry = &list.Models[i]
		}
	}
	if entry == nil || entry.Algorithm == nil || *entry.Algorithm != "PLS2-NIPALS" || entry.TrainedSamples == nil || *entry.TrainedSamples != trainingSamples {
		t.Fatalf("registry entry of the trained model: %+v", entry)
	}
	info := must(api(t).GetModelInfoWithResponse(context.Background(), nil))(t).JSON200
	if info == nil || info.ActiveVersion != a || info.LatentComponents == nil || *info.LatentComponents < 1 ||
		info.WavenumberCount == nil || *info.WavenumberCount != trainer.NumWavenumbers || info.R2 == nil || info.R2.EPA == nil {
		t.Fatalf("model info: %+v", info)
	}
	if *info.R2.EPA < 0.9 {
		t.Errorf("cross-validated R2 for EPA = %.3f, want >= 0.9 on synthetic data", *info.R2.EPA)
	}
}

// TestTrainingInterruptedByKill: kill -9 while a job runs, restart. The job
// reads failed with INTERRUPTED, no partial model is listed, and the
// previously active model is served again.
func TestTrainingInterruptedByKill(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	dir := t.TempDir()
	p := startProcess(t, dir)
	c := p.client(t)
	base := "http://" + p.httpAddr
	active := trainStaged(t, base, c, 31)
	loadVersion(t, c, active)

	// A larger set, so the job is still running when it is killed.
	resp, body := multipartUpload(t, base, bytes.NewReader(syntheticCSV(t, 32, 1500)), []byte(goodMeta))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	var acc gen.TrainingJobAccepted
	json.Unmarshal(body, &acc)
	deadline := time.Now().Add(60 * time.Second)
	var seen float64 // the progress the client saw last
	for {
		job := must(c.GetTrainingJobWithResponse(context.Background(), acc.JobId))(t).JSON200
		if job.Status == gen.Running && job.Progress > 0 {
			seen = job.Progress
			break
		}
		if job.Status == gen.Done || job.Status == gen.Failed || time.Now().After(deadline) {
			t.Fatalf("job did not run long enough to be interrupted: %+v", job)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()

	p2 := startProcess(t, dir)
	c2 := p2.client(t)
	job := must(c2.GetTrainingJobWithResponse(context.Background(), acc.JobId))(t)
	if job.StatusCode() != 200 || job.JSON200.Status != gen.Failed || job.JSON200.Error == nil || job.JSON200.Error.Code != "INTERRUPTED" {
		t.Fatalf("job after restart: %d %s", job.StatusCode(), job.Body)
	}
	if !bytes.Contains(job.Body, []byte(`"result":null`)) {
		t.Errorf("a failed job must carry result: null: %s", job.Body)
	}
	if job.JSON200.Progress < seen {
		t.Errorf("progress went back from %v to %v across the restart", seen, job.JSON200.Progress)
	}
	list := must(c2.ListModelsWithResponse(context.Background(), nil))(t).JSON200
	if len(list.Models) != 1 || list.Active == nil || *list.Active != active {
		t.Fatalf("registry after restart: %+v", list)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "models"))
	for _, e := range entries {
		if atomicfile.IsTempName(e.Name()) || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("partial file left in the registry: %s", e.Name())
		}
	}
	zc := dialZMQ(t, p2.zmq)
	wn, in := testSpectrum()
	_, pr := predictOnce(t, zc, wn, in)
	if pr.ModelVersion != active {
		t.Fatalf("after restart predict names %s, want %s", pr.ModelVersion, active)
	}
}

// TestActiveModelSurvivesKill: after a swap and kill -9, the restarted
// server serves the model that was active.
func TestActiveModelSurvivesKill(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	dir := t.TempDir()
	p := startProcess(t, dir)
	c := p.client(t)
	base := "http://" + p.httpAddr
	first := trainStaged(t, base, c, 41)
	second := trainStaged(t, base, c, 42)
	loadVersion(t, c, first)
	loadVersion(t, c, second)
	p.kill()
	p2 := startProcess(t, dir)
	list := must(p2.client(t).ListModelsWithResponse(context.Background(), nil))(t).JSON200
	if list.Active == nil || *list.Active != second {
		t.Fatalf("active after kill -9 = %v, want %s", list.Active, second)
	}
	statuses := map[string]gen.ModelStatus{}
	for _, m := range list.Models {
		statuses[m.Version] = m.Status
	}
	if statuses[first] != gen.ModelStatusArchived || statuses[second] != gen.ModelStatusActive {
		t.Fatalf("statuses after restart: %v", statuses)
	}
	_, pr := predictOnce(t, dialZMQ(t, p2.zmq), synth.Axis(), synth.New(synth.Config{Seed: 3}).Next().Intensities)
	if pr.ModelVersion != second {
		t.Fatalf("predict names %s, want %s", pr.ModelVersion, second)
	}
}

// TestTrainingRejectsBadCSVWhileStreaming: the first bad row ends the
// upload with 400 INVALID_CSV while the client is still sending; the
// server neither waits for the rest of the body nor keeps it. The client
// here sends the header and two rows, the second bad, and then stalls.
func TestTrainingRejectsBadCSVWhileStreaming(t *testing.T) {
	rows := csvRows(3)
	rows[2][7] = "oops"
	csv, csvWriter := io.Pipe()
	go csvWriter.Write(renderCSV(rows)) // and nothing more: the upload never ends
	contentType, pr := client.TrainingBody([]byte(goodMeta), csv)
	// Cleanups run last first: end the CSV, then close the body, whose
	// Close waits for the read of the CSV under way.
	t.Cleanup(func() { pr.Close() })
	t.Cleanup(func() { csvWriter.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, suite.httpBase+"/training/start", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := httpClient().Do(req)
	if err != nil {
		t.Fatalf("no answer while the upload was still open: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := validateErrorEnvelope(resp, body); err != nil {
		failed.Add(1)
		t.Fatal(err)
	}
	validated.Add(1)
	e := errorCode(t, body)
	if resp.StatusCode != 400 || e.Code != "INVALID_CSV" || !strings.Contains(e.Message, "line 3") || !strings.Contains(e.Message, "column 8") {
		t.Fatalf("got %d %s %q, want 400 INVALID_CSV at line 3, column 8", resp.StatusCode, e.Code, e.Message)
	}
}
