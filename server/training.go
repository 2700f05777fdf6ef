package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime/multipart"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"ramanserve/gen"
	"ramanserve/server/contract"
	"ramanserve/service/training"
	"ramanserve/trainer"
	"ramanserve/trainer/csvdata"
	"ramanserve/trainer/jobs"
)

// TrainingService is the training job queue (*training.Service).
type TrainingService interface {
	// Reserve takes a queue slot for an upload before its body is read.
	// It fails at once with jobs.ErrQueueFull when none is free.
	Reserve(ctx context.Context) (training.Upload, error)
	// Get reports a job; jobs.ErrJobNotFound for an unknown id.
	Get(ctx context.Context, id string) (jobs.Job, error)
	// List lists jobs newest first, one page of at most limit after
	// cursor, only those in status when it is not empty;
	// jobs.ErrInvalidCursor for a cursor the server did not issue.
	List(status jobs.Status, limit int, cursor string) (jobs.Page, error)
	// Cancel ends a queued or running job as failed/CANCELLED;
	// jobs.ErrJobFinished when it already ended.
	Cancel(ctx context.Context, id string) (jobs.Job, error)
}

// maxMetaBytes bounds the meta part; TrainingMeta's own bounds fit in it.
const maxMetaBytes = 1 << 20

var errTrainingUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "training is not available in this build")

// StartTraining reads the multipart upload as it streams in. Before any
// of the body is read it takes a queue slot, so a full queue is answered
// 429 at once; then meta is decoded and validated against the TrainingMeta
// schema, the CSV is parsed row by row into the numeric matrix (the raw
// upload is never held) charging the training memory budget block by
// block, and the first bad row ends the request with INVALID_CSV, the
// first block over the budget with PAYLOAD_TOO_LARGE.
func (a *API) StartTraining(ctx context.Context, req gen.StartTrainingRequestObject) (gen.StartTrainingResponseObject, error) {
	if a.Training == nil {
		return nil, errTrainingUnavailable
	}
	key := deref(req.Params.IdempotencyKey)
	if req.Params.IdempotencyKey != nil && !jobs.ValidKey(key) {
		return nil, contract.New(contract.InvalidRequest, http.StatusBadRequest,
			fmt.Sprintf("header Idempotency-Key: 1 to %d characters of printable ASCII without space, not %d bytes", jobs.MaxKeyBytes, len(key)))
	}
	slot, err := a.Training.Reserve(ctx)
	if err != nil {
		return nil, err
	}
	defer slot.Release()
	// A disk that cannot take the model is 507 now, not after the upload.
	if a.Registry != nil {
		if err := a.writeProbe.check(a.Registry.Writable); err != nil {
			return nil, err
		}
	}
	var (
		meta    *gen.TrainingMeta
		ds      *trainer.Dataset
		csvSum  string
		request requestDigest
	)
	for {
		part, err := req.Body.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, uploadError(err)
		}
		content := request.part(part)
		switch part.FormName() {
		case "meta":
			if meta, err = a.decodeMeta(part, content); err != nil {
				return nil, err
			}
		case "csv":
			if ds != nil {
				return nil, contract.New(contract.InvalidRequest, http.StatusBadRequest, "the upload has more than one csv part")
			}
			if ds, csvSum, err = readCSVPart(ctx, io.TeeReader(part, content), slot); err != nil {
				return nil, uploadError(err)
			}
		default:
			// Unknown parts are skipped, within the upload limit.
			if _, err := io.Copy(content, part); err != nil {
				return nil, uploadError(err)
			}
		}
		part.Close()
	}
	switch {
	case meta == nil && ds == nil:
		return nil, contract.New(contract.MissingPart, http.StatusBadRequest, "the upload has neither a csv nor a meta part")
	case meta == nil:
		return nil, contract.New(contract.MissingPart, http.StatusBadRequest, "the upload has no meta part")
	case ds == nil:
		return nil, contract.New(contract.MissingPart, http.StatusBadRequest, "the upload has no csv part")
	}
	jm, err := jobMeta(ctx, *meta, csvSum)
	if err != nil {
		return nil, err
	}
	j, err := slot.Submit(ctx, ds, jm, training.Once{Key: key, RequestHash: request.sum()})
	if err != nil {
		return nil, err
	}
	body := acceptedJob(&j)
	return gen.StartTraining202JSONResponse{Body: body, Headers: gen.StartTraining202ResponseHeaders{Location: body.StatusUrl}}, nil
}

