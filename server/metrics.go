package server

import (
	"bytes"
	"context"
	"net/http"

	"ramanserve/gen"
	"ramanserve/server/metrics"
)

// GetMetrics serves the server's Prometheus metrics in the text
// exposition format 0.0.4.
func (a *API) GetMetrics(ctx context.Context, _ gen.GetMetricsRequestObject) (gen.GetMetricsResponseObject, error) {
	var buf bytes.Buffer
	if err := a.Metrics.WriteText(&buf); err != nil {
		return nil, err
	}
	return metricsText(buf.Bytes()), nil
}

// metricsText is GetMetrics' 200: the generated response says only
// text/plain, and Prometheus reads the format's version from the
// Content-Type parameters.
type metricsText []byte

func (m metricsText) VisitGetMetricsResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", metrics.ContentType)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(m)
	return err
}
