package conformance

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"ramanserve/client"
	"ramanserve/gen"
)

// TestPredictionContributionsLogged: a predict that asks for
// contributions is logged with what its reply carried, GET
// /predictions/{id} returns them (validated against the contract), the
// listing does not, and the page of the spectrum is a self-contained
// HTML document served with the report's security headers.
func TestPredictionContributionsLogged(t *testing.T) {
	twoModels(t)
	c := api(t)
	wn, samples := evidenceSamples(1901, 1)
	batch := uniqueBatch("contrib")
	cl, err := client.DialPrediction(context.Background(), suite.zmq, client.PredictionOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reply, err := cl.PredictWithOptions(ctx, &client.Spectrum{Wavenumbers: wn, Intensities: samples[0].intensities, Channel: 1, IntegrationMS: 500, ScanSeq: 7},
		&client.ScanContext{BatchID: batch, Port: "P1", ColumnIndex: 3}, &client.PredictOptions{Contributions: 4, HasContributions: true})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Contributions == nil || reply.Contributions.Q == nil || len(reply.Contributions.Q.Top) != 4 {
		t.Fatalf("the reply's contributions: %+v", reply.Contributions)
	}
	logged := waitLogged(t, c, batch, map[gen.PredictionRole]int{gen.PredictionRoleActive: 1})[gen.PredictionRoleActive][0]
	if logged.Contributions != nil {
		t.Error("GET /predictions lists contributions")
	}
	id := uuid.MustParse(logged.PredictionId)
	res := must(c.GetPredictionWithResponse(ctx, id))(t)
	if res.JSON200 == nil || len(res.JSON200.Records) == 0 {
		t.Fatalf("GET /predictions/%s: %d %s", id, res.StatusCode(), res.Body)
	}
	got := res.JSON200.Records[0].Contributions
	if got == nil || got.Q == nil || got.T2 == nil || len(got.Q.Top) != 4 {
		t.Fatalf("stored contributions: %s", res.Body)
	}
	for i, v := range reply.Contributions.Q.Top {
		if got.Q.Top[i].Wavenumber != v.Wavenumber || got.Q.Top[i].Value != v.Value {
			t.Fatalf("stored Q top %d is %+v, the reply carried %+v", i, got.Q.Top[i], v)
		}
	}
	if got.Q.Total != reply.Contributions.Q.Total || got.T2.Total != reply.Contributions.T2.Total {
		t.Fatalf("stored totals T2 %v Q %v, the reply's %v %v", got.T2.Total, got.Q.Total, reply.Contributions.T2.Total, reply.Contributions.Q.Total)
	}

	page := must(c.GetPredictionReportWithResponse(ctx, id))(t)
	if page.StatusCode() != http.StatusOK || !strings.HasPrefix(page.HTTPResponse.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page.HTTPResponse.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("the page: %d %v", page.StatusCode(), page.HTTPResponse.Header)
	}
	if body := string(page.Body); !strings.Contains(body, `id="prediction-confidence"`) || strings.Contains(body, "<script") {
		t.Fatalf("the page lacks the prediction or holds a script (%d bytes)", len(body))
	}
}
