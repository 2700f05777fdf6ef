package conformance

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/trainer/synth"
)

// The evidence features through the contract: the prediction
// log (GET /predictions), shadow scoring (/model/shadow), lab
// reconciliation (POST /lab-results, GET /model/{version}/performance) and
// re-scoring (POST /model/{version}/rescore). Predicts go over the
// prediction channel with a context, as the rig sends them; every HTTP
// answer is validated against api/openapi.yaml.

// parityTolerance is the bound for shadow parity (g/L).
const parityTolerance = 1e-12

// scanSample is one synthetic spectrum with the concentrations it was made
// from (what the lab would measure).
type scanSample struct {
	intensities []float64
	conc        [3]float64
}

// evidenceSamples returns n synthetic in-domain spectra on the default axis.
func evidenceSamples(seed uint64, n int) (wavenumbers []float64, samples []scanSample) {
	g := synth.New(synth.Config{Seed: seed})
	for range n {
		s := g.Next()
		samples = append(samples, scanSample{intensities: s.Intensities, conc: s.Conc})
	}
	return synth.Axis(), samples
}

// uniqueBatch is a batch id no other test (or earlier run against an
// external server) uses.
func uniqueBatch(prefix string) string {
	return prefix + "-" + uuid.NewString()[:8]
}

// sendPredicts sends each sample as a predict with context batchID and
// scan_seq firstSeq+i over the prediction channel, and returns the replies
// in order.
func sendPredicts(t *testing.T, endpoint, batchID string, firstSeq int64, wn []float64, samples []scanSample) []*client.PredictReply {
	t.Helper()
	cl, err := client.DialPrediction(context.Background(), endpoint, client.PredictionOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	replies := make([]*client.PredictReply, len(samples))
	for i, s := range samples {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rep, err := cl.Predict(ctx, &client.Spectrum{Wavenumbers: wn, Intensities: s.intensities, Channel: 1, IntegrationMS: 500, ScanSeq: firstSeq + int64(i)},
			&client.ScanContext{BatchID: batchID, Port: "P1", ColumnIndex: 3})
		cancel()
		if err != nil {
			t.Fatalf("predict %d of batch %s: %v", i, batchID, err)
		}
		replies[i] = rep
	}
	return replies
}

// loggedPredictions reads every logged record of batchID through
// GET /predictions, following the cursors.
func loggedPredictions(t *testing.T, c *gen.ClientWithResponses, batchID string) []gen.LoggedPrediction {
	t.Helper()
	var out []gen.LoggedPrediction
	params := gen.ListPredictionsParams{BatchId: &batchID, Limit: ptrTo(500)}
	for pages := 0; ; pages++ {
		res := must(c.ListPredictionsWithResponse(context.Background(), &params))(t)
		if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
			t.Fatalf("GET /predictions?batch_id=%s: %d %s", batchID, res.StatusCode(), res.Body)
		}
		out = append(out, res.JSON200.Predictions...)
		next := res.JSON200.NextCursor
		if hdr := res.HTTPResponse.Header.Get("X-Next-Cursor"); (next == nil) != (hdr == "") || (next != nil && *next != hdr) {
			t.Fatalf("next_cursor %v and X-Next-Cursor %q disagree", next, hdr)
		}
		if next == nil {
			return out
		}
		if pages > 10000 {
			t.Fatal("GET /predictions: the cursors do not end")
		}
		params.Cursor = next
	}
}

// byRole splits logged records by role.
func byRole(recs []gen.LoggedPrediction) map[gen.PredictionRole][]gen.LoggedPrediction {
	m := map[gen.PredictionRole][]gen.LoggedPrediction{}
	for _, r := range recs {
		m[r.Role] = append(m[r.Role], r)
	}
	return m
}

