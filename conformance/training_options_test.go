package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"ramanserve/gen"
	"ramanserve/trainer"
)

// Training options (TrainingMeta's wavenumbers, components, cv_folds,
// exclude_scan_ids, regions, preprocessing): each error a client can make
// is answered before the job is queued, with the code the contract gives
// and the field named. The CSV has 14 rows scan-000 .. scan-013 (csvRows)
// on the server's default axis, 200-3200 cm-1.

// optionMeta is goodMeta with extra TrainingMeta fields.
func optionMeta(extra string) []byte {
	return []byte(strings.TrimSuffix(goodMeta, "}") + "," + extra + "}")
}

// linearAxisJSON is 2048 wavenumbers lo + i step as a JSON array, with
// point dup set equal to the one before it when dup >= 1.
func linearAxisJSON(lo, step float64, dup int) string {
	axis := make([]float64, 2048)
	for i := range axis {
		axis[i] = lo + step*float64(i)
	}
	if dup >= 1 {
		axis[dup] = axis[dup-1]
	}
	b, _ := json.Marshal(axis)
	return string(b)
}

// scanIDsJSON is the JSON array of csvRows' scan ids from..to-1.
func scanIDsJSON(from, to int) string {
	ids := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		ids = append(ids, fmt.Sprintf("scan-%03d", i))
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

func TestTrainingOptionErrors(t *testing.T) {
	base := "http://" + startProcess(t, t.TempDir()).httpAddr
	csv := renderCSV(csvRows(14))
	cases := []struct {
		name, extra string
		code        string
		field       string // the message names it
	}{
		{"unknown step", `"preprocessing":[{"step":"wavelet","level":3}]`, "INVALID_METADATA", "preprocessing"},
		{"step without its name", `"preprocessing":[{"window":5,"polyorder":2}]`, "INVALID_METADATA", "preprocessing"},
		// The schema caps window at 2047, one below the 2048 points: a
		// larger one is a shape error of the meta.
		{"savgol window above the schema's bound", `"preprocessing":[{"step":"savgol","window":4001,"polyorder":2}]`, "INVALID_METADATA", "window"},
		{"savgol window even", `"preprocessing":[{"step":"snv"},{"step":"savgol","window":16,"polyorder":2}]`, "INVALID_TRAINING_OPTIONS", "preprocessing[1].window"},
		{"savgol polyorder not below the window", `"preprocessing":[{"step":"savgol","window":5,"polyorder":5}]`, "INVALID_TRAINING_OPTIONS", "preprocessing[0]"},
		{"savgol deriv above polyorder", `"preprocessing":[{"step":"savgol","window":7,"polyorder":1,"deriv":2}]`, "INVALID_TRAINING_OPTIONS", "preprocessing[0].deriv"},
		{"two als_baseline steps", `"preprocessing":[{"step":"als_baseline"},{"step":"snv"},{"step":"als_baseline","iterations":2}]`, "INVALID_TRAINING_OPTIONS", "preprocessing[2].step"},
		{"savgol windows over 2047 in all", `"preprocessing":[{"step":"savgol","window":2001,"polyorder":2},{"step":"savgol","window":51,"polyorder":2}]`, "INVALID_TRAINING_OPTIONS", "preprocessing[1].window"},
		{"region outside the axis", `"regions":[[600,1800],[3300,3400]]`, "INVALID_TRAINING_OPTIONS", "regions[1]"},
		{"region reversed", `"regions":[[1800,600]]`, "INVALID_TRAINING_OPTIONS", "regions[0]"},
		{"normalize band outside the axis", `"preprocessing":[{"step":"normalize","region":[50,100]}]`, "INVALID_TRAINING_OPTIONS", "preprocessing[0].region"},
		{"fewer rows than folds after exclusion", `"cv_folds":10,"exclude_scan_ids":["scan-001","scan-002","scan-003"]`, "INVALID_TRAINING_OPTIONS", "cv_folds"},
		{"unknown exclude id", `"exclude_scan_ids":["scan-001","scan-999"]`, "INVALID_TRAINING_OPTIONS", "exclude_scan_ids[1]"},
		{"components above the rows", `"components":12`, "INVALID_TRAINING_OPTIONS", "components"},
		{"wavenumbers not increasing", `"wavenumbers":` + linearAxisJSON(200, 1.5, 700), "INVALID_TRAINING_OPTIONS", "wavenumbers[700]"},
		{"wavenumbers too few", `"wavenumbers":[1,2,3]`, "INVALID_METADATA", "wavenumbers"},
		{"misspelt field", `"cv_fold":5`, "INVALID_METADATA", `field "cv_fold" is not a TrainingMeta field`},
		{"two unknown fields", `"zeta":1,"cv_fold":5`, "INVALID_METADATA", `fields "cv_fold", "zeta" are not TrainingMeta fields`},
		{"unknown cv_segments", `"cv_segments":"blocks"`, "INVALID_METADATA", "cv_segments"},
		{"unknown component_rule", `"component_rule":"elbow"`, "INVALID_METADATA", "component_rule"},
		{"cv_folds above the bound", `"cv_folds":100001`, "INVALID_METADATA", "cv_folds"},
		{"annotations over 16 KiB", `"annotations":{"form":"` + strings.Repeat("x", 16<<10) + `"}`, "INVALID_METADATA", "annotations"},
		{"annotations not an object", `"annotations":[1]`, "INVALID_METADATA", "annotations"},
		{"more folds than rows", `"cv_folds":15`, "INVALID_TRAINING_OPTIONS", "cv_folds"},
		{"leave-one-out on too few rows", `"cv_folds":2,"exclude_scan_ids":` + scanIDsJSON(1, 13), "INVALID_TRAINING_OPTIONS", "cv_folds: leave-one-out on 2 rows"},
		{"randomization with one count", `"component_rule":"randomization","max_components":1`, "INVALID_TRAINING_OPTIONS", "component_rule"},
		{"a rule with a fixed count", `"component_rule":"onesigma","components":3`, "INVALID_TRAINING_OPTIONS", "component_rule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := multipartUpload(t, base, bytes.NewReader(csv), optionMeta(tc.extra))
			e := wantError(t, tc.name, http.StatusBadRequest, body, resp.StatusCode, tc.code)
			t.Logf("%s: %s", e.Code, e.Message)
			if !strings.Contains(e.Message, tc.field) {
				t.Errorf("message %q does not name %s", e.Message, tc.field)
			}
			if e.Retryable != nil && *e.Retryable {
				t.Error("an option error is marked retryable")
			}
		})
	}
	// The same CSV with options that apply is accepted (the errors above
	// are the options', not the data's).
	resp, body := multipartUpload(t, base, bytes.NewReader(csv),
		optionMeta(`"cv_folds":4,"components":2,"exclude_scan_ids":["scan-001"],"regions":[[600,1800],[2800,3100]],`+
			`"preprocessing":[{"step":"savgol","window":15,"polyorder":2,"deriv":1},{"step":"snv"}],"wavenumbers":`+linearAxisJSON(200, 3000.0/2047, 0)))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("valid options: %d %s", resp.StatusCode, body)
	}
	t.Logf("accepted %s", body)
	// The job echoes its options but not the 2048-point axis, as
	// TrainingJob.meta says.
	var accepted gen.TrainingJobAccepted
	json.Unmarshal(body, &accepted)
	job := must(gen.NewClientWithResponses(base, gen.WithHTTPClient(validatingDoer{client: httpClient()})))(t)
	got := must(job.GetTrainingJobWithResponse(context.Background(), accepted.JobId))(t).JSON200
	if got == nil || got.Meta == nil || got.Meta.Wavenumbers != nil || got.Meta.Components == nil || *got.Meta.Components != 2 ||
		got.Meta.Regions == nil || got.Meta.Preprocessing == nil || got.Meta.ExcludeScanIds == nil {
		t.Errorf("job meta %+v", got)
	}
}

