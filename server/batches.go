package server

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/predlog"
	"ramanserve/gen"
	"ramanserve/server/contract"
	"ramanserve/server/report"
	batchsvc "ramanserve/service/batches"
)

// GET /batches, GET /batches/{batch_id}, PUT and DELETE
// /batches/{batch_id}/reference, GET /batches/{batch_id}/report: batch
// trajectories and their control bands (service/batches).

// Page sizes of GET /batches (the contract's).
const (
	defaultBatchesLimit = 100
	maxBatchesLimit     = predlog.MaxBatchPageLimit
)

// BatchService serves the batch routes.
type BatchService interface {
	List(ctx context.Context, f predlog.BatchFilter) (batchsvc.Page, error)
	Trajectory(ctx context.Context, batchID string, m batches.Maturity) (batchsvc.Trajectory, error)
	Mark(ctx context.Context, batchID, by string) (batches.Reference, bool, error)
	Unmark(ctx context.Context, batchID string) (bool, error)
	Report(ctx context.Context, batchID string, m batches.Maturity) (batchsvc.Report, error)
}

// ListBatches lists the batches of the prediction log.
func (a *API) ListBatches(ctx context.Context, req gen.ListBatchesRequestObject) (gen.ListBatchesResponseObject, error) {
	if a.Batches == nil {
		return nil, errPredictionLogUnavailable
	}
	f := predlog.BatchFilter{Limit: defaultBatchesLimit}
	if p := req.Params.Limit; p != nil {
		if *p < 1 || *p > maxBatchesLimit {
			return nil, contract.New(contract.InvalidRequest, http.StatusBadRequest, "limit must be between 1 and "+strconv.Itoa(maxBatchesLimit))
		}
		f.Limit = *p
	}
	if req.Params.Cursor != nil {
		f.Cursor = *req.Params.Cursor
	}
	page, err := a.Batches.List(ctx, f)
	if err != nil {
		return nil, err
	}
	out := gen.BatchList{Batches: make([]gen.BatchSummary, 0, len(page.Batches)), NextCursor: optional(page.Next)}
	for _, b := range page.Batches {
		out.Batches = append(out.Batches, gen.BatchSummary{
			BatchId: b.BatchID, FirstTime: b.First, LastTime: b.Last, Count: b.Count,
			Models: append([]string{}, b.Models...), MoreModels: b.MoreModels, Reference: b.Reference,
		})
	}
	return gen.ListBatches200JSONResponse{Body: out, Headers: gen.ListBatches200ResponseHeaders{XNextCursor: optional(page.Next)}}, nil
}

// maturity reads the maturity parameter (absent: by time).
func maturity(p *gen.Maturity) (batches.Maturity, error) {
	name := ""
	if p != nil {
		name = string(*p)
	}
	m, ok := batches.ParseMaturity(name)
	if !ok {
		return 0, contract.New(contract.InvalidRequest, http.StatusBadRequest, "maturity must be time or scan_seq")
	}
	return m, nil
}

// GetBatch returns a batch's trajectory.
func (a *API) GetBatch(ctx context.Context, req gen.GetBatchRequestObject) (gen.GetBatchResponseObject, error) {
	if a.Batches == nil {
		return nil, errPredictionLogUnavailable
	}
	m, err := maturity(req.Params.Maturity)
	if err != nil {
		return nil, err
	}
	t, err := a.Batches.Trajectory(ctx, req.BatchId, m)
	if err != nil {
		return nil, err
	}
	out := gen.GetBatch200JSONResponse{
		BatchId: t.BatchID, Maturity: gen.BatchMaturity(t.Maturity.String()), StartTime: t.Start.UTC(),
		Reference: t.Reference, Truncated: t.Truncated, Unplaced: t.Unplaced,
		Points: make([]gen.TrajectoryPoint, 0, len(t.Points)),
	}
	for i := range t.Points {
		out.Points = append(out.Points, trajectoryPoint(&t.Points[i]))
	}
	return out, nil
}

// trajectoryPoint is a point as the contract's TrajectoryPoint.
func trajectoryPoint(p *batches.Point) gen.TrajectoryPoint {
	out := gen.TrajectoryPoint{
		PredictionId: p.PredictionID.String(), Time: p.Time.UTC(), Maturity: p.Maturity, ModelVersion: p.ModelVersion,
		T2Reduced: optionalNumber(p.Values[batches.SeriesT2], p.Has[batches.SeriesT2]),
		QReduced:  optionalNumber(p.Values[batches.SeriesQ], p.Has[batches.SeriesQ]),
		ScanSeq:   optionalNumber(p.ScanSeq, p.HasScanSeq),
	}
	v := func(s batches.Series) *float64 { return optionalNumber(p.Values[s], p.Has[s]) }
	out.Concentrations = gen.AnalyteValues{EPA: v(batches.SeriesEPA), DHA: v(batches.SeriesDHA), DPA: v(batches.SeriesDPA)}
	if conf := analyteValues(p.Confidence); conf != (gen.AnalyteValues{}) {
		out.Confidence = &conf
	}
	return out
}

// MarkReferenceBatch marks a batch as a reference batch, in the name of
// the request's token.
func (a *API) MarkReferenceBatch(ctx context.Context, req gen.MarkReferenceBatchRequestObject) (gen.MarkReferenceBatchResponseObject, error) {
	if a.Batches == nil {
		return nil, errPredictionLogUnavailable
	}
	ref, created, err := a.Batches.Mark(ctx, req.BatchId, authenticatedAs(ctx))
	if err != nil {
		return nil, err
	}
	return gen.MarkReferenceBatch200JSONResponse{BatchId: ref.BatchID, MarkedAt: ref.MarkedAt.UTC(), MarkedBy: optional(ref.MarkedBy), Created: created}, nil
}

// UnmarkReferenceBatch removes a batch's reference mark.
func (a *API) UnmarkReferenceBatch(ctx context.Context, req gen.UnmarkReferenceBatchRequestObject) (gen.UnmarkReferenceBatchResponseObject, error) {
	if a.Batches == nil {
		return nil, errPredictionLogUnavailable
	}
	if _, err := a.Batches.Unmark(ctx, req.BatchId); err != nil {
		return nil, err
	}
	return gen.UnmarkReferenceBatch204Response{}, nil
}

// GetBatchReport renders a batch's page against the control bands, in
// one of the report slots the review pages use.
func (a *API) GetBatchReport(ctx context.Context, req gen.GetBatchReportRequestObject) (gen.GetBatchReportResponseObject, error) {
	if a.Batches == nil {
		return nil, errPredictionLogUnavailable
	}
	m, err := maturity(req.Params.Maturity)
	if err != nil {
		return nil, err
	}
	leave, err := a.enterReportGate(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	rep, err := a.Batches.Report(ctx, req.BatchId, m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := report.RenderBatch(&buf, rep); err != nil {
		return nil, err
	}
	return htmlPage(buf.Bytes()), nil
}

func (p htmlPage) VisitGetBatchReportResponse(w http.ResponseWriter) error { return p.write(w) }
