package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/trainer/csvdata"
	"ramanserve/trainer/synth"
)

// pythonReference is Debian's interpreter, with NumPy, SciPy and
// scikit-learn (make deps).
const pythonReference = "/usr/bin/python3"

// parityAxis is a non-linear instrument axis, 180-3230 cm-1.
func parityAxis() []float64 {
	axis := make([]float64, 2048)
	for i := range axis {
		axis[i] = 180 + 3050*math.Pow(float64(i)/2047, 1.05)
	}
	return axis
}

// spiked adds cosmic-ray spikes (one to three points, thousands of
// counts) to x at random places.
func spiked(rng *rand.Rand, x []float64) {
	for k := 0; k < 1+rng.IntN(3); k++ {
		at := 20 + rng.IntN(len(x)-40)
		x[at] += 3000 + 5000*rng.Float64()
		if rng.IntN(2) == 0 {
			x[at+1] += 2000 * rng.Float64()
		}
	}
}

// parityCSV writes n synthetic rows, every fifth one spiked, with every
// number in its shortest exact form, so Go and Python read the same bits.
func parityCSV(t *testing.T, n int) []byte {
	g := synth.New(synth.Config{Seed: 21})
	rng := rand.New(rand.NewPCG(21, 1))
	var b bytes.Buffer
	b.WriteString(strings.Join(csvdata.Header(2048), ","))
	b.WriteByte('\n')
	for i := 0; i < n; i++ {
		s := g.Next()
		if i%5 == 0 {
			spiked(rng, s.Intensities)
		}
		fmt.Fprintf(&b, "par-%03d", i)
		for _, v := range s.Intensities {
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		for _, c := range s.Conc {
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(c, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestTrainingRecipeParityWithScikitLearn is the parity: a model
// trained through the API with preprocessing despike + savgol(15, 2, 1) +
// snv, two regions and a fixed component count, on the instrument's own
// (non-linear) axis given by -instrument-axis, with two rows excluded,
// predicts test spectra on the prediction channel within 1e-8 of
// scikit-learn's PLSRegression fitted on the same rows, preprocessed by
// SciPy's savgol_filter and NumPy code written from the contract's step
// descriptions (testdata/recipe_parity.py). The done job's record reports
// the selection, the CV curve, the outliers, the spikes and the lineage;
// the model's lineage records the rows used and the ones excluded.
func TestTrainingRecipeParityWithScikitLearn(t *testing.T) {
	if _, err := os.Stat(pythonReference); err != nil {
		t.Skipf("%s not installed (make deps)", pythonReference)
	}
	dir := t.TempDir()
	axis := parityAxis()
	var axisText strings.Builder
	for _, v := range axis {
		axisText.WriteString(strconv.FormatFloat(v, 'g', -1, 64) + "\n")
	}
	axisPath := filepath.Join(dir, "axis.txt")
	if err := os.WriteFile(axisPath, []byte(axisText.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, filepath.Join(dir, "registry"), "-instrument-axis", axisPath)
	c := p.client(t)

	const rows, components = 120, 6
	csv := parityCSV(t, rows)
	exclude := []string{"par-007", "par-040"}
	regions := [][2]float64{{600, 1800}, {2800, 3100}}
	meta := map[string]any{
		"operator": "parity", "source_batches": []string{"P-1"}, "notes": "parity run",
		"components": components, "cv_folds": 5, "exclude_scan_ids": exclude, "regions": regions,
		"preprocessing": []map[string]any{
			{"step": "despike", "threshold": 6, "width": 2},
			{"step": "savgol", "window": 15, "polyorder": 2, "deriv": 1},
			{"step": "snv"},
		},
	}
	metaJSON, _ := json.Marshal(meta)
	id := uploadCSV(t, p, csv, string(metaJSON))
	job := waitJob(t, c, id, 3*time.Minute)
	if job.Status != gen.Done || job.Result == nil {
		t.Fatalf("job ended %s: %+v", job.Status, job.Error)
	}
	res := job.Result
	checkReviewedResult(t, id, res, components, rows, exclude)
	// A list page carries the figures but not the per-job lists.
	list := listJobs(t, c, gen.ListTrainingJobsParams{})
	if list.JSON200 == nil || len(list.JSON200.Jobs) != 1 {
		t.Fatalf("list: %d %s", list.StatusCode(), list.Body)
	}
	if lr := list.JSON200.Jobs[0].Result; lr == nil || lr.Outliers != nil || lr.OutliersTotal == nil || *lr.OutliersTotal != *res.OutliersTotal ||
		lr.CvCurve == nil || lr.ComponentSelection == nil || lr.Lineage == nil || lr.Lineage.ExcludedScanIds != nil || *lr.Lineage.RowsUsed != rows-len(exclude) {
		t.Errorf("listed result %+v", lr)
	}
	if lj := list.JSON200.Jobs[0]; lj.Meta == nil || lj.Meta.Operator != "parity" || lj.Meta.SourceBatches != nil || lj.Meta.Notes != nil ||
		lj.Meta.ExcludeScanIds != nil || lj.Result.Lineage.SourceBatches != nil || job.Meta.SourceBatches == nil || job.Result.Lineage.SourceBatches == nil {
		t.Errorf("listed meta %+v and lineage %+v: the operator stays, the lists and notes are GET /training/{jobId}'s", lj.Meta, lj.Result.Lineage)
	}

	// Test spectra, some spiked, predicted on the channel.
	g := synth.New(synth.Config{Seed: 99})
	rng := rand.New(rand.NewPCG(99, 1))
	var test [][]float64
	for i := 0; i < 12; i++ {
		s := g.Next()
		if i%3 == 0 {
			spiked(rng, s.Intensities)
		}
		test = append(test, s.Intensities)
	}
	loadVersion(t, c, res.NewVersion)
	pc, err := client.DialPrediction(context.Background(), p.zmq, client.PredictionOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := make([][3]float64, len(test))
	for i, x := range test {
		pr, err := pc.Predict(context.Background(), &client.Spectrum{Wavenumbers: axis, Intensities: x}, nil)
		if err != nil {
			t.Fatalf("predict %d: %v", i, err)
		}
		if pr.ModelVersion != res.NewVersion {
			t.Fatalf("served by %s", pr.ModelVersion)
		}
		for a := 0; a < 3; a++ {
			if !pr.Concentrations.Valid[a] {
				t.Fatalf("analyte %d missing", a)
			}
			got[i][a] = pr.Concentrations.Value[a]
		}
	}

	// The reference.
	csvPath := filepath.Join(dir, "train.csv")
	os.WriteFile(csvPath, csv, 0o644)
	jobPath := filepath.Join(dir, "job.json")
	in, _ := json.Marshal(map[string]any{
		"csv": csvPath, "axis": axis, "exclude": exclude, "regions": regions, "components": components, "test": test,
		"despike": map[string]any{"threshold": 6.0, "width": 2},
		"savgol":  map[string]any{"window": 15, "polyorder": 2, "deriv": 1},
	})
	os.WriteFile(jobPath, in, 0o644)
	cmd := exec.Command(pythonReference, "testdata/recipe_parity.py", jobPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference: %v\n%s", err, stderr.String())
	}
	var ref struct {
		Predictions    [][3]float64 `json:"predictions"`
		SpikesRepaired int          `json:"spikes_repaired"`
		Rows, Points   int
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Rows != rows-len(exclude) || ref.Points < 100 {
		t.Fatalf("reference fitted %d rows of %d points", ref.Rows, ref.Points)
	}
	if *res.SpikesRepaired != ref.SpikesRepaired || ref.SpikesRepaired == 0 {
		t.Errorf("spikes repaired: server %d, reference %d", *res.SpikesRepaired, ref.SpikesRepaired)
	}
	worst, size := 0.0, 0.0
	for i := range test {
		for a := 0; a < 3; a++ {
			d := math.Abs(got[i][a] - ref.Predictions[i][a])
			worst, size = math.Max(worst, d), math.Max(size, math.Abs(ref.Predictions[i][a]))
			if d > 1e-8 {
				t.Errorf("spectrum %d analyte %d: server %.12g, scikit-learn %.12g", i, a, got[i][a], ref.Predictions[i][a])
			}
		}
	}
	t.Logf("recipe parity: %d test spectra x 3 analytes, max |server - scikit-learn| = %.3g (values up to %.3g g/L); %d rows x %d points, %d components; %d points despiked",
		len(test), worst, size, ref.Rows, ref.Points, components, ref.SpikesRepaired)

	// The model's lineage.
	md := must(c.GetModelWithResponse(context.Background(), res.NewVersion, nil))(t)
	if md.StatusCode() != 200 || md.JSON200 == nil {
		t.Fatalf("GET /model/%s = %d %s", res.NewVersion, md.StatusCode(), md.Body)
	}
	lin := md.JSON200.Lineage
	// The ids are in the job's result and the model file, not in the
	// registry's index (so not here); the counts are.
	if lin.RowsUsed == nil || *lin.RowsUsed != rows-len(exclude) || lin.ExcludedScanIds != nil ||
		lin.TrainingRows == nil || *lin.TrainingRows != rows {
		t.Errorf("model lineage %+v", lin)
	}
}

// checkReviewedResult checks what a done job with options reports.
func checkReviewedResult(t *testing.T, id string, res *gen.TrainingResult, components, rows int, exclude []string) {
	t.Helper()
	sel := res.ComponentSelection
	if sel == nil || sel.Components != components || sel.Rule != "fixed" || sel.Folds != 5 || sel.MaxComponents != components {
		t.Errorf("component_selection %+v", sel)
	}
	if res.CvCurve == nil || len(*res.CvCurve) != components {
		t.Fatalf("cv_curve %+v", res.CvCurve)
	}
	for k, pt := range *res.CvCurve {
		if pt.Components != k+1 || pt.Rmsecv.EPA == nil || !(*pt.Rmsecv.EPA > 0) {
			t.Errorf("cv_curve[%d] %+v", k, pt)
		}
	}
	if sel != nil && *sel.Rmsecv.EPA != *(*res.CvCurve)[components-1].Rmsecv.EPA {
		t.Errorf("selection RMSECV %v, curve at %d %v", *sel.Rmsecv.EPA, components, *(*res.CvCurve)[components-1].Rmsecv.EPA)
	}
	if res.OutlierLimits == nil || !(res.OutlierLimits.T2 > 0) || !(res.OutlierLimits.Q > 0) {
		t.Errorf("outlier_limits %+v", res.OutlierLimits)
	}
	if res.Outliers == nil || res.OutliersTotal == nil || len(*res.Outliers) != *res.OutliersTotal {
		t.Errorf("outliers %v of %v", res.Outliers, res.OutliersTotal)
	}
	if res.Outliers != nil {
		for _, o := range *res.Outliers {
			if len(o.Reasons) == 0 || o.ScanId == "" {
				t.Errorf("outlier %+v", o)
			}
		}
	}
	// parityCSV spikes every fifth row; despike must leave the others
	// alone (their bands are no spikes).
	if res.SpikesRepaired == nil || res.SpectraDespiked == nil || *res.SpectraDespiked == 0 || *res.SpectraDespiked > (rows+4)/5 {
		t.Errorf("spikes %v in %v spectra, want at most the %d spiked ones", res.SpikesRepaired, res.SpectraDespiked, (rows+4)/5)
	}
	lin := res.Lineage
	if lin == nil || lin.RowsUsed == nil || *lin.RowsUsed != rows-len(exclude) || lin.TrainingRows == nil || *lin.TrainingRows != rows ||
		lin.ExcludedScanIds == nil || len(*lin.ExcludedScanIds) != len(exclude) || lin.JobId == nil || *lin.JobId != id ||
		lin.TrainingCsvSha256 == nil || lin.Operator == nil {
		t.Errorf("lineage %+v", lin)
	}
	if res.ReportUrl == nil || *res.ReportUrl != "/training/"+id+"/report" {
		t.Errorf("report_url %v", res.ReportUrl)
	}
}