// TestTrainingDegenerateRowFailsTheJob: a recipe that cannot apply to one
// training row (its normalisation band is all zero) is found only while
// the job runs, so it is the job's failure, not the upload's 400: code
// INVALID_TRAINING_OPTIONS, the message naming the row's scan_id and the
// step, and the code is one TrainingError documents.
func TestTrainingDegenerateRowFailsTheJob(t *testing.T) {
	p := startProcess(t, t.TempDir())
	base := "http://" + p.httpAddr
	rows := csvRows(14)
	axis := trainer.DefaultWavenumbers()
	for j, w := range axis {
		if w >= 990 && w <= 1110 {
			rows[6][1+j] = "0" // rows[6] is scan-005
		}
	}
	resp, body := multipartUpload(t, base, bytes.NewReader(renderCSV(rows)),
		optionMeta(`"cv_folds":3,"preprocessing":[{"step":"normalize","region":[1000,1100]}]`))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	var accepted gen.TrainingJobAccepted
	if err := json.Unmarshal(body, &accepted); err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, p.client(t), accepted.JobId, time.Minute)
	if job.Status != gen.Failed || job.Error == nil || job.Error.Code != "INVALID_TRAINING_OPTIONS" ||
		!strings.Contains(job.Error.Message, "scan-005") || !strings.Contains(job.Error.Message, "preprocessing[0]") {
		t.Fatalf("job %s, error %+v", job.Status, job.Error)
	}
	if d := spec.Components.Schemas["TrainingError"].Value.Properties["code"].Value.Description; !strings.Contains(d, "`"+job.Error.Code+"`") {
		t.Errorf("TrainingError.code does not list %s: %q", job.Error.Code, d)
	}
}

