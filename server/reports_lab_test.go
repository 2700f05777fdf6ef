package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/evidence/reconcile"
	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/server/report"
	"ramanserve/trainer/jobs"
)

// logBatches records, in a real prediction log in dir, batches spectra
// of version (active), each batch perBatch spectra a minute apart, EPA
// predicted 180 + the spectrum's number + bias; it returns the log opened
// again (every record committed).
func logBatches(t *testing.T, dir, version string, t0 time.Time, batches, perBatch int, bias float64) *predlog.Writer {
	t.Helper()
	ctx := context.Background()
	l, err := sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for b := range batches {
		for i := range perBatch {
			r := &predlog.Record{PredictionID: predlog.NewPredictionID(), Time: t0.Add(time.Duration(b*perBatch+i) * time.Minute),
				ModelVersion: version, Role: predlog.RoleActive,
				ScanContext: inference.ScanContext{BatchID: fmt.Sprintf("B-%d", b), HasBatchID: true, ScanSeq: float64(i), HasScanSeq: true}}
			r.Concentrations.Set(inference.EPA, 180+float64(i)+bias)
			if !l.Record(r) {
				t.Fatal("record dropped")
			}
		}
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = sqlitelog.OpenLog(ctx, dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// labCSV is the lab's results for logBatches: every spectrum sampled,
// the lab reading the spectrum's true value (180 + its number).
func labCSV(batches, perBatch int) string {
	var s strings.Builder
	s.WriteString("lab_sample_id,batch_id,scan_seq,EPA\n")
	for b := range batches {
		for i := range perBatch {
			fmt.Fprintf(&s, "HPLC-%d-%d,B-%d,%d,%d\n", b, i, b, i, 180+i)
		}
	}
	return s.String()
}

func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

func labSectionOf(page string) string {
	start := strings.Index(page, `<section id="`+report.SectionLab+`"`)
	if start < 0 {
		return ""
	}
	return page[start : start+strings.Index(page[start:], "</section>")]
}

// The review page of a version with lab results matched to its logged
// predictions shows them: through a real prediction log and a Reconciler,
// the route a server uses.
func TestReportPageShowsLabPerformance(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	reg, err := registry.Open(ctx, dir, registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	version := stageSmallModel(t, reg, "op")
	other := stageSmallModel(t, reg, "op")
	log := logBatches(t, t.TempDir(), version, time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC), 4, 5, 1.5)
	rec, err := reconcile.New(log, &reconcile.MemoryStore{}, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	records, err := reconcile.ParseCSV(strings.NewReader(labCSV(4, 5)))
	if err != nil {
		t.Fatal(err)
	}
	if posted, err := rec.Post(ctx, records); err != nil || posted.Matched != 20 {
		t.Fatalf("post: %+v %v", posted, err)
	}
	known := jobsByID{"done": {ID: "done", Status: jobs.Done, Result: &jobs.Result{NewVersion: version}}}
	h, err := NewHTTPHandler(&API{Registry: reg, Training: known, LabReports: rec}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, path := range []string{"/training/done/report", "/model/" + version + "/report"} {
		sec := labSectionOf(getPage(t, srv.URL+path))
		for _, want := range []string{
			"20 lab results matched", "in 4 batches", `<figure id="lab-EPA"`, `<figure id="bias-EPA"`,
			// n 20, RMSEP and bias 1.5, slope 1, intercept -1.5.
			`<td>EPA</td><td class="num">20</td><td class="num">1.5</td><td class="num">1.5</td><td class="num">1</td><td class="num">-1.5</td>`,
			">B-0<", ">B-3<",
		} {
			if !strings.Contains(sec, want) {
				t.Errorf("%s: lab section lacks %q:\n%.2000s", path, want, sec)
			}
		}
	}
	// A version with no lab result says so.
	sec := labSectionOf(getPage(t, srv.URL+"/model/"+other+"/report"))
	if !strings.Contains(sec, "No lab result is matched") || strings.Contains(sec, "<svg") {
		t.Errorf("a version without lab results: %q", sec)
	}
}

// More lab results than reconcile reports on at once: the page reports
// on the last week, and says so; the lab results here are all older, so
// the section has nothing to draw.
func TestReportPageNarrowsTooManyLabResults(t *testing.T) {
	ctx := context.Background()
	reg, err := registry.Open(ctx, t.TempDir(), registry.Options{Openers: registry.FileOpeners(ChannelConfig{}.ModelOptions())})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	version := stageSmallModel(t, reg, "op")
	log := logBatches(t, t.TempDir(), version, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 1, 1, 0)
	page, err := log.Page(ctx, predlog.Filter{})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("%v %v", page, err)
	}
	store := &reconcile.MemoryStore{}
	results := make([]reconcile.LabResult, reconcile.MaxReportSamples+1)
	for i := range results {
		results[i] = reconcile.LabResult{LabRecord: reconcile.LabRecord{BatchID: "B-0", LabSampleID: fmt.Sprint(i)},
			Matched: true, PredictionID: page.Records[0].PredictionID, SpectrumTime: page.Records[0].Time}
		results[i].Lab.Set(inference.EPA, 180)
	}
	for chunk := range slices.Chunk(results, reconcile.MaxRecords) {
		if _, err := store.Upsert(ctx, chunk); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := reconcile.New(log, store, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHTTPHandler(&API{Registry: reg, LabReports: rec}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	sec := labSectionOf(getPage(t, srv.URL+"/model/"+version+"/report"))
	if !strings.Contains(sec, "covers the spectra of the last 7 days only") || !strings.Contains(sec, "No lab result is matched") {
		t.Errorf("too many lab results: %q", sec)
	}
}
