package conformance

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"

	"ramanserve/gen"
)

// TestModelAxis: GET /model/{version}/axis gives the wavenumbers of the
// active version and of one that is not active, as many as the version's
// wavenumber_count and spanning its wavenumber_range; an unknown version
// is 404 MODEL_NOT_FOUND; and model_info on the channel, asked with
// body.include ["wavenumbers"], gives the active model's axis, the same
// values to the bit.
func TestModelAxis(t *testing.T) {
	a, b := twoModels(t)
	c := api(t)
	axes := map[string][]float64{}
	for _, v := range []string{a, b} {
		res := must(c.GetModelAxisWithResponse(context.Background(), v))(t)
		if res.StatusCode() != 200 || res.JSON200 == nil {
			t.Fatalf("axis of %s: %d %s", v, res.StatusCode(), res.Body)
		}
		d := must(c.GetModelWithResponse(context.Background(), v, nil))(t).JSON200
		wn := res.JSON200.Wavenumbers
		if res.JSON200.Version != v || d == nil || d.WavenumberCount == nil || len(wn) != *d.WavenumberCount ||
			wn[0] != (*d.WavenumberRange)[0] || wn[len(wn)-1] != (*d.WavenumberRange)[1] {
			t.Fatalf("axis of %s: %d points %v..%v, model %+v", v, len(wn), wn[0], wn[len(wn)-1], d)
		}
		for i := 1; i < len(wn); i++ {
			if !(wn[i] > wn[i-1]) {
				t.Fatalf("axis of %s not increasing at %d", v, i)
			}
		}
		axes[v] = wn
	}

	res := must(c.GetModelAxisWithResponse(context.Background(), "no-such-version"))(t)
	if res.StatusCode() != 404 || errorCode(t, res.Body).Code != "MODEL_NOT_FOUND" {
		t.Fatalf("unknown version: %d %s", res.StatusCode(), res.Body)
	}

	id := uuid.NewString()
	frame, err := msgpack.Marshal(map[string]any{"v": 1, "type": "model_info", "id": id, "body": map[string]any{"include": []string{"wavenumbers"}}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := dialZMQ(t, suite.zmq).roundTrip(frame, replyTimeout)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Type          string `msgpack:"type"`
		CorrelationID string `msgpack:"correlation_id"`
		Body          struct {
			ActiveVersion string    `msgpack:"active_version"`
			Wavenumbers   []float64 `msgpack:"wavenumbers"`
		} `msgpack:"body"`
		Error *gen.ChannelError `msgpack:"error"`
	}
	if err := msgpack.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Type != "model_info_reply" || rep.CorrelationID != id || rep.Error != nil || rep.Body.ActiveVersion != a {
		t.Fatalf("model_info reply %+v", rep)
	}
	if !slices.Equal(rep.Body.Wavenumbers, axes[a]) {
		t.Fatalf("model_info gives %d wavenumbers, GET /model/%s/axis %d, or other values", len(rep.Body.Wavenumbers), a, len(axes[a]))
	}
}