// requestDigest is the SHA-256 of an upload as received, the digest an
// Idempotency-Key is held with: for each part in order, its form name,
// content type and the digest of its bytes, each length-prefixed, so
// that no two different uploads share a digest by moving bytes between
// fields. It holds 2 digests whatever the upload's size.
type requestDigest struct {
	all  hash.Hash
	open hash.Hash // the current part's bytes
}

// part starts a part and returns the writer its bytes go to.
func (d *requestDigest) part(p *multipart.Part) io.Writer {
	if d.all == nil {
		d.all = sha256.New()
	}
	d.closePart()
	for _, field := range []string{p.FormName(), p.Header.Get("Content-Type")} {
		fmt.Fprintf(d.all, "%d:%s", len(field), field)
	}
	d.open = sha256.New()
	return d.open
}

func (d *requestDigest) closePart() {
	if d.open != nil {
		d.all.Write(d.open.Sum(nil))
		d.open = nil
	}
}

// sum is the hex digest of every part seen.
func (d *requestDigest) sum() string {
	if d.all == nil {
		d.all = sha256.New()
	}
	d.closePart()
	return hex.EncodeToString(d.all.Sum(nil))
}

// readCSVPart parses the csv part as it streams in, hashing the bytes as
// they pass (no copy of the body is kept): the hex SHA-256 is of the part
// exactly as uploaded, to its last byte.
func readCSVPart(ctx context.Context, part io.Reader, slot trainer.Charger) (*trainer.Dataset, string, error) {
	h := sha256.New()
	tee := io.TeeReader(part, h)
	ds, err := csvdata.Read(ctx, tee, csvdata.Options{Charger: slot})
	if err != nil {
		return nil, "", err
	}
	// The reader stops at the end of the data; whatever it left unread
	// belongs to the part too.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return nil, "", err
	}
	return ds, hex.EncodeToString(h.Sum(nil)), nil
}

// decodeMeta reads the meta part and validates it against TrainingMeta.
// content hears the part's bytes as read (the request's digest).
func (a *API) decodeMeta(part *multipart.Part, content io.Writer) (*gen.TrainingMeta, error) {
	if ct := part.Header.Get("Content-Type"); ct != "" && !isJSONMediaType(ct) {
		return nil, contract.New(contract.InvalidMetadata, http.StatusBadRequest,
			fmt.Sprintf("the meta part must be application/json, not %q", ct))
	}
	b, err := io.ReadAll(io.LimitReader(part, maxMetaBytes+1))
	if err != nil {
		return nil, uploadError(err)
	}
	content.Write(b)
	if len(b) > maxMetaBytes {
		return nil, contract.New(contract.InvalidMetadata, http.StatusBadRequest, "the meta part is larger than 1 MiB")
	}
	return a.parseMeta(b)
}

