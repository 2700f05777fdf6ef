package conformance

import (
	"bytes"
	"encoding/json"
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
		{"region outside the axis", `"regions":[[600,1800],[3300,3400]]`, "INVALID_TRAINING_OPTIONS", "regions[1]"},
		{"region reversed", `"regions":[[1800,600]]`, "INVALID_TRAINING_OPTIONS", "regions[0]"},
		{"normalize band outside the axis", `"preprocessing":[{"step":"normalize","region":[50,100]}]`, "INVALID_TRAINING_OPTIONS", "preprocessing[0].region"},
		{"fewer rows than folds after exclusion", `"cv_folds":10,"exclude_scan_ids":["scan-001","scan-002","scan-003"]`, "INVALID_TRAINING_OPTIONS", "cv_folds"},
		{"unknown exclude id", `"exclude_scan_ids":["scan-001","scan-999"]`, "INVALID_TRAINING_OPTIONS", "exclude_scan_ids[1]"},
		{"components above the rows", `"components":12`, "INVALID_TRAINING_OPTIONS", "components"},
		{"wavenumbers not increasing", `"wavenumbers":` + linearAxisJSON(200, 1.5, 700), "INVALID_TRAINING_OPTIONS", "wavenumbers[700]"},
		{"wavenumbers too few", `"wavenumbers":[1,2,3]`, "INVALID_METADATA", "wavenumbers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := multipartUpload(t, base, bytes.NewReader(csv), optionMeta(tc.extra))
			e := wantError(t, tc.name, http.StatusBadRequest, body, resp.StatusCode, tc.code)
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
