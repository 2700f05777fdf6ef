package report

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/predlog"
	"ramanserve/inference"
	batchsvc "ramanserve/service/batches"
)

// batchOf is a batch of n spectra a second apart whose figures are
// level plus the scan's number times slope.
func batchOf(id string, n int, level, slope float64) batches.Trajectory {
	t0 := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	recs := make([]predlog.Record, n)
	for i := range recs {
		v := level + slope*float64(i)
		r := &recs[i]
		r.Time, r.ModelVersion, r.Role = t0.Add(time.Duration(i)*time.Second), "v<1>", predlog.RoleActive
		for a := range inference.NumAnalytes {
			r.Concentrations.Set(inference.Analyte(a), v)
		}
		r.ReducedT2, r.HasReducedT2, r.ReducedQ, r.HasReducedQ = v/100, true, v/200, true
	}
	return batches.FromRecords(id, batches.ByTime, recs, false)
}

func renderBatch(t *testing.T, rep batchsvc.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderBatch(&buf, rep); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestBatchPageWithoutReferences: the page says why it has no bands,
// draws the five series alone, and escapes the batch id.
func TestBatchPageWithoutReferences(t *testing.T) {
	hostile := `<script>alert("B")</script>`
	page := renderBatch(t, batchsvc.Report{Trajectory: batchsvc.Trajectory{Trajectory: batchOf(hostile, 50, 10, 0.1)}})
	if strings.Contains(page, "<script") || !strings.Contains(page, "&lt;script&gt;") {
		t.Fatal("the batch id is not escaped")
	}
	if !strings.Contains(page, `id="`+NoReferencesID+`"`) || !strings.Contains(page, "No reference batches are marked") {
		t.Fatal("the page does not say it has no bands")
	}
	for _, s := range []string{"EPA", "DHA", "DPA", "T2", "Q"} {
		if !strings.Contains(page, `<figure id="batch-`+s+`">`) {
			t.Errorf("no figure of %s", s)
		}
	}
	// Only this batch marked: no bands either, and said so.
	self := renderBatch(t, batchsvc.Report{Trajectory: batchsvc.Trajectory{Trajectory: batchOf("B", 5, 1, 0), Reference: true},
		References: []batches.Reference{{BatchID: "B"}}})
	if !strings.Contains(self, "The only reference batch is this one") {
		t.Fatal("a batch that is its own only reference: the page does not say why it has no bands")
	}
}

// TestBatchPageListsAtMostMaxTableRows: a batch far outside its bands on
// every point has them counted in full, and listed up to MaxTableRows.
func TestBatchPageListsAtMostMaxTableRows(t *testing.T) {
	b := batches.NewBandBuilder(batches.ByTime)
	for _, level := range []float64{9, 10, 11} {
		b.Add(batchOf("R", 100, level, 0.1))
	}
	rep := batchsvc.Report{Trajectory: batchsvc.Trajectory{Trajectory: batchOf("B", 100, 50, 0.1)},
		References: []batches.Reference{{BatchID: "R1"}, {BatchID: "R2"}, {BatchID: "R3"}}, Bands: b.Build()}
	rep.Judgement = batches.Judge(&rep.Trajectory.Trajectory, rep.Bands)
	if n := len(rep.Judgement.Outside[batches.SeriesEPA]); n != 100 {
		t.Fatalf("%d points outside, want 100", n)
	}
	page := renderBatch(t, rep)
	if strings.Contains(page, `id="`+NoReferencesID+`"`) {
		t.Fatal("a page with bands says it has none")
	}
	total := 5 * 100 // every series: T² and Q follow the level too
	if rows := strings.Count(page, `<tr><td class="num">`); rows != MaxTableRows {
		t.Fatalf("%d rows listed, want %d", rows, MaxTableRows)
	}
	if !strings.Contains(page, "and "+strconv.Itoa(total-MaxTableRows)+" more") {
		t.Fatalf("the page does not say how many more: %s", page[strings.Index(page, `id="outside-bands"`):][:600])
	}
}