// TestQueuedJobKeepsItsOptionsAcrossRestart: a job queued with options
// behind a running one stays queued over a clean shutdown (SIGTERM; after
// kill -9 its data set is not saved and it reads INTERRUPTED, as the
// contract says): after the restart it trains with the same components,
// folds, exclusions, recipe and regions (the record on disk carries them),
// and the model it stages has them.
func TestQueuedJobKeepsItsOptionsAcrossRestart(t *testing.T) {
	t.Parallel() // its own server or process: runs beside the others
	dir := t.TempDir()
	p := startProcess(t, dir)
	c := p.client(t)
	base := "http://" + p.httpAddr
	resp, body := multipartUpload(t, base, bytes.NewReader(syntheticCSV(t, 33, 1500)), []byte(goodMeta))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("long upload: %d %s", resp.StatusCode, body)
	}
	var long gen.TrainingJobAccepted
	json.Unmarshal(body, &long)
	options := `"components":3,"cv_folds":4,"exclude_scan_ids":["scan-002","scan-009"],` +
		`"preprocessing":[{"step":"savgol","window":11,"polyorder":2,"deriv":1},{"step":"snv"}],"regions":[[600,1800],[2800,3100]]`
	resp, body = multipartUpload(t, base, bytes.NewReader(renderCSV(csvRows(14))), optionMeta(options))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload with options: %d %s", resp.StatusCode, body)
	}
	var queued gen.TrainingJobAccepted
	json.Unmarshal(body, &queued)
	if job := must(c.GetTrainingJobWithResponse(context.Background(), queued.JobId))(t).JSON200; job.Status != gen.Queued {
		t.Fatalf("the job with options is %s, want queued behind the long one", job.Status)
	}
	if err := p.terminate(t); err != nil {
		t.Fatal(err)
	}

	p2 := startProcess(t, dir)
	c2 := p2.client(t)
	job := waitJob(t, c2, queued.JobId, 2*time.Minute)
	if job.Status != gen.Done || job.Result == nil {
		t.Fatalf("the queued job after the restart: %s %+v", job.Status, job.Error)
	}
	res := job.Result
	if sel := res.ComponentSelection; sel == nil || sel.Components != 3 || sel.Folds != 4 || string(sel.Rule) != "fixed" {
		t.Errorf("component selection %+v", res.ComponentSelection)
	}
	if lin := res.Lineage; lin == nil || lin.RowsUsed == nil || *lin.RowsUsed != 12 || lin.ExcludedScanIds == nil || len(*lin.ExcludedScanIds) != 2 {
		t.Errorf("lineage %+v", res.Lineage)
	}
	md := must(c2.GetModelWithResponse(context.Background(), res.NewVersion, nil))(t).JSON200
	if md == nil || md.Regions == nil || len(*md.Regions) != 2 || md.Preprocessing == nil || len(*md.Preprocessing) != 2 {
		t.Fatalf("model %s after the restart: %+v", res.NewVersion, md)
	}
}

