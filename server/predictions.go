package server

import (
	"bytes"
	"context"
	"encoding/csv"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/gen"
	"ramanserve/inference"
	"ramanserve/server/contract"
)

// GET /predictions: the prediction log, a page at a time, as JSON or CSV.

// Page sizes of GET /predictions (the contract's).
const (
	defaultPredictionsLimit = 1000
	maxPredictionsLimit     = predlog.MaxPageLimit
)

// PredictionService reads the prediction log for the management API.
type PredictionService interface {
	Page(ctx context.Context, f predlog.Filter) (predlog.Page, error)
}

var errPredictionLogUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server keeps no prediction log")

// ListPredictions exports the prediction log.
func (a *API) ListPredictions(ctx context.Context, req gen.ListPredictionsRequestObject) (gen.ListPredictionsResponseObject, error) {
	if a.Predictions == nil {
		return nil, errPredictionLogUnavailable
	}
	f, err := predictionFilter(req.Params)
	if err != nil {
		return nil, err
	}
	page, err := a.Predictions.Page(ctx, f)
	if err != nil {
		return nil, err
	}
	headers := gen.ListPredictions200ResponseHeaders{XNextCursor: optional(page.Next)}
	if wantsCSV(ctx) {
		body := predictionsCSV(page.Records)
		return gen.ListPredictions200TextcsvResponse{Body: bytes.NewReader(body), ContentLength: int64(len(body)), Headers: headers}, nil
	}
	out := gen.PredictionLogPage{Predictions: make([]gen.LoggedPrediction, 0, len(page.Records)), NextCursor: optional(page.Next)}
	for i := range page.Records {
		out.Predictions = append(out.Predictions, loggedPrediction(&page.Records[i]))
	}
	return gen.ListPredictions200JSONResponse{Body: out, Headers: headers}, nil
}

// predictionFilter checks the query and turns it into the log's filter.
func predictionFilter(p gen.ListPredictionsParams) (predlog.Filter, error) {
	f := predlog.Filter{Limit: defaultPredictionsLimit}
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > maxPredictionsLimit {
			return f, contract.New(contract.InvalidRequest, http.StatusBadRequest,
				"limit must be between 1 and "+strconv.Itoa(maxPredictionsLimit))
		}
		f.Limit = *p.Limit
	}
	if p.BatchId != nil {
		f.BatchID, f.HasBatchID = *p.BatchId, true
	}
	if p.Since != nil {
		f.Since = *p.Since
	}
	if p.Until != nil {
		f.Until = *p.Until
	}
	if p.Since != nil && p.Until != nil && !f.Until.After(f.Since) {
		return f, contract.New(contract.InvalidRequest, http.StatusBadRequest, "until must be later than since")
	}
	if p.Cursor != nil {
		f.Cursor = *p.Cursor
	}
	return f, nil
}

// wantsCSV reads the request's Accept header: CSV when text/csv is
// acceptable and preferred to JSON (a higher quality, or the same quality
// and listed first); JSON otherwise, the default.
func wantsCSV(ctx context.Context) bool {
	x := exchangeOf(ctx)
	if x == nil || x.accept == "" {
		return false
	}
	csvQ, jsonQ := -1.0, -1.0
	for _, part := range strings.Split(x.accept, ",") {
		media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		switch media {
		case "text/csv":
			if csvQ < 0 {
				csvQ = q
			}
		case "application/json", "application/*", "*/*":
			if jsonQ < 0 {
				jsonQ = q
			}
		}
	}
	return csvQ > 0 && csvQ > jsonQ || csvQ > 0 && csvQ == jsonQ && strings.Index(x.accept, "text/csv") < firstJSON(x.accept)
}

// firstJSON is where the first media range that accepts JSON begins.
func firstJSON(accept string) int {
	first := len(accept)
	for _, m := range []string{"application/json", "application/*", "*/*"} {
		if i := strings.Index(accept, m); i >= 0 && i < first {
			first = i
		}
	}
	return first
}

