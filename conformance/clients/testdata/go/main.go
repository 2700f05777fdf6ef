// Command smoke exercises the Go client that oapi-codegen generates from
// api/openapi.yaml with its defaults (-generate types,client): every
// endpoint of the contract once (the training upload twice), a multipart
// upload streamed from an io.Reader, and the error envelope of the
// failures. clients_test.go copies it into a scratch module beside the
// generated package ramanapi and runs it as: smoke BASE_URL TRAINING_CSV,
// with the server's bearer token in RAMANSERVE_TOKEN (and its name, which
// the server records as authenticated_as, in RAMANSERVE_TOKEN_NAME).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"time"

	"smoke/ramanapi"
)

// smoke counts calls and errors and prints one line per call.
type smoke struct{ calls, errors int }

// call counts one call and prints its line; a status other than want is
// an error, and the line then shows the start of the body.
func (s *smoke) call(label string, status int, body []byte, want int, detail string) bool {
	s.calls++
	line := fmt.Sprintf("%s -> %d", label, status)
	if detail != "" {
		line += " " + detail
	}
	if status != want {
		s.errors++
		line += fmt.Sprintf(" (want %d) %.160s", want, bytes.TrimSpace(body))
	}
	fmt.Println(line)
	return status == want
}

func (s *smoke) fail(label, format string, args ...any) {
	s.errors++
	fmt.Printf("%s: %s\n", label, fmt.Sprintf(format, args...))
}

// envelope checks the error envelope of a failing call.
func (s *smoke) envelope(label string, e *ramanapi.ErrorResponse, code string, retryable bool) {
	switch {
	case e == nil:
		s.fail(label, "no error envelope")
	case e.Code != code || e.Message == "" || e.Retryable == nil || *e.Retryable != retryable:
		s.fail(label, "envelope %+v, want code %s, a message, retryable %v", *e, code, retryable)
	}
}

func codeOf(e *ramanapi.ErrorResponse) string {
	if e == nil {
		return ""
	}
	return e.Code
}

// upload streams the CSV file and the metadata as multipart/form-data
// through a pipe: the body is an io.Reader, never held whole in memory.
func upload(ctx context.Context, c *ramanapi.ClientWithResponses, csvPath string, meta ramanapi.TrainingMeta) (*ramanapi.StartTrainingResponse, error) {
	f, err := os.Open(csvPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(writeParts(mw, f, meta))
	}()
	return c.StartTrainingWithBodyWithResponse(ctx, nil, mw.FormDataContentType(), pr)
}

