package app

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/client"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/gen"
	"ramanserve/inference"
)

// evidenceServer starts a server on loopback ports with a small staged
// model loaded over HTTP; it returns the app and the model's axis.
func evidenceServer(t *testing.T, ev EvidenceConfig) (*App, []float64) {
	t.Helper()
	dir := t.TempDir()
	app, err := Start(context.Background(), Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0",
		RegistryDir: filepath.Join(dir, "registry"), Evidence: ev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	version := stageSmallModel(t, app.Registry, "op")
	resp, body := httpDo(t, app, "POST", "/model/load", `{"version":"`+version+`"}`, "")
	if resp.StatusCode != 200 {
		t.Fatalf("load: %d %s", resp.StatusCode, body)
	}
	return app, []float64{500, 600, 700, 800, 900, 1000}
}

// shadowModel is a one-target model on the small model's axis with other
// coefficients, so that its predictions differ from the active one's.
func shadowModel(t *testing.T) inference.Model {
	t.Helper()
	axis := []float64{500, 600, 700, 800, 900, 1000}
	m, err := inference.NewPLSModel(&inference.PLSParams{
		Meta:    inference.Metadata{Version: "candidate", Algorithm: "PLS2-NIPALS", LatentComponents: 1, Wavenumbers: axis},
		Targets: []inference.Analyte{inference.EPA}, XMean: make([]float64, 6), XScale: []float64{1, 1, 1, 1, 1, 1},
		Coef: mat.NewDense(6, 1, []float64{2, -1, 1, -1, 0.5, 1}), Intercept: []float64{3},
	}, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func httpDo(t *testing.T, app *App, method, path, body, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+app.HTTPAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// sentPredict is one predict sent over the channel and its reply.
type sentPredict struct {
	seq   int64
	reply *client.PredictReply
}

// sendPredicts sends n predicts of batch through a real ZMTP client.
func sendPredicts(t *testing.T, app *App, axis []float64, batch string, n int) []sentPredict {
	t.Helper()
	ctx := context.Background()
	c, err := client.DialPrediction(ctx, app.ZMQEndpoint(), client.PredictionOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := make([]sentPredict, 0, n)
	for i := range n {
		in := []float64{1 + float64(i), 2, 3, 4, 5, 6.5}
		seq := int64(100 + i)
		rep, err := c.Predict(ctx, &client.Spectrum{Wavenumbers: axis, Intensities: in, Channel: 2, IntegrationMS: 250, ScanSeq: seq},
			&client.ScanContext{BatchID: batch, Port: "=P1", ColumnIndex: 7})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sentPredict{seq: seq, reply: rep})
	}
	return out
}

// listPredictions reads every page of GET /predictions?query as JSON.
func listPredictions(t *testing.T, app *App, query url.Values) []gen.LoggedPrediction {
	t.Helper()
	var all []gen.LoggedPrediction
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the pages do not end")
		}
		resp, body := httpDo(t, app, "GET", "/predictions?"+query.Encode(), "", "")
		if resp.StatusCode != 200 {
			t.Fatalf("GET /predictions?%s: %d %s", query.Encode(), resp.StatusCode, body)
		}
		var page gen.PredictionLogPage
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Predictions...)
		header := resp.Header.Get("X-Next-Cursor")
		if page.NextCursor == nil {
			if header != "" {
				t.Fatalf("last page: X-Next-Cursor %q without next_cursor", header)
			}
			return all
		}
		if header != *page.NextCursor {
			t.Fatalf("X-Next-Cursor %q, next_cursor %q", header, *page.NextCursor)
		}
		query.Set("cursor", *page.NextCursor)
	}
}

// waitForRecords polls GET /predictions for batch until it lists want
// records (the log commits every 100 ms).
func waitForRecords(t *testing.T, app *App, batch string, want int) []gen.LoggedPrediction {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := listPredictions(t, app, url.Values{"batch_id": {batch}})
		if len(recs) >= want || time.Now().After(deadline) {
			if len(recs) != want {
				t.Fatalf("%d records of %s logged, want %d", len(recs), batch, want)
			}
			return recs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPredictionsLoggedThroughTheChannel: predicts sent over the real
// prediction channel show up in GET /predictions, each with the figures
// of its reply and its context, beside the shadow's record of the same
// spectrum under the same prediction_id; health and metrics count them.
func TestPredictionsLoggedThroughTheChannel(t *testing.T) {
	began := time.Now()
	app, axis := evidenceServer(t, EvidenceConfig{LogSpectra: true})
	if err := app.shadow.Set(shadowModel(t)); err != nil {
		t.Fatal(err)
	}
	const n = 7
	sent := sendPredicts(t, app, axis, "B-7", n)
	recs := waitForRecords(t, app, "B-7", 2*n)

	bySeq := map[float64]map[gen.PredictionRole]gen.LoggedPrediction{}
	for _, r := range recs {
		if r.ScanSeq == nil {
			t.Fatalf("record without scan_seq: %+v", r)
		}
		if bySeq[*r.ScanSeq] == nil {
			bySeq[*r.ScanSeq] = map[gen.PredictionRole]gen.LoggedPrediction{}
		}
		bySeq[*r.ScanSeq][r.Role] = r
		if r.Time.Before(began.Add(-time.Second)) || r.Time.After(time.Now()) {
			t.Errorf("record time %v outside the test", r.Time)
		}
		if *r.BatchId != "B-7" || *r.Port != "=P1" || *r.ColumnIndex != 7 || *r.Channel != 2 || *r.IntegrationMs != 250 {
			t.Errorf("context: %+v", r)
		}
	}
	for _, s := range sent {
		both := bySeq[float64(s.seq)]
		active, shadow := both["active"], both["shadow"]
		epa, _ := s.reply.Concentrations.Get("EPA")
		if active.Concentrations.EPA == nil || *active.Concentrations.EPA != epa || active.ModelVersion != s.reply.ModelVersion {
			t.Errorf("scan %d: active record %+v, reply EPA %v of %s", s.seq, active, epa, s.reply.ModelVersion)
		}
		if shadow.ModelVersion != "candidate" || shadow.PredictionId != active.PredictionId || !shadow.Time.Equal(active.Time) {
			t.Errorf("scan %d: shadow record %+v beside %+v", s.seq, shadow, active)
		}
		if shadow.Concentrations.EPA == nil || *shadow.Concentrations.EPA == epa {
			t.Errorf("scan %d: the shadow predicted %v, the active model %v", s.seq, shadow.Concentrations.EPA, epa)
		}
	}

	// Health and metrics count what the log committed.
	resp, body := httpDo(t, app, "GET", "/health", "", "")
	var h gen.HealthStatus
	if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}
	if h.PredictionLog == nil || h.PredictionLog.Recorded != 2*n || h.PredictionLog.Dropped != 0 || *h.PredictionLog.WriteFailed != 0 || h.Status != "ok" {
		t.Errorf("health: %s", body)
	}
	if h.PredictionLog != nil && (h.PredictionLog.LastCommitAt == nil || h.PredictionLog.LastCommitAt.Before(began) || h.PredictionLog.LastCommitAt.After(time.Now())) {
		t.Errorf("health: last_commit_at %v, want a time during the test", h.PredictionLog.LastCommitAt)
	}
	_, body = httpDo(t, app, "GET", "/metrics", "", "")
	for _, line := range []string{
		fmt.Sprintf(`ramanserve_prediction_log_records_total{result="committed"} %d`, 2*n),
		`ramanserve_prediction_log_records_total{result="dropped"} 0`,
		fmt.Sprintf(`ramanserve_shadow_predictions_total{result="scored"} %d`, n),
	} {
		if !bytes.Contains(body, []byte(line+"\n")) {
			t.Errorf("metrics lack %q", line)
		}
	}
}

// TestPredictionsPagesAndCSV: small pages carry the cursor in the body
// and in X-Next-Cursor and together list every record once; CSV has a
// header line, the same rows, the cursor header, RFC 3339 times and
// formula-guarded text cells; bad queries are INVALID_REQUEST or
// INVALID_CURSOR.
func TestPredictionsPagesAndCSV(t *testing.T) {
	app, axis := evidenceServer(t, EvidenceConfig{})
	const n = 5
	sendPredicts(t, app, axis, "B-8", n)
	all := waitForRecords(t, app, "B-8", n)
	paged := listPredictions(t, app, url.Values{"batch_id": {"B-8"}, "limit": {"2"}})
	if len(paged) != n {
		t.Fatalf("pages of 2 list %d records, want %d", len(paged), n)
	}
	for i := range all {
		if paged[i].PredictionId != all[i].PredictionId {
			t.Fatalf("record %d: %s paged, %s in one page", i, paged[i].PredictionId, all[i].PredictionId)
		}
	}
	// Since is inclusive, until exclusive.
	mid := all[2].Time.Format(time.RFC3339Nano)
	if got := listPredictions(t, app, url.Values{"since": {mid}}); len(got) != n-2 {
		t.Errorf("since the third: %d records", len(got))
	}
	if got := listPredictions(t, app, url.Values{"until": {mid}}); len(got) != 2 {
		t.Errorf("until the third: %d records", len(got))
	}

	resp, body := httpDo(t, app, "GET", "/predictions?batch_id=B-8&limit=3", "", "text/csv")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || strings.Join(rows[0], ",") != predictionsCSVHeader {
		t.Fatalf("CSV rows: %q", rows)
	}
	col := func(name string) int {
		for i, h := range rows[0] {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	row := rows[1]
	if row[col("prediction_id")] != all[0].PredictionId || row[col("port")] != "'=P1" || row[col("batch_id")] != "B-8" || row[col("role")] != "active" {
		t.Errorf("CSV row %q for %+v", row, all[0])
	}
	if ts, err := time.Parse(time.RFC3339Nano, row[col("time")]); err != nil || !ts.Equal(all[0].Time) {
		t.Errorf("CSV time %q, JSON %v (%v)", row[col("time")], all[0].Time, err)
	}
	if epa := row[col("EPA")]; epa != fmt.Sprint(*all[0].Concentrations.EPA) {
		t.Errorf("CSV EPA %s, JSON %v", epa, *all[0].Concentrations.EPA)
	}
	next := resp.Header.Get("X-Next-Cursor")
	if next == "" {
		t.Fatal("CSV page of 3 of 5: no X-Next-Cursor")
	}
	resp, body = httpDo(t, app, "GET", "/predictions?batch_id=B-8&limit=3&cursor="+url.QueryEscape(next), "", "text/csv, application/json;q=0.5")
	if rows, _ := csv.NewReader(bytes.NewReader(body)).ReadAll(); resp.StatusCode != 200 || len(rows) != 3 || resp.Header.Get("X-Next-Cursor") != "" {
		t.Errorf("second CSV page: %d, %d rows, cursor %q", resp.StatusCode, len(rows), resp.Header.Get("X-Next-Cursor"))
	}
	// JSON preferred, or as good and listed first: JSON.
	for _, accept := range []string{"application/json, text/csv", "text/csv;q=0.5, application/json", "*/*"} {
		resp, _ := httpDo(t, app, "GET", "/predictions?limit=1", "", accept)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("Accept %q: %s", accept, resp.Header.Get("Content-Type"))
		}
	}

	for query, code := range map[string]string{
		"cursor=bm90LWEtY3Vyc29y": "INVALID_CURSOR",
		"limit=0":                 "INVALID_REQUEST",
		"limit=10001":             "INVALID_REQUEST",
		"since=yesterday":         "INVALID_REQUEST",
		"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z": "INVALID_REQUEST",
	} {
		resp, body := httpDo(t, app, "GET", "/predictions?"+query, "", "")
		var e gen.ErrorResponse
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode != 400 || e.Code != code {
			t.Errorf("?%s: %d %s, want 400 %s", query, resp.StatusCode, body, code)
		}
	}
}

// slowModel is a real model that takes delay more per predict, so that
// spectra are still queued for the shadow when the server shuts down.
type slowModel struct {
	inference.Model
	delay time.Duration
}

func (m slowModel) Predict(s *inference.Spectrum, p *inference.Prediction) error {
	time.Sleep(m.delay)
	return m.Model.Predict(s, p)
}

// TestShutdownCommitsQueuedEvidence: predicts answered just before
// SIGTERM are all in the log after Shutdown, the shadow's records too,
// although the (slow) shadow still had most of them queued: the scorer
// is closed before the log, and the log commits its queue.
func TestShutdownCommitsQueuedEvidence(t *testing.T) {
	app, axis := evidenceServer(t, EvidenceConfig{LogSpectra: true})
	if err := app.shadow.Set(slowModel{shadowModel(t), 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	sendPredicts(t, app, axis, "B-9", n)
	dir := app.Registry.Dir()
	if err := app.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	log, err := sqlitelog.OpenLog(context.Background(), dir, predlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close(context.Background())
	page, err := log.Page(context.Background(), predlog.Filter{BatchID: "B-9", HasBatchID: true})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[predlog.Role]int{}
	for _, r := range page.Records {
		roles[r.Role]++
	}
	if roles[predlog.RoleActive] != n || roles[predlog.RoleShadow] != n {
		t.Fatalf("after shutdown the log holds %v, want %d active and %d shadow", roles, n, n)
	}
	spectra, err := log.Page(context.Background(), predlog.Filter{BatchID: "B-9", HasBatchID: true, WithSpectra: true, Role: predlog.RoleActive})
	if err != nil {
		t.Fatal(err)
	}
	if len(spectra.Records) != n || len(spectra.Records[0].Spectrum) != len(axis) || spectra.Records[0].Spectrum[0] != 1 {
		t.Fatalf("logged spectra: %d records, first %v", len(spectra.Records), spectra.Records[0].Spectrum)
	}
}

// TestPredictionLogOff: with -prediction-log=false the server writes no
// database, predicts still answer, the shadow still compares, and the
// routes that read the log say they are unavailable.
func TestPredictionLogOff(t *testing.T) {
	app, axis := evidenceServer(t, EvidenceConfig{LogOff: true, LogSpectra: true})
	if err := app.shadow.Set(shadowModel(t)); err != nil {
		t.Fatal(err)
	}
	const n = 5
	sendPredicts(t, app, axis, "B-off", n)
	deadline := time.Now().Add(10 * time.Second)
	for app.shadow.Status().Comparison.N < n {
		if time.Now().After(deadline) {
			t.Fatalf("the shadow compared %d of %d spectra", app.shadow.Status().Comparison.N, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(app.Registry.Dir(), sqlitelog.DatabaseFileName)); !os.IsNotExist(err) {
		t.Errorf("the log is off, yet %s: %v", sqlitelog.DatabaseFileName, err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/predictions", ""},
		{"POST", "/lab-results", `[{"lab_sample_id":"L1","batch_id":"B-off","scan_seq":1,"EPA":1}]`},
		{"GET", "/model/" + app.Registry.Active().Metadata().Version + "/performance", ""},
		{"GET", "/batches", ""},
		{"GET", "/batches/B-off", ""},
		{"GET", "/batches/B-off/report", ""},
		{"PUT", "/batches/B-off/reference", ""},
		{"DELETE", "/batches/B-off/reference", ""},
	} {
		resp, body := httpDo(t, app, c.method, c.path, c.body, "")
		if resp.StatusCode != http.StatusNotImplemented || !bytes.Contains(body, []byte(`"NOT_IMPLEMENTED"`)) {
			t.Errorf("%s %s: %d %s, want 501 NOT_IMPLEMENTED", c.method, c.path, resp.StatusCode, body)
		}
	}
	resp, body := httpDo(t, app, "POST", "/model/"+app.Registry.Active().Metadata().Version+"/rescore", "", "")
	if resp.StatusCode != http.StatusConflict || !bytes.Contains(body, []byte(`"NO_LOGGED_SPECTRA"`)) {
		t.Errorf("rescore: %d %s, want 409 NO_LOGGED_SPECTRA", resp.StatusCode, body)
	}
	resp, body = httpDo(t, app, "GET", "/health", "", "")
	var h gen.HealthStatus
	if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != 200 || h.PredictionLog != nil || h.Status != "ok" {
		t.Errorf("health: %d %s", resp.StatusCode, body)
	}
	if _, body = httpDo(t, app, "GET", "/metrics", "", ""); bytes.Contains(body, []byte("ramanserve_prediction_log_records_total")) {
		t.Error("metrics report a log that is off")
	}
}

// TestLongBatchIDIsCut: a predict whose batch_id is far longer than any
// rig's is answered, and its record keeps the first
// inference.MaxContextTextBytes bytes, so that no request can put its own
// size of text into the log.
func TestLongBatchIDIsCut(t *testing.T) {
	app, axis := evidenceServer(t, EvidenceConfig{})
	long := strings.Repeat("b", 200_000)
	sendPredicts(t, app, axis, long, 2)
	recs := waitForRecords(t, app, long[:inference.MaxContextTextBytes], 2)
	for _, r := range recs {
		if len(*r.BatchId) != inference.MaxContextTextBytes {
			t.Errorf("logged batch_id of %d bytes", len(*r.BatchId))
		}
	}
}

// predictionsCSVHeader is the CSV export's header line as the contract
// documents it.
const predictionsCSVHeader = "prediction_id,time,model_version,role,EPA,DHA,DPA,EPA_confidence,DHA_confidence,DPA_confidence," +
	"t2_reduced,q_reduced,batch_id,port,column_index,scan_seq,channel,integration_ms"
