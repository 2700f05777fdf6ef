package conformance

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/platform/race"
)

// predictOnce sends one predict on c and decodes the reply.
func predictOnce(t *testing.T, c *zmqClient, wn, in []float64) (*client.Reply, *client.PredictReply) {
	t.Helper()
	frame, _ := goScenarioFrame("predict", wn, in)
	raw, err := c.roundTrip(frame, replyTimeout)
	if err != nil {
		t.Fatal(err)
	}
	rep := must(client.DecodeReply(raw))(t)
	if rep.Error != nil {
		t.Fatalf("predict: %v", rep.Error)
	}
	return rep, must(client.DecodePredictReply(rep.Body))(t)
}

// activate loads version with the source its registry status calls for.
func activate(c *gen.ClientWithResponses, version string) (int, error) {
	list, err := c.ListModelsWithResponse(context.Background(), nil)
	if err != nil {
		return 0, err
	}
	src := gen.LoadModelRequestSource("staged")
	for _, m := range list.JSON200.Models {
		if m.Version == version && m.Status == gen.ModelStatusArchived {
			src = "archived"
		}
	}
	res, err := c.LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: version, Source: &src})
	if err != nil {
		return 0, err
	}
	return res.StatusCode(), nil
}

// TestHotSwapUnderLoad swaps the active model between two models with
// different outputs while clients predict without pause. Every reply must
// carry exactly the output of the model it names: a swap never splits a
// call and never fails one.
func TestHotSwapUnderLoad(t *testing.T) {
	a, b := twoModels(t)
	wn, in := testSpectrum()
	probe := dialZMQ(t, suite.zmq)
	expected := map[string]client.Breakdown{}
	for _, v := range []string{b, a} {
		if code, err := activate(api(t), v); err != nil || code != 200 {
			t.Fatalf("load %s: %d %v", v, code, err)
		}
		_, pr := predictOnce(t, probe, wn, in)
		if pr.ModelVersion != v {
			t.Fatalf("after loading %s predict names %s", v, pr.ModelVersion)
		}
		expected[v] = pr.Concentrations
	}
	if expected[a].Value == expected[b].Value {
		t.Fatal("the two models give identical outputs; the test could not see a mixed reply")
	}

	const clients = 4
	swaps := 60
	if race.Enabled {
		// A swap (a model load) takes a second under -race on a busy
		// machine: 16 still interleave with the predicts.
		swaps = 16
	}
	var (
		stop                     atomic.Bool
		replies, mixed, failures atomic.Int64
		seen                     sync.Map
		wg                       sync.WaitGroup
	)
	for i := 0; i < clients; i++ {
		c := dialZMQ(t, suite.zmq)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				frame, _ := goScenarioFrame("predict", wn, in)
				raw, err := c.roundTrip(frame, replyTimeout)
				if err != nil {
					failures.Add(1)
					t.Errorf("predict during swaps: %v", err)
					return
				}
				rep, err := client.DecodeReply(raw)
				if err != nil || rep.Error != nil {
					failures.Add(1)
					t.Errorf("predict during swaps: %v %v", err, rep)
					continue
				}
				pr, err := client.DecodePredictReply(rep.Body)
				if err != nil {
					failures.Add(1)
					continue
				}
				replies.Add(1)
				seen.Store(pr.ModelVersion, true)
				if want, ok := expected[pr.ModelVersion]; !ok || want.Value != pr.Concentrations.Value {
					mixed.Add(1)
				}
			}
		}()
	}
	// The operator console polls health while models change: it must stay
	// 200, ok, and name one of the two models. (On a starved machine the
	// log's writer may fall past its promise under this load, and health
	// says so: that reason alone is allowed.)
	var healthChecks atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			h, err := api(t).GetHealthWithResponse(context.Background())
			if err != nil || h.StatusCode() != 200 || !healthyButForLogBacklog(h.JSON200) || h.JSON200.ActiveVersion == nil ||
				(*h.JSON200.ActiveVersion != a && *h.JSON200.ActiveVersion != b) {
				failures.Add(1)
				t.Errorf("health during swaps: %v %v", err, h)
				return
			}
			healthChecks.Add(1)
		}
	}()
	for i := 0; i < swaps; i++ {
		v := b
		if i%2 == 1 {
			v = a
		}
		code, err := activate(api(t), v)
		if err != nil || code != 200 {
			t.Errorf("swap %d to %s: %d %v", i, v, code, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("hot swap: %d swaps, %d replies, %d mixed, %d failed; %d health checks", swaps, replies.Load(), mixed.Load(), failures.Load(), healthChecks.Load())
	if mixed.Load() != 0 || failures.Load() != 0 {
		t.Fatalf("%d mixed and %d failed replies over %d swaps", mixed.Load(), failures.Load(), swaps)
	}
	for _, v := range []string{a, b} {
		if _, ok := seen.Load(v); !ok {
			t.Errorf("no reply came from %s: the swaps did not interleave with the load", v)
		}
	}
	if code, err := activate(api(t), a); err != nil || code != 200 {
		t.Fatalf("restore %s: %d %v", a, code, err)
	}
}

// TestConcurrentLoadsOneWins fires 20 loads at once while a load is slow:
// one succeeds, the others get 409 LOAD_IN_PROGRESS, retryable, with
// Retry-After.
func TestConcurrentLoadsOneWins(t *testing.T) {
	needInProcess(t)
	a, b := twoModels(t)
	suite.slowLoads.Store(int64(300 * time.Millisecond))
	defer suite.slowLoads.Store(0)
	const n = 20
	type outcome struct {
		status int
		body   gen.ErrorResponse
		retry  string
	}
	results := make(chan outcome, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		go func() {
			<-start
			src := gen.LoadModelRequestSource("staged")
			list := must(api(t).ListModelsWithResponse(context.Background(), nil))(t).JSON200
			for _, m := range list.Models {
				if m.Version == b && m.Status == gen.ModelStatusArchived {
					src = "archived"
				}
			}
			res, err := api(t).LoadModelWithResponse(context.Background(), nil, gen.LoadModelJSONRequestBody{Version: b, Source: &src})
			if err != nil {
				results <- outcome{status: -1}
				return
			}
			o := outcome{status: res.StatusCode(), retry: res.HTTPResponse.Header.Get("Retry-After")}
			if res.JSON409 != nil {
				o.body = *res.JSON409
			}
			results <- o
		}()
	}
	close(start)
	var ok, busy int
	for i := 0; i < n; i++ {
		o := <-results
		switch {
		case o.status == http.StatusOK:
			ok++
		case o.status == http.StatusConflict && o.body.Code == "LOAD_IN_PROGRESS" && o.body.Retryable != nil && *o.body.Retryable && o.retry == "1":
			busy++
		default:
			t.Errorf("unexpected outcome %+v", o)
		}
	}
	if ok != 1 || busy != n-1 {
		t.Fatalf("%d succeeded and %d were refused as busy, want 1 and %d", ok, busy, n-1)
	}
	suite.slowLoads.Store(0)
	if code, err := activate(api(t), a); err != nil || code != 200 {
		t.Fatalf("restore %s: %d %v", a, code, err)
	}
}

// TestChannelWithoutModel: with no model loaded, ping works and names no
// model, predict and model_info answer MODEL_NOT_LOADED, health says ok
// with model_loaded false.
func TestChannelWithoutModel(t *testing.T) {
	endpoint, httpBase := suite.zmq, suite.httpBase
	if suite.proc != nil {
		// The suite's server has models by now: start an empty one.
		httpBase, endpoint = emptyServer(t)
	} else if h := must(api(t).GetHealthWithResponse(context.Background()))(t); h.JSON200.ModelLoaded != nil && *h.JSON200.ModelLoaded {
		t.Skip("the external server has a model loaded")
	}
	wn, in := testSpectrum()
	c := dialZMQ(t, endpoint)
	for _, tc := range []struct{ scenario, replyType, code string }{
		{"ping", "pong", ""},
		{"predict", "predict_reply", "MODEL_NOT_LOADED"},
		{"model_info", "model_info_reply", "MODEL_NOT_LOADED"},
	} {
		frame, id := goScenarioFrame(tc.scenario, wn, in)
		raw := must(c.roundTrip(frame, replyTimeout))(t)
		got := goResult(t, raw, id)
		code := ""
		if got.Code != nil {
			code = *got.Code
		}
		if got.Type != tc.replyType || code != tc.code || !got.CorrelationOK {
			t.Errorf("%s: got %s %s (correlation ok %v), want %s %s", tc.scenario, got.Type, code, got.CorrelationOK, tc.replyType, tc.code)
		}
		if tc.scenario == "ping" && got.Body["model_version"] != "" {
			t.Errorf("pong model_version = %v, want empty", got.Body["model_version"])
		}
		if err := validateChannelReply(got.Reply); err != nil {
			t.Errorf("%s: %v", tc.scenario, err)
		}
	}
	py := runPython(t, endpoint, 0, []string{"predict", "model_info"})[0]
	for _, name := range []string{"predict", "model_info"} {
		if py[name].Code == nil || *py[name].Code != "MODEL_NOT_LOADED" || py[name].Retryable == nil || *py[name].Retryable {
			t.Errorf("pyzmq %s: %+v", name, py[name])
		}
	}
	hc := must(gen.NewClientWithResponses(httpBase, gen.WithHTTPClient(validatingDoer{client: httpClient()})))(t)
	h := must(hc.GetHealthWithResponse(context.Background()))(t).JSON200
	if h.Status != "ok" || h.ModelLoaded == nil || *h.ModelLoaded || h.ActiveVersion != nil {
		t.Errorf("health without model = %+v", h)
	}
}

// healthyButForLogBacklog: health reads ok, or degraded for no reason
// but the prediction log's backlog (prediction_log_behind), which a
// loaded machine may cause and which health is right to report.
func healthyButForLogBacklog(h *gen.HealthStatus) bool {
	if h.Status == gen.Ok {
		return true
	}
	if h.Status != gen.Degraded || h.DegradedReasons == nil || len(*h.DegradedReasons) == 0 {
		return false
	}
	for _, r := range *h.DegradedReasons {
		if !strings.HasPrefix(r, "prediction_log_behind") {
			return false
		}
	}
	return true
}
