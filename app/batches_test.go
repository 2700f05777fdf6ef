package app

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/platform/pgtest"
)

// sendBatch sends n predicts of batch, scan_seq 100+i, whose first
// intensity is 1+i plus offset(i): the small model's EPA follows it.
func sendBatch(t *testing.T, app *App, axis []float64, batch string, n int, offset func(i int) float64) {
	t.Helper()
	ctx := context.Background()
	c, err := client.DialPrediction(ctx, app.ZMQEndpoint(), client.PredictionOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		in := []float64{1 + float64(i) + offset(i), 2, 3, 4, 5, 6.5}
		if _, err := c.Predict(ctx, &client.Spectrum{Wavenumbers: axis, Intensities: in, Channel: 2, IntegrationMS: 250, ScanSeq: int64(100 + i)},
			&client.ScanContext{BatchID: batch}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBatchTrajectoriesAndBands goes the way a plant does: batches are
// predicted over the channel, listed by GET /batches in pages, read as
// trajectories; three good ones are marked as references, and the page
// of a fourth shows it against their bands with exactly its drifted
// points outside. Before any mark the page says it has no bands; an
// unknown batch is 404 BATCH_NOT_FOUND on every batch route but DELETE.
func TestBatchTrajectoriesAndBands(t *testing.T) {
	app, axis := evidenceServer(t, EvidenceConfig{})
	const n = 12
	for k, id := range []string{"R-1", "R-2", "R-3"} {
		sendBatch(t, app, axis, id, n, func(int) float64 { return 0.1 * float64(k) })
	}
	// The batch under review drifts by 1 g/L (10 s.d.) from its 10th scan.
	under := "T 1/x"
	sendBatch(t, app, axis, under, n, func(i int) float64 {
		if i >= 9 {
			return 1.1
		}
		return 0.1
	})
	for _, id := range []string{"R-1", "R-2", "R-3", under} {
		waitForRecords(t, app, id, n)
	}
	path := "/batches/" + url.PathEscape(under)

	// Two pages of GET /batches list the four in byte order.
	var listed []gen.BatchSummary
	cursor := ""
	for pages := 0; ; pages++ {
		q := "/batches?limit=3"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		resp, body := httpDo(t, app, "GET", q, "", "")
		var page gen.BatchList
		if err := json.Unmarshal(body, &page); err != nil || resp.StatusCode != 200 || pages > 2 {
			t.Fatalf("GET %s: %d %s", q, resp.StatusCode, body)
		}
		listed = append(listed, page.Batches...)
		if page.NextCursor == nil {
			break
		}
		if resp.Header.Get("X-Next-Cursor") != *page.NextCursor {
			t.Fatalf("X-Next-Cursor %q, next_cursor %q", resp.Header.Get("X-Next-Cursor"), *page.NextCursor)
		}
		cursor = *page.NextCursor
	}
	if len(listed) != 4 || listed[0].BatchId != "R-1" || listed[3].BatchId != under || listed[3].Count != n || len(listed[3].Models) != 1 || listed[3].Reference {
		t.Fatalf("listed %+v", listed)
	}
	if !listed[0].LastTime.After(listed[0].FirstTime) {
		t.Errorf("R-1 from %v to %v", listed[0].FirstTime, listed[0].LastTime)
	}

	// The trajectory, by time and by scan_seq.
	resp, body := httpDo(t, app, "GET", path, "", "")
	var tr gen.BatchTrajectory
	if err := json.Unmarshal(body, &tr); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if tr.BatchId != under || tr.Maturity != gen.Time || len(tr.Points) != n || tr.Points[0].Maturity != 0 || tr.Points[n-1].Maturity <= 0 || tr.Truncated {
		t.Fatalf("trajectory: %s", body)
	}
	if p := tr.Points[3]; p.Concentrations.EPA == nil || p.ScanSeq == nil || *p.ScanSeq != 103 {
		t.Fatalf("point 3: %+v", p)
	}
	_, body = httpDo(t, app, "GET", path+"?maturity=scan_seq", "", "")
	if err := json.Unmarshal(body, &tr); err != nil || tr.Points[0].Maturity != 100 || tr.Points[n-1].Maturity != 100+n-1 {
		t.Fatalf("by scan_seq: %s", body)
	}

	// Before any mark, the page has no bands and says so.
	resp, body = httpDo(t, app, "GET", path+"/report?maturity=scan_seq", "", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `id="no-bands"`) || !strings.Contains(string(body), "No reference batches are marked") {
		t.Fatalf("report without references: %d %.300s", resp.StatusCode, body)
	}

	// Mark the references: once created, again not.
	for _, id := range []string{"R-1", "R-2", "R-3"} {
		resp, body := httpDo(t, app, "PUT", "/batches/"+id+"/reference", "", "")
		var ref gen.ReferenceBatch
		if err := json.Unmarshal(body, &ref); err != nil || resp.StatusCode != 200 || !ref.Created || ref.BatchId != id {
			t.Fatalf("PUT reference %s: %d %s", id, resp.StatusCode, body)
		}
	}
	resp, body = httpDo(t, app, "PUT", "/batches/R-1/reference", "", "")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"created":false`) {
		t.Fatalf("marking again: %d %s", resp.StatusCode, body)
	}

	resp, body = httpDo(t, app, "GET", path+"/report?maturity=scan_seq", "", "")
	page := string(body)
	if resp.StatusCode != 200 || strings.Contains(page, `id="no-bands"`) || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("report: %d %.400s", resp.StatusCode, body)
	}
	// The small model predicts EPA only: its figure, with the three
	// drifted points outside; the other series have nothing to draw.
	if got := regexp.MustCompile(`<figure id="batch-EPA">`).FindAllString(page, -1); len(got) != 1 {
		t.Fatalf("%d EPA figures", len(got))
	}
	rows := regexp.MustCompile(`<tr><td class="num">(\d+)</td><td>[^<]+</td><td>EPA \(g/L\)</td>`).FindAllStringSubmatch(page, -1)
	var outside []string
	for _, r := range rows {
		outside = append(outside, r[1])
	}
	if !strings.Contains(page, "outside the band: 3") || strings.Join(outside, ",") != "109,110,111" {
		t.Fatalf("the page does not mark the 3 drifted points: %s", page[strings.Index(page, `id="outside-bands"`):])
	}

	// DELETE unmarks; the listing shows it.
	if resp, body := httpDo(t, app, "DELETE", "/batches/R-3/reference", "", ""); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
	}
	_, body = httpDo(t, app, "GET", "/batches", "", "")
	var all gen.BatchList
	if err := json.Unmarshal(body, &all); err != nil || len(all.Batches) != 4 {
		t.Fatalf("listing: %s", body)
	}
	for _, b := range all.Batches {
		if want := b.BatchId == "R-1" || b.BatchId == "R-2"; b.Reference != want {
			t.Errorf("%s listed with reference %v, want %v", b.BatchId, b.Reference, want)
		}
	}

	for _, c := range []struct{ method, path string }{
		{"GET", "/batches/no-such"}, {"GET", "/batches/no-such/report"}, {"PUT", "/batches/no-such/reference"},
	} {
		resp, body := httpDo(t, app, c.method, c.path, "", "")
		if resp.StatusCode != 404 || !strings.Contains(string(body), `"BATCH_NOT_FOUND"`) {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	if resp, _ := httpDo(t, app, "DELETE", "/batches/no-such/reference", "", ""); resp.StatusCode != 204 {
		t.Errorf("DELETE of no mark: %d", resp.StatusCode)
	}
	for _, q := range []string{"/batches?cursor=nope", "/batches?limit=0", "/batches?limit=1001", path + "?maturity=age"} {
		if resp, body := httpDo(t, app, "GET", q, "", ""); resp.StatusCode != 400 {
			t.Errorf("GET %s: %d %s", q, resp.StatusCode, body)
		}
	}
}

// TestFleetSharesBatchesAndReferences: on a fleet's database, a batch
// predicted on one replica is listed by the other, a reference marked on
// the other is seen by the first, and the first's page draws the bands
// of the references.
func TestFleetSharesBatchesAndReferences(t *testing.T) {
	url := pgtest.Database(t)
	a, b := replica(t, url, nil), replica(t, url, nil)
	v := stageSmallModel(t, a.Registry, "op")
	if code, errCode := postLoad(t, a, v, "staged"); code != 200 {
		t.Fatalf("load: %d %s", code, errCode)
	}
	waitServed(t, v, a, b)
	axis := []float64{500, 600, 700, 800, 900, 1000}
	for k, id := range []string{"R-1", "R-2", "T"} {
		sendBatch(t, a, axis, id, 6, func(int) float64 { return 0.1 * float64(k) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := httpDo(t, b, "GET", "/batches", "", "")
		var page gen.BatchList
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET /batches on b: %s", body)
		}
		if len(page.Batches) == 3 && page.Batches[2].Count == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b lists %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range []string{"R-1", "R-2"} {
		if resp, body := httpDo(t, b, "PUT", "/batches/"+id+"/reference", "", ""); resp.StatusCode != 200 {
			t.Fatalf("PUT reference on b: %d %s", resp.StatusCode, body)
		}
	}
	resp, body := httpDo(t, a, "GET", "/batches/T/report?maturity=scan_seq", "", "")
	if resp.StatusCode != 200 || strings.Contains(string(body), `id="no-bands"`) || strings.Count(string(body), "in the bands") != 2 {
		t.Fatalf("a's page of T: %d %.300s", resp.StatusCode, body)
	}
}