// parseMeta parses and validates the meta part's bytes: JSON, no field
// TrainingMeta does not define, the schema, the annotations' size.
func (a *API) parseMeta(b []byte) (*gen.TrainingMeta, error) {
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return nil, contract.New(contract.InvalidMetadata, http.StatusBadRequest, "meta is not valid JSON: "+err.Error())
	}
	if a.metaSchema != nil {
		if unknown := unknownFields(a.metaSchema, generic); len(unknown) > 0 {
			return nil, contract.New(contract.InvalidMetadata, http.StatusBadRequest, "meta: "+unknownFieldsMessage(unknown))
		}
		if err := a.metaSchema.VisitJSON(generic); err != nil {
			msg := err.Error()
			var se *openapi3.SchemaError
			if errors.As(err, &se) {
				msg = schemaMessage(nil, se)
				if why, ok := explainStep(a.metaSchema, generic, se); ok {
					msg = why
				}
			}
			return nil, contract.New(contract.InvalidMetadata, http.StatusBadRequest, "meta: "+msg)
		}
	}
	var meta gen.TrainingMeta
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, contract.New(contract.InvalidMetadata, http.StatusBadRequest, "meta: "+err.Error())
	}
	if a, err := compactAnnotations(meta.Annotations); err != nil || len(a) > maxAnnotationBytes {
		return nil, contract.New(contract.InvalidMetadata, http.StatusBadRequest,
			fmt.Sprintf("meta: field \"annotations\": %d bytes as compact JSON, at most %d", len(a), maxAnnotationBytes))
	}
	return &meta, nil
}

// maxAnnotationBytes bounds TrainingMeta.annotations as compact JSON: they
// are kept in every job record and in the registry's index entry of the
// model, which stay small.
const maxAnnotationBytes = 16 << 10

// compactAnnotations is TrainingMeta.annotations as compact JSON, as the
// job and the registry keep them; nil for none.
func compactAnnotations(a *map[string]any) (json.RawMessage, error) {
	if a == nil {
		return nil, nil
	}
	return json.Marshal(*a)
}

// contractAnnotations is stored annotations as the contract's object; nil
// for none, or for JSON that is not an object (a record edited by hand),
// which is left out rather than failing the rest.
func contractAnnotations(stored json.RawMessage) *map[string]any {
	if len(stored) == 0 {
		return nil
	}
	var a map[string]any
	if err := json.Unmarshal(stored, &a); err != nil || a == nil {
		return nil
	}
	return &a
}

