package report_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
	"ramanserve/server/report"
	evidencesvc "ramanserve/service/evidence"
)

// TestSpectrumPageFromStoredContributions: without the logged spectrum
// the page still draws the prediction, its limits and the contributions
// the log stored, lists the region sums, says what is missing, and holds
// no script and no reference to another URL; a hostile batch id is
// escaped.
func TestSpectrumPageFromStoredContributions(t *testing.T) {
	rec := predlog.Record{PredictionID: predlog.NewPredictionID(), Time: time.Now(), ModelVersion: "v1", Role: predlog.RoleActive,
		ReducedT2: 0.5, HasReducedT2: true, ReducedQ: 3.5, HasReducedQ: true}
	rec.BatchID, rec.HasBatchID = `<script>alert(1)</script>`, true
	rec.Concentrations.Set(inference.EPA, 52.5)
	rec.Confidence.Set(inference.EPA, 0.25)
	rec.Contributions = &inference.Contributions{
		HasT2: true, T2: inference.ContributionSummary{Total: 2, Top: []inference.VariableContribution{{Wavenumber: 1650, Value: 1}, {Wavenumber: 1000, Value: 0.5}},
			Regions: []inference.RegionContribution{{Region: [2]float64{600, 1800}, Value: 2}}},
		HasQ: true, Q: inference.ContributionSummary{Total: 7, Top: []inference.VariableContribution{{Wavenumber: 1655, Value: 4}},
			Regions: []inference.RegionContribution{{Region: [2]float64{600, 1800}, Value: 7}}},
	}
	var buf bytes.Buffer
	err := report.RenderSpectrum(&buf, evidencesvc.SpectrumReport{
		Spectrum: evidencesvc.Spectrum{ID: rec.PredictionID, Records: []predlog.Record{rec}},
		Missing:  "The log kept no spectrum of this prediction.",
	})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`id="prediction-confidence"`, `id="prediction-limits"`, `id="contributions-t2"`, `id="contributions-q"`,
		`id="missing"`, "600–1800 cm⁻¹", "&lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, banned := range []string{`id="spectrum-mean"`, `id="residual"`, "<script", "http://", "https://"} {
		if strings.Contains(page, banned) {
			t.Errorf("the page holds %s", banned)
		}
	}
}