// loggedPrediction is a record as the contract's LoggedPrediction.
func loggedPrediction(r *predlog.Record) gen.LoggedPrediction {
	out := gen.LoggedPrediction{
		PredictionId:   r.PredictionID.String(),
		Time:           r.Time.UTC(),
		ModelVersion:   r.ModelVersion,
		Role:           gen.PredictionRole(r.Role.String()),
		Concentrations: analyteValues(r.Concentrations),
	}
	if conf := analyteValues(r.Confidence); conf != (gen.AnalyteValues{}) {
		out.Confidence = &conf
	}
	out.T2Reduced = optionalNumber(r.ReducedT2, r.HasReducedT2)
	out.QReduced = optionalNumber(r.ReducedQ, r.HasReducedQ)
	if r.HasBatchID {
		out.BatchId = ptr(r.BatchID)
	}
	if r.HasPort {
		out.Port = ptr(r.Port)
	}
	out.ColumnIndex = optionalNumber(r.ColumnIndex, r.HasColumnIndex)
	out.ScanSeq = optionalNumber(r.ScanSeq, r.HasScanSeq)
	out.Channel = optionalNumber(r.Channel, r.HasChannel)
	out.IntegrationMs = optionalNumber(r.IntegrationMS, r.HasIntegrationMS)
	return out
}

func analyteValues(b inference.Breakdown) gen.AnalyteValues {
	v := func(a inference.Analyte) *float64 { return optionalNumber(b.Value[a], b.Valid[a]) }
	return gen.AnalyteValues{EPA: v(inference.EPA), DHA: v(inference.DHA), DPA: v(inference.DPA)}
}

func optionalNumber(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

// predictionsCSVHeader names the CSV columns; absent values are empty
// cells.
var predictionsCSVHeader = []string{
	"prediction_id", "time", "model_version", "role",
	"EPA", "DHA", "DPA", "EPA_confidence", "DHA_confidence", "DPA_confidence",
	"t2_reduced", "q_reduced",
	"batch_id", "port", "column_index", "scan_seq", "channel", "integration_ms",
}

// predictionsCSV writes records as CSV with a header line. Numbers are
// written in the shortest form that reads back to the same float64;
// times in RFC 3339, UTC, with nanoseconds.
func predictionsCSV(recs []predlog.Record) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(predictionsCSVHeader) // a bytes.Buffer does not fail
	row := make([]string, len(predictionsCSVHeader))
	for i := range recs {
		predictionRow(row, &recs[i])
		_ = w.Write(row)
	}
	w.Flush()
	return buf.Bytes()
}

func predictionRow(row []string, r *predlog.Record) {
	num := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	c, k := &r.Concentrations, &r.Confidence
	copy(row, []string{
		r.PredictionID.String(), r.Time.UTC().Format(time.RFC3339Nano), textCell(r.ModelVersion), r.Role.String(),
		num(c.Value[inference.EPA], c.Valid[inference.EPA]), num(c.Value[inference.DHA], c.Valid[inference.DHA]), num(c.Value[inference.DPA], c.Valid[inference.DPA]),
		num(k.Value[inference.EPA], k.Valid[inference.EPA]), num(k.Value[inference.DHA], k.Valid[inference.DHA]), num(k.Value[inference.DPA], k.Valid[inference.DPA]),
		num(r.ReducedT2, r.HasReducedT2), num(r.ReducedQ, r.HasReducedQ),
		textCell(r.BatchID), textCell(r.Port),
		num(r.ColumnIndex, r.HasColumnIndex), num(r.ScanSeq, r.HasScanSeq), num(r.Channel, r.HasChannel), num(r.IntegrationMS, r.HasIntegrationMS),
	})
}

// textCell guards a text cell the rig chose (batch id, port) against
// formula injection: a spreadsheet would evaluate a cell that begins with
// = + - @ (or a tab or carriage return), so such a cell gets a leading
// apostrophe, which spreadsheets show as text.
func textCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