// waitLogged polls GET /predictions until batchID has want records of each
// role named (the log commits in batches, the shadow scores off the reply
// path), and returns them.
func waitLogged(t *testing.T, c *gen.ClientWithResponses, batchID string, want map[gen.PredictionRole]int) map[gen.PredictionRole][]gen.LoggedPrediction {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		roles := byRole(loggedPredictions(t, c, batchID))
		ok := true
		for role, n := range want {
			if len(roles[role]) > n {
				t.Fatalf("batch %s: %d %s records logged, want %d", batchID, len(roles[role]), role, n)
			}
			ok = ok && len(roles[role]) == n
		}
		if ok {
			return roles
		}
		if time.Now().After(deadline) {
			got := map[gen.PredictionRole]int{}
			for role, recs := range roles {
				got[role] = len(recs)
			}
			t.Fatalf("batch %s: logged %v after 20 s, want %v", batchID, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// analyteValues is one gen.AnalyteValues as an array, with validity.
func analyteValues(v gen.AnalyteValues) (vals [3]float64, valid [3]bool) {
	for i, p := range []*float64{v.EPA, v.DHA, v.DPA} {
		if p != nil {
			vals[i], valid[i] = *p, true
		}
	}
	return vals, valid
}

// bySeq indexes records by their scan_seq, failing on a record without
// one or two records of one role with the same scan_seq.
func bySeq(t *testing.T, recs []gen.LoggedPrediction) map[int64]gen.LoggedPrediction {
	t.Helper()
	m := map[int64]gen.LoggedPrediction{}
	for _, r := range recs {
		if r.ScanSeq == nil {
			t.Fatalf("logged %s record %s has no scan_seq", r.Role, r.PredictionId)
		}
		seq := int64(*r.ScanSeq)
		if _, dup := m[seq]; dup {
			t.Fatalf("two %s records with scan_seq %d", r.Role, seq)
		}
		m[seq] = r
	}
	return m
}

// sameAs checks a logged record's concentrations against a reply's, within
// tol, analyte by analyte, the set of analytes included.
func sameAs(t *testing.T, what string, rec gen.LoggedPrediction, rep *client.PredictReply, tol float64) {
	t.Helper()
	vals, valid := analyteValues(rec.Concentrations)
	for i, name := range client.AnalyteNames() {
		if valid[i] != rep.Concentrations.Valid[i] {
			t.Errorf("%s: %s logged %v, in the reply %v", what, name, valid[i], rep.Concentrations.Valid[i])
			continue
		}
		if d := math.Abs(vals[i] - rep.Concentrations.Value[i]); !(d <= tol) {
			t.Errorf("%s: %s logged %.17g, reply %.17g (|d| = %.3g > %.3g)", what, name, vals[i], rep.Concentrations.Value[i], d, tol)
		}
	}
}

func getShadow(t *testing.T, c *gen.ClientWithResponses) gen.ShadowStatus {
	t.Helper()
	res := must(c.GetShadowWithResponse(context.Background()))(t)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
		t.Fatalf("GET /model/shadow: %d %s", res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

func setShadow(t *testing.T, c *gen.ClientWithResponses, version string) gen.ShadowStatus {
	t.Helper()
	res := must(c.SetShadowWithResponse(context.Background(), gen.SetShadowJSONRequestBody{Version: version}))(t)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
		t.Fatalf("PUT /model/shadow %s: %d %s", version, res.StatusCode(), res.Body)
	}
	if v := res.JSON200.Version; v == nil || *v != version {
		t.Fatalf("PUT /model/shadow %s answers version %v", version, v)
	}
	return *res.JSON200
}

func clearShadow(t *testing.T, c *gen.ClientWithResponses) {
	t.Helper()
	res := must(c.ClearShadowWithResponse(context.Background()))(t)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil || res.JSON200.Version != nil {
		t.Fatalf("DELETE /model/shadow: %d %s", res.StatusCode(), res.Body)
	}
}

// TestShadowParity is the "Must show: shadow parity": a staged
// model is made the shadow, predicts with a context go over the channel,
// and the shadow's records (read back from GET /predictions) carry the
// active records' prediction ids while the rig's replies come from the
// active model alone. The shadow is then promoted, which clears it, and the
// same spectra are sent again: what the promoted model returns equals what
// was logged for it as the shadow, to 1e-12 g/L.
func TestShadowParity(t *testing.T) {
	active, candidate := twoModels(t)
	c := api(t)
	t.Cleanup(func() {
		// Leave the suite's server as twoModels expects it.
		clearShadow(t, c)
		loadVersion(t, c, active)
	})
	clearShadow(t, c)
	st := setShadow(t, c, candidate)
	if st.Comparison != nil && st.Comparison.N != 0 {
		t.Errorf("a fresh shadow's comparison counts %d predicts", st.Comparison.N)
	}
	if got := getShadow(t, c); got.Version == nil || *got.Version != candidate {
		t.Fatalf("GET /model/shadow after PUT: version %v, want %s", got.Version, candidate)
	}

	const n = 24
	wn, samples := evidenceSamples(1301, n)
	batch := uniqueBatch("parity")
	replies := sendPredicts(t, suite.zmq, batch, 1000, wn, samples)
	for i, rep := range replies {
		if rep.ModelVersion != active {
			t.Fatalf("predict %d with a shadow set was answered by %s, want the active %s", i, rep.ModelVersion, active)
		}
	}
	roles := waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: n, gen.PredictionRoleShadow: n})
	activeRecs, shadowRecs := bySeq(t, roles[gen.PredictionRoleActive]), bySeq(t, roles[gen.PredictionRoleShadow])
	differ := 0
	for i, rep := range replies {
		seq := int64(1000 + i)
		a, okA := activeRecs[seq]
		s, okS := shadowRecs[seq]
		if !okA || !okS {
			t.Fatalf("scan_seq %d: active logged %v, shadow logged %v", seq, okA, okS)
		}
		if a.ModelVersion != active || s.ModelVersion != candidate {
			t.Errorf("scan_seq %d: active record of %s, shadow record of %s; want %s and %s", seq, a.ModelVersion, s.ModelVersion, active, candidate)
		}
		if a.PredictionId == "" || a.PredictionId != s.PredictionId {
			t.Errorf("scan_seq %d: prediction ids %q (active) and %q (shadow) differ", seq, a.PredictionId, s.PredictionId)
		}
		if s.BatchId == nil || *s.BatchId != batch || a.BatchId == nil || *a.BatchId != batch {
			t.Errorf("scan_seq %d: batch ids %v / %v", seq, a.BatchId, s.BatchId)
		}
		// The active record is exactly the reply the rig got.
		sameAs(t, fmt.Sprintf("active record of scan_seq %d", seq), a, rep, 0)
		av, _ := analyteValues(a.Concentrations)
		sv, _ := analyteValues(s.Concentrations)
		for k := range av {
			if math.Abs(av[k]-sv[k]) > 1e-6 {
				differ++
				break
			}
		}
	}
	// Two models trained on different data: had the shadow records been
	// the active model's, the parity below would prove nothing.
	if differ < n/2 {
		t.Fatalf("the shadow's predictions differ from the active model's on only %d of %d spectra", differ, n)
	}
	cmp := getShadow(t, c).Comparison
	if cmp == nil || cmp.N < n {
		t.Errorf("GET /model/shadow comparison %+v, want n >= %d", cmp, n)
	} else if e := cmp.Analytes.EPA; e == nil || e.N < n || e.Rmsd == nil || *e.Rmsd <= 0 {
		t.Errorf("GET /model/shadow EPA comparison %+v", e)
	}

	// Promote the shadow: the swap clears it.
	loadVersion(t, c, candidate)
	if got := getShadow(t, c); got.Version != nil {
		t.Fatalf("after promoting the shadow, GET /model/shadow still names %s", *got.Version)
	}
	promotedBatch := batch + "-promoted"
	promoted := sendPredicts(t, suite.zmq, promotedBatch, 1000, wn, samples)
	worst := 0.0
	for i, rep := range promoted {
		seq := int64(1000 + i)
		if rep.ModelVersion != candidate {
			t.Fatalf("predict %d after the promotion answered by %s, want %s", i, rep.ModelVersion, candidate)
		}
		sameAs(t, fmt.Sprintf("shadow record of scan_seq %d against the promoted model", seq), shadowRecs[seq], rep, parityTolerance)
		sv, _ := analyteValues(shadowRecs[seq].Concentrations)
		for k := range sv {
			worst = math.Max(worst, math.Abs(sv[k]-rep.Concentrations.Value[k]))
		}
		// Confidence is the model's too: it must match where both have it.
		if conf := shadowRecs[seq].Confidence; conf != nil {
			cv, cvalid := analyteValues(*conf)
			for k := range cv {
				if cvalid[k] && rep.Confidence.Valid[k] && math.Abs(cv[k]-rep.Confidence.Value[k]) > parityTolerance {
					t.Errorf("scan_seq %d: shadow confidence %v, promoted %v", seq, cv[k], rep.Confidence.Value[k])
				}
			}
		}
	}
	// No shadow now: the promoted batch has active records only.
	roles = waitLogged(t, c, promotedBatch, map[gen.PredictionRole]int{gen.PredictionRoleActive: n, gen.PredictionRoleShadow: 0})
	t.Logf("shadow parity: %d spectra, %d where shadow and active differ by > 1e-6 g/L; largest |shadow record - promoted reply| = %.3g g/L (bound %.0e)", n, differ, worst, parityTolerance)
}

// labResult is a LabResult built for the tests.
func labResult(id, batch string, scanSeq *int64, sampledAt *time.Time, conc [3]float64) gen.LabResult {
	return gen.LabResult{LabSampleId: id, BatchId: batch, ScanSeq: scanSeq, SampledAt: sampledAt, EPA: &conc[0], DHA: &conc[1], DPA: &conc[2]}
}

// labCSV renders lab results as the documented CSV, columns in the order
// given by header.
func labCSV(header []string, recs []gen.LabResult) string {
	var b strings.Builder
	b.WriteString(strings.Join(header, ",") + "\n")
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	}
	for _, r := range recs {
		cells := make([]string, len(header))
		for i, h := range header {
			switch h {
			case "lab_sample_id":
				cells[i] = r.LabSampleId
			case "batch_id":
				cells[i] = r.BatchId
			case "scan_seq":
				if r.ScanSeq != nil {
					cells[i] = fmt.Sprint(*r.ScanSeq)
				}
			case "sampled_at":
				if r.SampledAt != nil {
					cells[i] = r.SampledAt.UTC().Format(time.RFC3339Nano)
				}
			case "EPA":
				cells[i] = num(r.EPA)
			case "DHA":
				cells[i] = num(r.DHA)
			case "DPA":
				cells[i] = num(r.DPA)
			}
		}
		b.WriteString(strings.Join(cells, ",") + "\n")
	}
	return b.String()
}

// postLab posts lab results as JSON and returns the outcome.
func postLab(t *testing.T, c *gen.ClientWithResponses, recs []gen.LabResult) gen.LabResultsOutcome {
	t.Helper()
	res := must(c.PostLabResultsWithResponse(context.Background(), recs))(t)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
		t.Fatalf("POST /lab-results (JSON): %d %s", res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

// postLabCSV posts lab results as text/csv and returns the outcome.
func postLabCSV(t *testing.T, c *gen.ClientWithResponses, csv string) gen.LabResultsOutcome {
	t.Helper()
	res := must(c.PostLabResultsWithBodyWithResponse(context.Background(), "text/csv", strings.NewReader(csv)))(t)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
		t.Fatalf("POST /lab-results (CSV): %d %s", res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

func performance(t *testing.T, c *gen.ClientWithResponses, version string, since time.Time) gen.ModelPerformance {
	t.Helper()
	res := must(c.GetModelPerformanceWithResponse(context.Background(), version, &gen.GetModelPerformanceParams{Since: &since}))(t)
	if res.StatusCode() != http.StatusOK || res.JSON200 == nil {
		t.Fatalf("GET /model/%s/performance: %d %s", version, res.StatusCode(), res.Body)
	}
	return *res.JSON200
}

// perfN is the n of each analyte (0 when absent).
func perfN(p gen.AnalytePerformances) [3]int {
	var n [3]int
	for i, a := range []*gen.AnalytePerformance{p.EPA, p.DHA, p.DPA} {
		if a != nil {
			n[i] = a.N
		}
	}
	return n
}

// TestLabPostsAreIdempotent is the issue's "Must show: idempotent lab
// posts", through the API: lab results for logged predictions (matched by
// scan_seq and by sampled_at) are posted; the performance endpoint's n
// counts them; posting the same file again (as JSON, then as CSV with its
// columns in another order) replaces every record and leaves n and the
// statistics unchanged. A re-post with corrected values replaces the
// earlier ones: n stays, and the bias moves by exactly the correction.
func TestLabPostsAreIdempotent(t *testing.T) {
	active, _ := twoModels(t)
	c := api(t)
	// Spectra logged from here on: earlier tests' lab results, if any,
	// are left out of the statistics.
	since := time.Now().Add(-time.Second).UTC()
	const bySeqN, byTimeN = 6, 3
	wn, samples := evidenceSamples(1409, bySeqN+byTimeN)
	batch := uniqueBatch("lab")
	sendPredicts(t, suite.zmq, batch, 500, wn, samples[:bySeqN])
	// One prediction per batch for the records matched by time, so that
	// "nearest" has one answer.
	timeBatches := make([]string, byTimeN)
	for i := range timeBatches {
		timeBatches[i] = uniqueBatch("lab-t")
		sendPredicts(t, suite.zmq, timeBatches[i], 1, wn, samples[bySeqN+i:bySeqN+i+1])
	}
	waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: bySeqN})

	run := uuid.NewString()[:8]
	var recs []gen.LabResult
	for i := range bySeqN {
		seq := int64(500 + i)
		recs = append(recs, labResult(fmt.Sprintf("HPLC-%s-%d", run, i), batch, &seq, nil, samples[i].conc))
	}
	for i, b := range timeBatches {
		logged := waitLogged(t, c, b, map[gen.PredictionRole]int{gen.PredictionRoleActive: 1})[gen.PredictionRoleActive][0]
		at := logged.Time.Add(7 * time.Second) // drawn a little after the scan, inside the 60 s window
		recs = append(recs, labResult(fmt.Sprintf("HPLC-%s-t%d", run, i), b, nil, &at, samples[bySeqN+i].conc))
	}
	total := len(recs)

	first := postLab(t, c, recs)
	if first.Received != total || first.Matched != total || first.Replaced != 0 || len(first.Unmatched) != 0 {
		t.Fatalf("first post: %+v, want %d received and matched, 0 replaced", first, total)
	}
	p1 := performance(t, c, active, since)
	if n := perfN(p1.Analytes); n != [3]int{total, total, total} {
		t.Fatalf("performance of %s after the first post: n %v, want %d each", active, n, total)
	}
	if p1.Analytes.EPA.Rmsep == nil || p1.Analytes.EPA.Bias == nil || p1.Analytes.EPA.Slope == nil || p1.Analytes.EPA.Intercept == nil {
		t.Fatalf("performance with n = %d lacks a statistic: %+v", total, *p1.Analytes.EPA)
	}

	again := postLab(t, c, recs)
	if again.Received != total || again.Matched != total || again.Replaced != total || len(again.Unmatched) != 0 {
		t.Errorf("second post of the same records: %+v, want %d matched and %d replaced", again, total, total)
	}
	header := []string{"DPA", "sampled_at", "EPA", "lab_sample_id", "scan_seq", "DHA", "batch_id"}
	csvAgain := postLabCSV(t, c, labCSV(header, recs))
	if csvAgain.Received != total || csvAgain.Matched != total || csvAgain.Replaced != total {
		t.Errorf("third post, as CSV: %+v", csvAgain)
	}
	p2 := performance(t, c, active, since)
	if n := perfN(p2.Analytes); n != perfN(p1.Analytes) {
		t.Fatalf("n after posting the same records three times: %v, after once: %v", n, perfN(p1.Analytes))
	}
	for i, pair := range [][2]*gen.AnalytePerformance{{p1.Analytes.EPA, p2.Analytes.EPA}, {p1.Analytes.DHA, p2.Analytes.DHA}, {p1.Analytes.DPA, p2.Analytes.DPA}} {
		a, b := pair[0], pair[1]
		for _, s := range [][3]any{{"rmsep", a.Rmsep, b.Rmsep}, {"bias", a.Bias, b.Bias}, {"slope", a.Slope, b.Slope}, {"intercept", a.Intercept, b.Intercept}} {
			x, y := s[1].(*float64), s[2].(*float64)
			if x == nil || y == nil || math.Abs(*x-*y) > 1e-9*math.Max(1, math.Abs(*x)) {
				t.Errorf("%s %s changed by the re-posts: %v -> %v", client.AnalyteNames()[i], s[0], deref(x), deref(y))
			}
		}
	}

	// Corrected values replace the earlier ones: every EPA one higher,
	// so the bias (predicted - lab) is one lower, and n stays.
	corrected := make([]gen.LabResult, len(recs))
	for i, r := range recs {
		r.EPA = ptrTo(*r.EPA + 1)
		corrected[i] = r
	}
	if out := postLab(t, c, corrected); out.Replaced != total || out.Matched != total {
		t.Errorf("corrected post: %+v", out)
	}
	p3 := performance(t, c, active, since)
	if perfN(p3.Analytes) != perfN(p1.Analytes) {
		t.Errorf("n after a corrected re-post: %v, want %v", perfN(p3.Analytes), perfN(p1.Analytes))
	}
	if d := *p3.Analytes.EPA.Bias - (*p1.Analytes.EPA.Bias - 1); math.Abs(d) > 1e-9 {
		t.Errorf("EPA bias after raising every lab EPA by 1 g/L: %v, want %v", *p3.Analytes.EPA.Bias, *p1.Analytes.EPA.Bias-1)
	}
	if d := *p3.Analytes.DHA.Bias - *p1.Analytes.DHA.Bias; math.Abs(d) > 1e-9 {
		t.Errorf("DHA bias moved by %v with DHA unchanged", d)
	}
	if len(p3.Batches) == 0 {
		t.Error("performance lists no batch bias")
	}
	t.Logf("lab posts: %d records posted 4 times (JSON, JSON, CSV, corrected JSON): n %v throughout; EPA bias %.6g -> %.6g", total, perfN(p3.Analytes), *p1.Analytes.EPA.Bias, *p3.Analytes.EPA.Bias)
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// rawJSON sends body as JSON (or as contentType) to path on the suite's
// server, through the validating doer.
func rawJSON(t *testing.T, method, path, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	return raw(t, method, path, contentType, strings.NewReader(body))
}

// TestEvidenceErrors: every error of the list, with its contract
// code, on the suite's server (which logs no spectra): unknown versions
// (shadow, performance), a shadow equal to the active model, lab records
// that cannot be parsed (nothing stored) or matched (each reason), and
// re-scoring without logged spectra; plus the refusals around them (bad
// names, bodies, media types, times and cursors).
func TestEvidenceErrors(t *testing.T) {
	active, candidate := twoModels(t)
	c := api(t)
	ctx := context.Background()
	t.Cleanup(func() { clearShadow(t, c) })
	clearShadow(t, c)

	// Shadow.
	res := must(c.SetShadowWithResponse(ctx, gen.SetShadowJSONRequestBody{Version: "no-such-model-7"}))(t)
	wantError(t, "PUT /model/shadow of an unknown version", http.StatusBadRequest, res.Body, res.StatusCode(), "MODEL_NOT_FOUND")
	res = must(c.SetShadowWithResponse(ctx, gen.SetShadowJSONRequestBody{Version: active}))(t)
	wantError(t, "PUT /model/shadow of the active version", http.StatusConflict, res.Body, res.StatusCode(), "SHADOW_IS_ACTIVE")
	if got := getShadow(t, c); got.Version != nil {
		t.Errorf("a refused PUT /model/shadow left the shadow %s", *got.Version)
	}
	for _, bad := range []struct{ what, ct, body, status, code string }{
		{"a malformed version name", "application/json", `{"version":"../etc"}`, "400", "INVALID_REQUEST"},
		{"no version", "application/json", `{}`, "400", "INVALID_REQUEST"},
		{"malformed JSON", "application/json", `{"version":`, "400", "MALFORMED_JSON"},
		{"a text body", "text/plain", candidate, "415", "UNSUPPORTED_MEDIA_TYPE"},
	} {
		resp, b := rawJSON(t, http.MethodPut, "/model/shadow", bad.ct, bad.body)
		wantError(t, "PUT /model/shadow with "+bad.what, atoi(bad.status), b, resp.StatusCode, bad.code)
	}

	// Performance.
	perf := must(c.GetModelPerformanceWithResponse(ctx, "no-such-model-7", nil))(t)
	wantError(t, "GET /model/{unknown}/performance", http.StatusNotFound, perf.Body, perf.StatusCode(), "MODEL_NOT_FOUND")
	for _, q := range []string{"since=yesterday", "until=2026-13-01T00:00:00Z", "since=2026-11-23T10:00:00Z&until=2026-11-23T10:00:00Z", "since=2026-11-23T11:00:00Z&until=2026-11-23T10:00:00Z"} {
		resp, b := raw(t, http.MethodGet, "/model/"+active+"/performance?"+q, "", nil)
		wantError(t, "GET performance?"+q, http.StatusBadRequest, b, resp.StatusCode, "INVALID_REQUEST")
	}

	// Re-scoring on a server that logs no spectra.
	rs := must(c.RescoreModelWithResponse(ctx, candidate, nil))(t)
	wantError(t, "POST /model/{version}/rescore without -log-spectra", http.StatusConflict, rs.Body, rs.StatusCode(), "NO_LOGGED_SPECTRA")

	// Prediction log export.
	for _, q := range []struct{ query, code string }{
		{"cursor=not-a-cursor", "INVALID_CURSOR"},
		{"limit=0", "INVALID_REQUEST"},
		{"limit=10001", "INVALID_REQUEST"},
		{"since=noon", "INVALID_REQUEST"},
	} {
		resp, b := raw(t, http.MethodGet, "/predictions?"+q.query, "", nil)
		wantError(t, "GET /predictions?"+q.query, http.StatusBadRequest, b, resp.StatusCode, q.code)
	}

	// Batches: an unknown batch on every route that reads one, a bad
	// cursor, page size, maturity or batch id.
	unknown := uniqueBatch("never-predicted")
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/batches/" + unknown}, {http.MethodGet, "/batches/" + unknown + "/report"}, {http.MethodPut, "/batches/" + unknown + "/reference"},
	} {
		resp, b := raw(t, r.method, r.path, "", nil)
		wantError(t, r.method+" "+r.path, http.StatusNotFound, b, resp.StatusCode, "BATCH_NOT_FOUND")
	}
	for _, q := range []struct{ path, code string }{
		{"/batches?cursor=not-a-cursor", "INVALID_CURSOR"},
		{"/batches?limit=0", "INVALID_REQUEST"},
		{"/batches?limit=1001", "INVALID_REQUEST"},
		{"/batches/" + unknown + "?maturity=age", "INVALID_REQUEST"},
		{"/batches/" + strings.Repeat("b", 129), "INVALID_REQUEST"},
	} {
		resp, b := raw(t, http.MethodGet, q.path, "", nil)
		wantError(t, "GET "+q.path, http.StatusBadRequest, b, resp.StatusCode, q.code)
	}

	// Lab results that cannot be parsed: the whole post is refused and
	// nothing is stored, not even its good records.
	wn, samples := evidenceSamples(1511, 2)
	batch := uniqueBatch("laberr")
	sendPredicts(t, suite.zmq, batch, 10, wn, samples)
	waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: 2})
	run := uuid.NewString()[:8]
	goodID := "HPLC-" + run + "-good"
	good := fmt.Sprintf(`{"lab_sample_id":%q,"batch_id":%q,"scan_seq":10,"EPA":150}`, goodID, batch)
	for _, bad := range []struct{ what, ct, body, status, code, names string }{
		{"a record with neither scan_seq nor sampled_at", "application/json",
			`[` + good + `,{"lab_sample_id":"x-` + run + `","batch_id":"` + batch + `","EPA":1}]`, "400", "INVALID_LAB_RESULTS", "1"},
		{"a record without an analyte", "application/json",
			`[` + good + `,{"lab_sample_id":"y-` + run + `","batch_id":"` + batch + `","scan_seq":11}]`, "400", "INVALID_LAB_RESULTS", "1"},
		{"a CSV with an unknown column", "text/csv",
			"lab_sample_id,batch_id,scan_seq,EPA,purity\n" + goodID + "," + batch + ",10,150,0.9\n", "400", "INVALID_LAB_RESULTS", "purity"},
		{"a CSV with a bad number", "text/csv",
			"lab_sample_id,batch_id,scan_seq,EPA\n" + goodID + "," + batch + ",10,150\nz-" + run + "," + batch + ",11,1.5.2\n", "400", "INVALID_LAB_RESULTS", "EPA"},
		{"a CSV without batch_id", "text/csv", "lab_sample_id,scan_seq,EPA\n" + goodID + ",10,150\n", "400", "INVALID_LAB_RESULTS", "batch_id"},
		{"malformed JSON", "application/json", `[` + good, "400", "MALFORMED_JSON", ""},
		{"a JSON object, not an array", "application/json", good, "400", "", ""},
		{"a text body", "text/plain", good, "415", "UNSUPPORTED_MEDIA_TYPE", ""},
	} {
		resp, b := rawJSON(t, http.MethodPost, "/lab-results", bad.ct, bad.body)
		if resp.StatusCode != atoi(bad.status) {
			t.Errorf("POST /lab-results with %s: %d %s, want %s", bad.what, resp.StatusCode, b, bad.status)
			continue
		}
		e := errorCode(t, b)
		if bad.code == "" && e.Code != "MALFORMED_JSON" && e.Code != "INVALID_REQUEST" {
			t.Errorf("POST /lab-results with %s: code %s, want MALFORMED_JSON or INVALID_REQUEST", bad.what, e.Code)
		} else if bad.code != "" && e.Code != bad.code {
			t.Errorf("POST /lab-results with %s: code %s (%s), want %s", bad.what, e.Code, e.Message, bad.code)
		}
		if bad.names != "" && !strings.Contains(e.Message, bad.names) {
			t.Errorf("POST /lab-results with %s: message %q does not name %q", bad.what, e.Message, bad.names)
		}
	}
	// A body over 4 MiB.
	big := `[` + strings.Repeat(good+",", (4<<20)/len(good)+1) + good + `]`
	resp, b := rawJSON(t, http.MethodPost, "/lab-results", "application/json", big)
	wantError(t, "POST /lab-results over 4 MiB", http.StatusRequestEntityTooLarge, b, resp.StatusCode, "PAYLOAD_TOO_LARGE")
	// None of the refused posts stored the good record.
	if out := postLab(t, c, []gen.LabResult{labResult(goodID, batch, ptrTo(int64(10)), nil, [3]float64{150, 80, 20})}); out.Replaced != 0 || out.Matched != 1 {
		t.Errorf("the good record of the refused posts was stored: a fresh post of it answers %+v", out)
	}

	// Records that parse but cannot be matched: each with its reason, and
	// the post still answers 200.
	far := time.Now().Add(-3 * time.Hour).UTC()
	unmatched := []gen.LabResult{
		labResult("HPLC-"+run+"-u0", uniqueBatch("no-such-batch"), ptrTo(int64(10)), nil, [3]float64{1, 1, 1}),
		labResult("HPLC-"+run+"-u1", batch, ptrTo(int64(99999)), nil, [3]float64{1, 1, 1}),
		labResult("HPLC-"+run+"-u2", batch, nil, &far, [3]float64{1, 1, 1}),
	}
	wantReason := []gen.UnmatchedLabResultReason{gen.UnknownBatch, gen.NoPredictionForScanSeq, gen.NoneWithinWindow}
	out := postLab(t, c, unmatched)
	if out.Received != 3 || out.Matched != 0 || len(out.Unmatched) != 3 {
		t.Fatalf("unmatchable records: %+v", out)
	}
	for i, u := range out.Unmatched {
		if u.Index != i || u.LabSampleId != unmatched[i].LabSampleId || u.Reason != wantReason[i] || u.Message == "" {
			t.Errorf("unmatched %d: %+v, want index %d, %s, reason %s", i, u, i, unmatched[i].LabSampleId, wantReason[i])
		}
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// TestRescoreOnLoggedSpectra: on a server with -log-spectra, re-scoring an
// unknown version is MODEL_NOT_FOUND and a range without spectra
// NO_LOGGED_SPECTRA; a re-scoring job over the logged spectra runs in the
// training queue (kind rescore) and writes one rescore record per spectrum,
// with the original prediction id, equal (same model) to the active record.
func TestRescoreOnLoggedSpectra(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	proc := extraServer(t, serverConfigWithSpectra())
	base := "http://" + proc.HTTPAddr()
	c := apiAt(t, base)
	ctx := context.Background()
	version := trainStaged(t, base, c, 303)
	loadVersion(t, c, version)
	const n = 5
	wn, samples := evidenceSamples(1601, n)
	batch := uniqueBatch("rescore")
	sendPredicts(t, proc.ZMQEndpoint(), batch, 1, wn, samples)
	roles := waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: n})

	rs := must(c.RescoreModelWithResponse(ctx, "no-such-model-7", nil))(t)
	wantError(t, "POST /model/{unknown}/rescore", http.StatusBadRequest, rs.Body, rs.StatusCode(), "MODEL_NOT_FOUND")
	long := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	rs = must(c.RescoreModelWithResponse(ctx, version, &gen.RescoreModelParams{Since: &long, Until: ptrTo(long.Add(time.Hour))}))(t)
	wantError(t, "POST /model/{version}/rescore over a range without spectra", http.StatusConflict, rs.Body, rs.StatusCode(), "NO_LOGGED_SPECTRA")
	resp, b := raw2(t, base, http.MethodPost, "/model/"+version+"/rescore?since=2026-11-23T11:00:00Z&until=2026-11-23T10:00:00Z")
	wantError(t, "POST rescore with since after until", http.StatusBadRequest, b, resp.StatusCode, "INVALID_REQUEST")

	rs = must(c.RescoreModelWithResponse(ctx, version, nil))(t)
	if rs.StatusCode() != http.StatusAccepted || rs.JSON202 == nil {
		t.Fatalf("POST /model/%s/rescore: %d %s", version, rs.StatusCode(), rs.Body)
	}
	job := waitJob(t, c, rs.JSON202.JobId, 2*time.Minute)
	if job.Status != gen.Done || job.Kind == nil || *job.Kind != gen.TrainingJobKindRescore {
		t.Fatalf("re-scoring job: %s kind %v error %+v", job.Status, job.Kind, job.Error)
	}
	roles = waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: n, gen.PredictionRoleRescore: n})
	activeRecs, rescored := bySeq(t, roles[gen.PredictionRoleActive]), bySeq(t, roles[gen.PredictionRoleRescore])
	for seq, a := range activeRecs {
		r, ok := rescored[seq]
		if !ok || r.PredictionId != a.PredictionId || !r.Time.Equal(a.Time) || r.ModelVersion != version {
			t.Errorf("scan_seq %d: rescore record %+v for active %+v", seq, r, a)
			continue
		}
		av, _ := analyteValues(a.Concentrations)
		rv, _ := analyteValues(r.Concentrations)
		for k := range av {
			// The spectrum is logged as float32: the re-score of the
			// active model sees the spectrum rounded to float32.
			if math.Abs(av[k]-rv[k]) > 1e-3*math.Max(1, math.Abs(av[k])) {
				t.Errorf("scan_seq %d: %s re-scored %v, active %v", seq, client.AnalyteNames()[k], rv[k], av[k])
			}
		}
	}
}