// unknownFields lists, sorted, the keys of the meta object that its
// schema does not define. The schema refuses them too, but names only the
// first, in no fixed order; a client fixing a misspelt option wants all.
func unknownFields(schema *openapi3.Schema, doc any) []string {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	var unknown []string
	for k := range obj {
		if _, known := schema.Properties[k]; !known {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return unknown
}

// unknownFieldsMessage names the unknown fields (at most 8, each clipped)
// and where a console's own data belongs.
func unknownFieldsMessage(unknown []string) string {
	const most = 8
	quoted := make([]string, 0, min(len(unknown), most))
	for _, k := range unknown[:min(len(unknown), most)] {
		quoted = append(quoted, strconv.Quote(clipText(k, 64)))
	}
	list := strings.Join(quoted, ", ")
	if len(unknown) > most {
		list += fmt.Sprintf(" and %d more", len(unknown)-most)
	}
	if len(unknown) == 1 {
		return fmt.Sprintf("field %s is not a TrainingMeta field; a console's own data goes in \"annotations\"", list)
	}
	return fmt.Sprintf("fields %s are not TrainingMeta fields; a console's own data goes in \"annotations\"", list)
}

// schemaMessage says which field a schema error is about: `field "a.0.b":
// reason`, the path prefixed with prefix.
func schemaMessage(prefix []string, se *openapi3.SchemaError) string {
	if field := strings.Join(append(prefix, se.JSONPointer()...), "."); field != "" {
		return fmt.Sprintf("field %q: %s", field, se.Reason)
	}
	return se.Reason
}

// explainStep turns the schema's verdict on a preprocessing step, "value
// doesn't match any schema from oneOf", into what is wrong with it: a
// missing or unknown `step` name (listing the known ones), or the reason
// the schema its `step` names gives (for example the window's maximum).
// ok is false when se is not about one step of preprocessing.
func explainStep(meta *openapi3.Schema, doc any, se *openapi3.SchemaError) (string, bool) {
	path := se.JSONPointer()
	if len(path) != 2 || path[0] != "preprocessing" {
		return "", false
	}
	prop := meta.Properties["preprocessing"]
	if prop == nil || prop.Value == nil || prop.Value.Items == nil || prop.Value.Items.Value == nil {
		return "", false
	}
	steps := prop.Value.Items.Value
	if steps.Discriminator == nil {
		return "", false
	}
	list, _ := doc.(map[string]any)["preprocessing"].([]any)
	k, err := strconv.Atoi(path[1])
	if err != nil || k < 0 || k >= len(list) {
		return "", false
	}
	item, ok := list[k].(map[string]any)
	if !ok {
		return "", false
	}
	known := make([]string, 0, len(steps.Discriminator.Mapping))
	for name := range steps.Discriminator.Mapping {
		known = append(known, name)
	}
	sort.Strings(known)
	field := fmt.Sprintf("preprocessing.%d.step", k)
	name, isString := item["step"].(string)
	ref, found := steps.Discriminator.Mapping[name]
	switch {
	case item["step"] == nil:
		return fmt.Sprintf("field %q: missing; a step is one of %s", field, strings.Join(known, ", ")), true
	case !isString || !found:
		b, _ := json.Marshal(item["step"])
		return fmt.Sprintf("field %q: %s is not a preprocessing step (one of %s)", field, clipText(string(b), 64), strings.Join(known, ", ")), true
	}
	schema := ref.Value
	for _, one := range steps.OneOf {
		if schema == nil && one.Ref == ref.Ref {
			schema = one.Value
		}
	}
	if schema != nil {
		var inner *openapi3.SchemaError
		if errors.As(schema.VisitJSON(item), &inner) {
			return schemaMessage([]string{"preprocessing", path[1]}, inner), true
		}
	}
	return "", false
}

// clipText shortens s to at most n bytes for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// uploadError classifies a failure while reading the upload.
func uploadError(err error) error {
	var (
		tooLarge *http.MaxBytesError
		tooSlow  *slowUploadError
	)
	switch {
	case errors.As(err, &tooLarge):
		return contract.New(contract.PayloadTooLarge, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the upload exceeds the %d-byte limit", tooLarge.Limit))
	case errors.As(err, &tooSlow):
		return contract.New(contract.RequestTimeout, http.StatusRequestTimeout, tooSlow.Error())
	case isBodyTimeout(err):
		return errBodyTimeout
	case errors.Is(err, trainer.ErrInvalidCSV), errors.Is(err, trainer.ErrCSVTooLarge), errors.Is(err, trainer.ErrMemoryBusy),
		errors.Is(err, context.Canceled):
		return err
	}
	return contract.New(contract.InvalidRequest, http.StatusBadRequest, "malformed multipart body: "+err.Error())
}

// GetTrainingJob reports a training job.
func (a *API) GetTrainingJob(ctx context.Context, req gen.GetTrainingJobRequestObject) (gen.GetTrainingJobResponseObject, error) {
	if a.Training == nil {
		return nil, errTrainingUnavailable
	}
	j, err := a.Training.Get(ctx, req.JobId)
	if err != nil {
		return nil, err
	}
	return gen.GetTrainingJob200JSONResponse(trainingJob(&j, time.Now())), nil
}

// ListTrainingJobs lists jobs newest first, one page at a time.
func (a *API) ListTrainingJobs(ctx context.Context, req gen.ListTrainingJobsRequestObject) (gen.ListTrainingJobsResponseObject, error) {
	if a.Training == nil {
		return nil, errTrainingUnavailable
	}
	limit, cursor := 0, ""
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	if req.Params.Cursor != nil {
		cursor = *req.Params.Cursor
	}
	var status jobs.Status
	if req.Params.Status != nil {
		status = jobs.Status(*req.Params.Status)
	}
	page, err := a.Training.List(status, limit, cursor)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := gen.TrainingJobList{Jobs: make([]gen.TrainingJob, 0, len(page.Jobs))}
	for i := range page.Jobs {
		out.Jobs = append(out.Jobs, listedJob(trainingJob(&page.Jobs[i], now)))
	}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	return gen.ListTrainingJobs200JSONResponse(out), nil
}

// CancelTrainingJob cancels a queued or running job.
func (a *API) CancelTrainingJob(ctx context.Context, req gen.CancelTrainingJobRequestObject) (gen.CancelTrainingJobResponseObject, error) {
	if a.Training == nil {
		return nil, errTrainingUnavailable
	}
	j, err := a.Training.Cancel(ctx, req.JobId)
	if err != nil {
		return nil, err
	}
	return gen.CancelTrainingJob200JSONResponse(trainingJob(&j, time.Now())), nil
}

// jobMeta is the job record's meta of an upload's TrainingMeta: the
// declared operator and lineage, the token's name from the request's
// context (the web layer's token gate), and the training options.
func jobMeta(ctx context.Context, meta gen.TrainingMeta, csvSHA256 string) (jobs.Meta, error) {
	opts, err := trainingOptions(meta)
	if err != nil {
		return jobs.Meta{}, err
	}
	jm := jobs.Meta{Operator: meta.Operator, AuthenticatedAs: authenticatedAs(ctx), CSVSHA256: csvSHA256, Options: opts}
	if meta.SourceBatches != nil {
		jm.SourceBatches = *meta.SourceBatches
	}
	if meta.Notes != nil {
		jm.Notes = *meta.Notes
	}
	if jm.Annotations, err = compactAnnotations(meta.Annotations); err != nil {
		return jobs.Meta{}, err
	}
	return jm, nil
}

// acceptedJob is the 202 of a queued job.
func acceptedJob(j *jobs.Job) gen.TrainingJobAccepted {
	est := j.EstimatedSeconds
	url := "/training/" + j.ID
	return gen.TrainingJobAccepted{JobId: j.ID, EstimatedDurationSeconds: &est, StatusUrl: &url}
}

// trainingJob converts a job record to the contract's TrainingJob, its
// elapsed time as of now.
func trainingJob(j *jobs.Job, now time.Time) gen.TrainingJob {
	elapsed := int(j.Elapsed(now).Seconds())
	out := gen.TrainingJob{JobId: j.ID, Status: gen.TrainingJobStatus(j.Status), Progress: j.Progress, ElapsedSeconds: &elapsed,
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, Samples: ptr(j.Samples), AuthenticatedAs: optional(j.Meta.AuthenticatedAs)}
	if !j.SubmittedAt.IsZero() {
		out.SubmittedAt = ptr(j.SubmittedAt)
	}
	if j.Attempts > 0 {
		out.Attempts = ptr(j.Attempts)
	}
	if j.Meta.Operator != "" {
		meta := gen.TrainingMeta{Operator: j.Meta.Operator, Notes: optional(j.Meta.Notes)}
		if len(j.Meta.SourceBatches) > 0 {
			meta.SourceBatches = ptr(j.Meta.SourceBatches)
		}
		echoTrainingOptions(&meta, j.Meta.Options)
		meta.Annotations = contractAnnotations(j.Meta.Annotations)
		out.Meta = &meta
	}
	if j.Result != nil {
		out.Result = trainingResult(j)
	}
	if j.Error != nil {
		out.Error = &gen.TrainingError{Code: j.Error.Code, Message: j.Error.Message}
	}
	out.Kind = ptr(gen.TrainingJobKind(j.KindOf()))
	out.Rescore = rescoreSpec(j)
	return out
}

// trainingOptions takes TrainingMeta's training options for the job
// record. Their checks against the data and the axis are the trainer's
// (jobs.Manager.SubmitReserved): INVALID_TRAINING_OPTIONS.
func trainingOptions(meta gen.TrainingMeta) (jobs.TrainingOptions, error) {
	var o jobs.TrainingOptions
	if meta.Wavenumbers != nil {
		o.Wavenumbers = *meta.Wavenumbers
	}
	o.Components = deref(meta.Components)
	o.MaxComponents = deref(meta.MaxComponents)
	o.Folds = deref(meta.CvFolds)
	if meta.CvSegments != nil {
		o.Segments = string(*meta.CvSegments)
	}
	if meta.ComponentRule != nil {
		o.Rule = string(*meta.ComponentRule)
	}
	if meta.ExcludeScanIds != nil {
		o.ExcludeScanIDs = *meta.ExcludeScanIds
	}
	if meta.Regions != nil {
		for k, r := range *meta.Regions {
			if len(r) != 2 { // the schema holds it to two numbers
				return o, contract.New(contract.InvalidMetadata, http.StatusBadRequest, fmt.Sprintf("meta: field \"regions.%d\": a region is [low, high]", k))
			}
			o.Regions = append(o.Regions, [2]float64{r[0], r[1]})
		}
	}
	if meta.Preprocessing != nil && len(*meta.Preprocessing) > 0 {
		b, err := json.Marshal(*meta.Preprocessing)
		if err != nil {
			return o, contract.New(contract.InvalidMetadata, http.StatusBadRequest, "meta: field \"preprocessing\": "+err.Error())
		}
		o.Preprocessing = b
	}
	return o, nil
}

// echoTrainingOptions puts a job's training options back into the meta it
// reports; the axis is left out (2048 numbers in every job of a list).
func echoTrainingOptions(meta *gen.TrainingMeta, o jobs.TrainingOptions) {
	if o.Components > 0 {
		meta.Components = ptr(o.Components)
	}
	if o.MaxComponents > 0 {
		meta.MaxComponents = ptr(o.MaxComponents)
	}
	if o.Folds > 0 {
		meta.CvFolds = ptr(o.Folds)
	}
	if o.Segments != "" {
		meta.CvSegments = ptr(gen.TrainingMetaCvSegments(o.Segments))
	}
	if o.Rule != "" {
		meta.ComponentRule = ptr(gen.TrainingMetaComponentRule(o.Rule))
	}
	if len(o.ExcludeScanIDs) > 0 {
		meta.ExcludeScanIds = ptr(o.ExcludeScanIDs)
	}
	meta.Regions = contractRegions(o.Regions)
	meta.Preprocessing = contractRecipe(o.Preprocessing)
}

// contractRegions is a model's or job's regions as the contract spells
// them; nil for none.
func contractRegions(regions [][2]float64) *[]gen.WavenumberRegion {
	if len(regions) == 0 {
		return nil
	}
	out := make([]gen.WavenumberRegion, len(regions))
	for k, r := range regions {
		out[k] = gen.WavenumberRegion{r[0], r[1]}
	}
	return &out
}

// contractRecipe is a recipe's stored JSON (preprocess.Recipe's form) as
// the contract's steps; nil for none, or for JSON the contract's types
// cannot read (an index edited by hand), which is left out rather than
// failing the description of the rest.
func contractRecipe(stored []byte) *[]gen.PreprocessingStep {
	if len(stored) == 0 {
		return nil
	}
	var steps []gen.PreprocessingStep
	if err := json.Unmarshal(stored, &steps); err != nil || len(steps) == 0 {
		return nil
	}
	for _, st := range steps {
		if _, err := st.ValueByDiscriminator(); err != nil {
			return nil
		}
	}
	return &steps
}

// trainingResult converts a done job's result to the contract's.
func trainingResult(j *jobs.Job) *gen.TrainingResult {
	r := j.Result
	out := &gen.TrainingResult{
		NewVersion:   r.NewVersion,
		ArtifactPath: r.ArtifactPath,
		Metrics:      gen.TrainingMetrics{Rmse: derefBreakdown(r.RMSE), R2: derefBreakdown(r.R2)},
		ReportUrl:    ptr("/training/" + j.ID + "/report"),
		Lineage: &gen.ModelLineage{JobId: ptr(j.ID), Operator: optional(j.Meta.Operator), AuthenticatedAs: optional(j.Meta.AuthenticatedAs), Notes: optional(j.Meta.Notes),
			TrainingCsvSha256: optional(j.Meta.CSVSHA256), TrainingRows: ptr(j.Samples)},
	}
	if len(j.Meta.SourceBatches) > 0 {
		out.Lineage.SourceBatches = ptr(j.Meta.SourceBatches)
	}
	out.Lineage.Annotations = contractAnnotations(j.Meta.Annotations)
	if len(j.Meta.Options.ExcludeScanIDs) > 0 {
		out.Lineage.ExcludedScanIds = ptr(j.Meta.Options.ExcludeScanIDs)
	}
	if r.Selection == nil {
		return out // a record written before the review existed
	}
	out.Lineage.RowsUsed = ptr(r.RowsUsed)
	out.SpikesRepaired, out.SpectraDespiked = ptr(r.SpikesRepaired), ptr(r.SpectraDespiked)
	out.ComponentSelection = &gen.ComponentSelection{Components: r.Selection.Components, Rule: gen.ComponentSelectionRule(r.Selection.Rule),
		MaxComponents: r.Selection.MaxComponents, Folds: r.Selection.Folds, Rmsecv: derefBreakdown(r.Selection.RMSECV)}
	if r.Selection.Segments != "" {
		out.ComponentSelection.CvSegments = ptr(gen.ComponentSelectionCvSegments(r.Selection.Segments))
	}
	if r.Selection.MinScoreComponents > 0 {
		out.ComponentSelection.MinScoreComponents = ptr(r.Selection.MinScoreComponents)
	}
	curve := make([]gen.CVPoint, len(r.CVCurve))
	for k, pt := range r.CVCurve {
		curve[k] = gen.CVPoint{Components: pt.Components, Rmsecv: derefBreakdown(pt.RMSECV), R2cv: derefBreakdown(pt.R2CV),
			Score: ptr(pt.Score), ScoreSe: ptr(pt.ScoreSE)}
	}
	out.CvCurve = &curve
	if r.Limits != nil {
		out.OutlierLimits = &gen.OutlierLimits{T2: r.Limits.T2, Q: r.Limits.Q, StudentizedResidual: ptr(r.Limits.StudentizedResidual)}
	}
	outliers := make([]gen.TrainingOutlier, len(r.Outliers))
	for k, o := range r.Outliers {
		reasons := make([]gen.TrainingOutlierReasons, len(o.Reasons))
		for i, why := range o.Reasons {
			reasons[i] = gen.TrainingOutlierReasons(why)
		}
		outliers[k] = gen.TrainingOutlier{ScanId: o.ScanID, Reasons: reasons, T2: ptr(o.T2), Q: ptr(o.Q),
			ReducedT2: o.ReducedT2, ReducedQ: o.ReducedQ, StudentizedResiduals: breakdown(o.StudentizedResiduals)}
	}
	out.Outliers = &outliers
	out.OutliersTotal = ptr(r.OutliersTotal)
	return out
}

// listedJob is a job as GET /training lists it: without what the client
// chose the size of (the outliers, up to 1000 a job; the excluded scan
// ids, the source batches, the notes and the annotations, up to 1 MiB of
// meta), so that a
// page of 200 jobs stays a few MB at most; outliers_total, rows_used and
// GET /training/{jobId} say the rest.
func listedJob(j gen.TrainingJob) gen.TrainingJob {
	if m := j.Meta; m != nil {
		m.ExcludeScanIds, m.SourceBatches, m.Notes, m.Annotations = nil, nil, nil, nil
	}
	if r := j.Result; r != nil {
		r.Outliers = nil
		if l := r.Lineage; l != nil {
			l.ExcludedScanIds, l.SourceBatches, l.Notes, l.Annotations = nil, nil, nil, nil
		}
	}
	return j
}

// deref is *p, or zero for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