// TestTrainingRuleSegmentsAndAnnotations: a job trained with leave-one-out
// (cv_folds equal to the rows), interleaved segments and the
// randomization rule reports them in its component selection and echoes
// them in its meta; its annotations come back unchanged in the job's meta,
// its lineage and the model's lineage, and GET /training leaves them out.
func TestTrainingRuleSegmentsAndAnnotations(t *testing.T) {
	p := startProcess(t, t.TempDir())
	c := p.client(t)
	base := "http://" + p.httpAddr
	annotations := `{"console":{"form":"v2","fields":[1,2]},"ticket":"QA-7"}`
	resp, body := multipartUpload(t, base, bytes.NewReader(renderCSV(csvRows(14))),
		optionMeta(`"cv_folds":14,"cv_segments":"interleaved","component_rule":"randomization","max_components":4,"annotations":`+annotations))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	var accepted gen.TrainingJobAccepted
	if err := json.Unmarshal(body, &accepted); err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, c, accepted.JobId, time.Minute)
	if job.Status != gen.Done || job.Result == nil {
		t.Fatalf("job %s, error %+v", job.Status, job.Error)
	}
	sel := job.Result.ComponentSelection
	if sel == nil || sel.Rule != gen.ComponentSelectionRuleRandomization || sel.CvSegments == nil ||
		*sel.CvSegments != gen.ComponentSelectionCvSegmentsInterleaved || sel.Folds != 14 || sel.MaxComponents != 4 {
		t.Errorf("component selection %+v", sel)
	}
	m := job.Meta
	if m == nil || m.CvFolds == nil || *m.CvFolds != 14 || m.CvSegments == nil || *m.CvSegments != gen.TrainingMetaCvSegmentsInterleaved ||
		m.ComponentRule == nil || *m.ComponentRule != gen.TrainingMetaComponentRuleRandomization {
		t.Errorf("job meta %+v", m)
	}
	same := func(where string, got *map[string]any) {
		t.Helper()
		var want map[string]any
		json.Unmarshal([]byte(annotations), &want)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if got == nil || string(gb) != string(wb) {
			t.Errorf("%s annotations %s, want %s", where, gb, wb)
		}
	}
	same("job meta", m.Annotations)
	same("job lineage", job.Result.Lineage.Annotations)
	md := must(c.GetModelWithResponse(context.Background(), job.Result.NewVersion, nil))(t).JSON200
	if md == nil {
		t.Fatal("no model detail")
	}
	same("model lineage", md.Lineage.Annotations)
	list := must(c.ListTrainingJobsWithResponse(context.Background(), nil))(t).JSON200
	if list == nil || len(list.Jobs) != 1 || list.Jobs[0].Meta == nil || list.Jobs[0].Meta.Annotations != nil ||
		list.Jobs[0].Result == nil || list.Jobs[0].Result.Lineage.Annotations != nil {
		t.Errorf("GET /training lists annotations: %+v", list)
	}
}