// serverConfigWithSpectra is an extra server's configuration with
// -log-spectra.
func serverConfigWithSpectra() app.Config {
	return app.Config{Evidence: app.EvidenceConfig{LogSpectra: true}}
}

// raw2 sends a bodiless request to base+path through the validating doer.
func raw2(t *testing.T, base, method, path string) (*http.Response, []byte) {
	t.Helper()
	return withAuthorization(t, "", method, base+path, "", nil)
}

// TestPredictionsExport: GET /predictions pages a batch oldest first
// through its cursors, as JSON (next_cursor and X-Next-Cursor agree) and
// as CSV (Accept: text/csv, a header line, X-Next-Cursor), the same rows
// in the same order either way.
func TestPredictionsExport(t *testing.T) {
	twoModels(t)
	c := api(t)
	const n = 5
	wn, samples := evidenceSamples(1801, n)
	batch := uniqueBatch("export")
	sendPredicts(t, suite.zmq, batch, 40, wn, samples)
	waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: n})

	// JSON, two at a time.
	var jsonIDs []string
	var jsonSeqs []float64
	params := gen.ListPredictionsParams{BatchId: &batch, Limit: ptrTo(2)}
	for pages := 0; ; pages++ {
		res := must(c.ListPredictionsWithResponse(context.Background(), &params))(t)
		if res.JSON200 == nil || len(res.JSON200.Predictions) > 2 {
			t.Fatalf("page %d: %d %s", pages, res.StatusCode(), res.Body)
		}
		for _, r := range res.JSON200.Predictions {
			if r.Role == gen.PredictionRoleActive {
				jsonIDs = append(jsonIDs, r.PredictionId)
				jsonSeqs = append(jsonSeqs, *r.ScanSeq)
			}
		}
		if res.JSON200.NextCursor == nil {
			break
		}
		if pages > n {
			t.Fatal("the JSON cursors do not end")
		}
		params.Cursor = res.JSON200.NextCursor
	}
	for i, seq := range jsonSeqs {
		if seq != float64(40+i) {
			t.Fatalf("JSON export order: scan_seqs %v, want 40..%d oldest first", jsonSeqs, 40+n-1)
		}
	}

	// CSV, two at a time.
	acceptCSV := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Accept", "text/csv")
		return nil
	}
	var csvIDs []string
	params = gen.ListPredictionsParams{BatchId: &batch, Limit: ptrTo(2)}
	for pages := 0; ; pages++ {
		res := must(c.ListPredictionsWithResponse(context.Background(), &params, acceptCSV))(t)
		if res.StatusCode() != http.StatusOK || !strings.HasPrefix(res.HTTPResponse.Header.Get("Content-Type"), "text/csv") {
			t.Fatalf("CSV page %d: %d %s %s", pages, res.StatusCode(), res.HTTPResponse.Header.Get("Content-Type"), res.Body)
		}
		rows, err := csv.NewReader(bytes.NewReader(res.Body)).ReadAll()
		if err != nil || len(rows) == 0 {
			t.Fatalf("CSV page %d does not parse (%v): %s", pages, err, res.Body)
		}
		header := rows[0]
		col := map[string]int{}
		for i, h := range header {
			col[h] = i
		}
		idCol, okID := col["prediction_id"]
		roleCol, okRole := col["role"]
		if !okID || !okRole {
			t.Fatalf("CSV header %q lacks prediction_id or role", header)
		}
		if len(rows)-1 > 2 {
			t.Fatalf("CSV page of limit 2 has %d rows", len(rows)-1)
		}
		for _, cells := range rows[1:] {
			if cells[roleCol] == "active" {
				csvIDs = append(csvIDs, cells[idCol])
			}
		}
		next := res.HTTPResponse.Header.Get("X-Next-Cursor")
		if next == "" {
			break
		}
		if pages > n {
			t.Fatal("the CSV cursors do not end")
		}
		params.Cursor = &next
	}
	if strings.Join(csvIDs, " ") != strings.Join(jsonIDs, " ") || len(jsonIDs) != n {
		t.Fatalf("CSV export %v differs from JSON export %v (want %d rows)", csvIDs, jsonIDs, n)
	}
}