func writeParts(mw *multipart.Writer, csv io.Reader, meta ramanapi.TrainingMeta) error {
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="meta"`},
		"Content-Type":        {"application/json"},
	})
	if err != nil {
		return err
	}
	if err := json.NewEncoder(part).Encode(meta); err != nil {
		return err
	}
	part, err = mw.CreateFormFile("csv", "training.csv")
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, csv); err != nil {
		return err
	}
	return mw.Close()
}

// reviewRecipe is a recipe built from the generated union type: a
// Savitzky-Golay first derivative, then SNV, on two wavenumber regions.
func reviewRecipe(meta *ramanapi.TrainingMeta) error {
	deriv := 1
	var savgol, snv ramanapi.PreprocessingStep
	if err := savgol.FromSavgolStep(ramanapi.SavgolStep{Step: ramanapi.Savgol, Window: 15, Polyorder: 2, Deriv: &deriv}); err != nil {
		return err
	}
	if err := snv.FromSnvStep(ramanapi.SnvStep{Step: ramanapi.Snv}); err != nil {
		return err
	}
	steps := []ramanapi.PreprocessingStep{savgol, snv}
	regions := []ramanapi.WavenumberRegion{{600, 1800}, {2800, 3100}}
	meta.Preprocessing, meta.Regions = &steps, &regions
	return nil
}

// train uploads the CSV, polls the job to its end and returns its id and
// the staged version ("" when it did not end done).
func (s *smoke) train(ctx context.Context, c *ramanapi.ClientWithResponses, csvPath string, meta ramanapi.TrainingMeta) (job, version string) {
	up, err := upload(ctx, c, csvPath, meta)
	if err != nil {
		s.fail("POST /training/start", "%v", err)
		return "", ""
	}
	if !s.call("POST /training/start", up.StatusCode(), up.Body, http.StatusAccepted, "") || up.JSON202 == nil {
		return "", ""
	}
	job = up.JSON202.JobId
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		got, err := c.GetTrainingJobWithResponse(ctx, job)
		if err != nil {
			s.fail("GET /training/{jobId}", "%v", err)
			return job, ""
		}
		if got.JSON200 == nil || got.JSON200.Status == ramanapi.Done || got.JSON200.Status == ramanapi.Failed || time.Now().After(deadline) {
			status := "<none>"
			if got.JSON200 != nil {
				status = string(got.JSON200.Status)
			}
			s.call("GET /training/{jobId}", got.StatusCode(), got.Body, http.StatusOK, status)
			if got.JSON200 == nil || got.JSON200.Status != ramanapi.Done || got.JSON200.Result == nil {
				s.fail("GET /training/{jobId}", "job ended %s: %s", status, got.Body)
				return job, ""
			}
			if r := got.JSON200.Result; r.ComponentSelection == nil || r.CvCurve == nil || len(*r.CvCurve) < r.ComponentSelection.Components {
				s.fail("GET /training/{jobId}", "result without its component selection and CV curve: %s", got.Body)
			}
			return job, got.JSON200.Result.NewVersion
		}
	}
}

func run(ctx context.Context, s *smoke, base, csvPath string) error {
	token, tokenName := os.Getenv("RAMANSERVE_TOKEN"), os.Getenv("RAMANSERVE_TOKEN_NAME")
	var opts []ramanapi.ClientOption
	if token != "" {
		if err := refusedWithoutToken(ctx, s, base); err != nil {
			return err
		}
		// oapi-codegen generates no security configuration for clients:
		// the generated client's request editor sends the bearerAuth
		// scheme's header.
		opts = append(opts, ramanapi.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	}
	c, err := ramanapi.NewClientWithResponses(base, opts...)
	if err != nil {
		return err
	}

	health, err := c.GetHealthWithResponse(ctx)
	if err != nil {
		return err
	}
	if s.call("GET /health", health.StatusCode(), health.Body, http.StatusOK, "") && health.JSON200.Status != ramanapi.Ok {
		s.fail("GET /health", "status %s", health.JSON200.Status)
	}

	yaml, err := c.GetOpenAPIYAMLWithResponse(ctx)
	if err != nil {
		return err
	}
	if s.call("GET /openapi.yaml", yaml.StatusCode(), yaml.Body, http.StatusOK, "") && (yaml.YAML200 == nil || (*yaml.YAML200)["openapi"] == nil) {
		s.fail("GET /openapi.yaml", "not the contract: %.80s", yaml.Body)
	}
	json, err := c.GetOpenAPIJSONWithResponse(ctx)
	if err != nil {
		return err
	}
	if s.call("GET /openapi.json", json.StatusCode(), json.Body, http.StatusOK, "") && (json.JSON200 == nil || (*json.JSON200)["openapi"] == nil) {
		s.fail("GET /openapi.json", "not the contract: %.80s", json.Body)
	}

	noModel, err := c.GetModelInfoWithResponse(ctx, nil)
	if err != nil {
		return err
	}
	s.call("GET /model/info", noModel.StatusCode(), noModel.Body, http.StatusNotFound, codeOf(noModel.JSON404))
	s.envelope("GET /model/info", noModel.JSON404, "MODEL_NOT_LOADED", false)

	jobA, a := s.train(ctx, c, csvPath, ramanapi.TrainingMeta{Operator: "smoke", SourceBatches: &[]string{"smoke-a"}})
	metaB := ramanapi.TrainingMeta{Operator: "smoke", SourceBatches: &[]string{"smoke-b"}}
	if err := reviewRecipe(&metaB); err != nil {
		return err
	}
	jobB, b := s.train(ctx, c, csvPath, metaB)

	limit := 1
	page1, err := c.ListTrainingJobsWithResponse(ctx, &ramanapi.ListTrainingJobsParams{Limit: &limit})
	if err != nil {
		return err
	}
	if s.call("GET /training", page1.StatusCode(), page1.Body, http.StatusOK, "") {
		p := page1.JSON200
		if len(p.Jobs) != 1 || p.Jobs[0].JobId != jobB || p.NextCursor == nil {
			s.fail("GET /training", "first page %s, want job %s and a cursor", page1.Body, jobB)
		} else {
			page2, err := c.ListTrainingJobsWithResponse(ctx, &ramanapi.ListTrainingJobsParams{Limit: &limit, Cursor: p.NextCursor})
			if err != nil {
				return err
			}
			if s.call("GET /training?cursor", page2.StatusCode(), page2.Body, http.StatusOK, "") &&
				(len(page2.JSON200.Jobs) != 1 || page2.JSON200.Jobs[0].JobId != jobA) {
				s.fail("GET /training?cursor", "second page %s, want job %s", page2.Body, jobA)
			}
		}
	}

	list, err := c.ListModelsWithResponse(ctx, nil)
	if err != nil {
		return err
	}
	if s.call("GET /model/list", list.StatusCode(), list.Body, http.StatusOK, "") && len(list.JSON200.Models) != 2 {
		s.fail("GET /model/list", "%d models, want 2", len(list.JSON200.Models))
	}

	detail, err := c.GetModelWithResponse(ctx, a, nil)
	if err != nil {
		return err
	}
	if s.call("GET /model/{version}", detail.StatusCode(), detail.Body, http.StatusOK, "") {
		lin := detail.JSON200.Lineage
		if lin.Operator == nil || *lin.Operator != "smoke" || (tokenName != "") != (lin.AuthenticatedAs != nil) || (lin.AuthenticatedAs != nil && *lin.AuthenticatedAs != tokenName) {
			s.fail("GET /model/{version}", "lineage %s, want operator smoke, authenticated_as %q", detail.Body, tokenName)
		}
	}
	withRecipe, err := c.GetModelWithResponse(ctx, b, nil)
	if err != nil {
		return err
	}
	if s.call("GET /model/{version} (recipe)", withRecipe.StatusCode(), withRecipe.Body, http.StatusOK, "") {
		d := withRecipe.JSON200
		if d.Preprocessing == nil || len(*d.Preprocessing) != 2 || d.Regions == nil || len(*d.Regions) != 2 {
			s.fail("GET /model/{version} (recipe)", "recipe and regions not reported: %s", withRecipe.Body)
		} else if st, err := (*d.Preprocessing)[0].AsSavgolStep(); err != nil || st.Window != 15 {
			s.fail("GET /model/{version} (recipe)", "first step %+v (%v), want savgol window 15", st, err)
		}
	}

	report, err := c.GetModelReportWithResponse(ctx, b, nil)
	if err != nil {
		return err
	}
	if s.call("GET /model/{version}/report", report.StatusCode(), report.Body, http.StatusOK, report.HTTPResponse.Header.Get("Content-Type")) &&
		(!strings.HasPrefix(report.HTTPResponse.Header.Get("Content-Type"), "text/html") || !bytes.Contains(report.Body, []byte("<svg"))) {
		s.fail("GET /model/{version}/report", "not an HTML page with plots: %.80s", report.Body)
	}

	// Source left out: absent means staged.
	load, err := c.LoadModelWithResponse(ctx, nil, ramanapi.LoadModelJSONRequestBody{Version: a})
	if err != nil {
		return err
	}
	if s.call("POST /model/load", load.StatusCode(), load.Body, http.StatusOK, "") && (load.JSON200 == nil || load.JSON200.LoadedVersion != a) {
		s.fail("POST /model/load", "answer %s, want loaded_version %s", load.Body, a)
	}

	info, err := c.GetModelInfoWithResponse(ctx, nil)
	if err != nil {
		return err
	}
	if s.call("GET /model/info", info.StatusCode(), info.Body, http.StatusOK, "") && info.JSON200.ActiveVersion != a {
		s.fail("GET /model/info", "active %s, want %s", info.JSON200.ActiveVersion, a)
	}

	active, err := c.DeleteModelWithResponse(ctx, a)
	if err != nil {
		return err
	}
	s.call("DELETE /model/{version} (active)", active.StatusCode(), active.Body, http.StatusConflict, codeOf(active.JSON409))
	s.envelope("DELETE /model/{version}", active.JSON409, "MODEL_ACTIVE", false)

	del, err := c.DeleteModelWithResponse(ctx, b)
	if err != nil {
		return err
	}
	s.call("DELETE /model/{version}", del.StatusCode(), del.Body, http.StatusNoContent, "")

	gone, err := c.GetModelWithResponse(ctx, b, nil)
	if err != nil {
		return err
	}
	s.call("GET /model/{version} (deleted)", gone.StatusCode(), gone.Body, http.StatusNotFound, codeOf(gone.JSON404))
	s.envelope("GET /model/{version}", gone.JSON404, "MODEL_NOT_FOUND", false)

	orphan, err := c.GetTrainingReportWithResponse(ctx, jobB, nil)
	if err != nil {
		return err
	}
	s.call("GET /training/{jobId}/report (model deleted)", orphan.StatusCode(), orphan.Body, http.StatusNotFound, codeOf(orphan.JSON404))
	s.envelope("GET /training/{jobId}/report", orphan.JSON404, "MODEL_NOT_FOUND", false)

	jobReport, err := c.GetTrainingReportWithResponse(ctx, jobA, nil)
	if err != nil {
		return err
	}
	if s.call("GET /training/{jobId}/report", jobReport.StatusCode(), jobReport.Body, http.StatusOK, "") && !bytes.Contains(jobReport.Body, []byte("<svg")) {
		s.fail("GET /training/{jobId}/report", "no plot in %.80s", jobReport.Body)
	}

	finished, err := c.CancelTrainingJobWithResponse(ctx, jobA)
	if err != nil {
		return err
	}
	s.call("POST /training/{jobId}/cancel (done)", finished.StatusCode(), finished.Body, http.StatusConflict, codeOf(finished.JSON409))
	s.envelope("POST /training/{jobId}/cancel", finished.JSON409, "JOB_FINISHED", false)

	unknown, err := c.CancelTrainingJobWithResponse(ctx, "no-such-job")
	if err != nil {
		return err
	}
	s.call("POST /training/{jobId}/cancel (unknown)", unknown.StatusCode(), unknown.Body, http.StatusNotFound, codeOf(unknown.JSON404))
	s.envelope("POST /training/{jobId}/cancel", unknown.JSON404, "JOB_NOT_FOUND", false)
	return nil
}

// refusedWithoutToken: with authentication on, a call without the token
// is 401 UNAUTHORIZED with the Bearer challenge.
func refusedWithoutToken(ctx context.Context, s *smoke, base string) error {
	anonymous, err := ramanapi.NewClientWithResponses(base)
	if err != nil {
		return err
	}
	refused, err := anonymous.ListModelsWithResponse(ctx, nil)
	if err != nil {
		return err
	}
	s.call("GET /model/list (no token)", refused.StatusCode(), refused.Body, http.StatusUnauthorized, codeOf(refused.JSON401))
	s.envelope("GET /model/list (no token)", refused.JSON401, "UNAUTHORIZED", false)
	if got := refused.HTTPResponse.Header.Get("WWW-Authenticate"); got != `Bearer realm="ramanserve"` {
		s.fail("GET /model/list (no token)", "WWW-Authenticate %q", got)
	}
	return nil
}

func main() {
	if len(os.Args) != 3 || !strings.HasPrefix(os.Args[1], "http") {
		fmt.Fprintln(os.Stderr, "usage: [RAMANSERVE_TOKEN=... RAMANSERVE_TOKEN_NAME=...] smoke BASE_URL TRAINING_CSV")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := &smoke{}
	if err := run(ctx, s, os.Args[1], os.Args[2]); err != nil {
		s.fail("smoke", "%v", err)
	}
	fmt.Printf("smoke: %d calls, %d errors\n", s.calls, s.errors)
	if s.errors > 0 {
		os.Exit(1)
	}
}
