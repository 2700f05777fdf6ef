package server

import (
	"bytes"
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/contract"
	"ramanserve/service/models"
)

// ModelExporter writes a registry version as a file to take elsewhere
// (*models.Service).
type ModelExporter interface {
	Export(ctx context.Context, version, format string) (models.Exported, error)
}

var errExportUnavailable = contract.New(contract.NotImplemented, http.StatusNotImplemented, "this server exports no models")

// ExportModel answers a version as a scikit-learn Pipeline (joblib) or its
// artifact (npz). Its policy (validation of the format, the report slots)
// is attached at registration (operationMiddlewares).
func (a *API) ExportModel(ctx context.Context, req gen.ExportModelRequestObject) (gen.ExportModelResponseObject, error) {
	if a.Exporter == nil {
		return nil, errExportUnavailable
	}
	format := models.FormatJoblib
	if req.Params.Format != nil {
		format = string(*req.Params.Format)
	}
	exp, err := a.Exporter.Export(ctx, req.Version, format)
	if err != nil {
		return nil, versionNotFound(err)
	}
	return gen.ExportModel200ApplicationoctetStreamResponse{
		Body:          bytes.NewReader(exp.Content),
		ContentLength: int64(len(exp.Content)),
		Headers:       gen.ExportModel200ResponseHeaders{ContentDisposition: `attachment; filename="` + exp.FileName + `"`},
	}, nil
}
