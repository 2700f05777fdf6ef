package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"

	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/trainer/synth"
)

// The prediction channel is exercised by two independent client stacks: a
// real libzmq REQ socket (Debian's python3-zmq) and go-zeromq/zmq4. Both run
// the same scenarios; every reply is validated against the ChannelReply
// schema and the body schema of its type in api/openapi.yaml.

// channelExpect is what a scenario must produce.
type channelExpect struct {
	replyType string
	code      string // "" for success
	// correlation: "id" = the request id, "empty" = "", "any" = not checked
	// (a truncated frame may or may not have yielded its id).
	correlation string
}

var channelScenarios = map[string]channelExpect{
	"ping":               {"pong", "", "id"},
	"model_info":         {"model_info_reply", "", "id"},
	"predict":            {"predict_reply", "", "id"},
	"predict_mixed_ints": {"predict_reply", "", "id"},
	// A failure has the request's reply type; "error" is left for requests
	// whose type is unknown or could not be read.
	"wrong_v":         {"pong", "UNSUPPORTED_VERSION", "id"},
	"unknown_type":    {"error", "UNKNOWN_TYPE", "id"},
	"missing_id":      {"pong", "MALFORMED_MESSAGE", "empty"},
	"not_a_map":       {"error", "MALFORMED_MESSAGE", "empty"},
	"truncated":       {"error", "MALFORMED_MESSAGE", "any"},
	"garbage":         {"error", "MALFORMED_MESSAGE", "empty"},
	"nan":             {"predict_reply", "INVALID_SPECTRUM", "id"},
	"inf":             {"predict_reply", "INVALID_SPECTRUM", "id"},
	"string_in_array": {"predict_reply", "INVALID_SPECTRUM", "id"},
	"short":           {"predict_reply", "INVALID_SPECTRUM", "id"},
	"unequal":         {"predict_reply", "INVALID_SPECTRUM", "id"},
	"decreasing":      {"predict_reply", "INVALID_SPECTRUM", "id"},
	"shifted_axis":    {"predict_reply", "SPECTRUM_OUT_OF_RANGE", "id"},
	"million":         {"predict_reply", "INVALID_SPECTRUM", "id"},
	"too_large":       {"error", "MESSAGE_TOO_LARGE", "empty"},
}

// scenarioOrder runs errors between successes, so a lost or doubled reply
// shows up in the scenarios after it.
var scenarioOrder = []string{
	"ping", "garbage", "model_info", "wrong_v", "predict", "unknown_type", "missing_id",
	"not_a_map", "predict_mixed_ints", "truncated", "nan", "inf", "string_in_array", "short",
	"unequal", "decreasing", "shifted_axis", "million", "ping", "too_large", "predict",
}

// channelResult is one observed reply, in the shape the Python script prints.
type channelResult struct {
	Timeout       bool           `json:"timeout"`
	Type          string         `json:"type"`
	V             int            `json:"v"`
	CorrelationOK bool           `json:"correlation_ok"`
	CorrelationID string         `json:"correlation_id"`
	HasID         bool           `json:"has_id"`
	TSIsFloat     bool           `json:"ts_is_float"`
	Code          *string        `json:"code"`
	Retryable     *bool          `json:"retryable"`
	Message       *string        `json:"message"`
	Body          map[string]any `json:"body"`
	Reply         map[string]any `json:"reply"`
}

// testSpectrum is a synthetic in-domain spectrum on the default axis.
func testSpectrum() (wn, in []float64) {
	s := synth.New(synth.Config{Seed: 9}).Next()
	return synth.Axis(), s.Intensities
}

// checkScenario asserts one reply against its expectation and the schemas.
func checkScenario(t *testing.T, name string, got channelResult) {
	t.Helper()
	want := channelScenarios[name]
	if got.Timeout {
		t.Fatalf("%s: no reply within a minute", name)
	}
	code := ""
	if got.Code != nil {
		code = *got.Code
	}
	if got.Type != want.replyType || code != want.code {
		msg := ""
		if got.Message != nil {
			msg = *got.Message
		}
		t.Errorf("%s: reply %s %s (%s), want %s %s", name, got.Type, code, msg, want.replyType, want.code)
	}
	if got.V != 1 || !got.HasID || !got.TSIsFloat {
		t.Errorf("%s: envelope v=%d has_id=%v ts_is_float=%v", name, got.V, got.HasID, got.TSIsFloat)
	}
	switch want.correlation {
	case "id":
		if !got.CorrelationOK {
			t.Errorf("%s: correlation_id %q is not the request id", name, got.CorrelationID)
		}
	case "empty":
		if got.CorrelationID != "" {
			t.Errorf("%s: correlation_id %q, want empty", name, got.CorrelationID)
		}
	}
	if code != "" && (got.Retryable == nil || *got.Retryable != (code == "SERVER_BUSY")) {
		t.Errorf("%s: retryable = %v", name, got.Retryable)
	}
	if code != "" && len(got.Body) != 0 {
		t.Errorf("%s: failure body %v, want an empty map", name, got.Body)
	}
	if err := validateChannelReply(got.Reply); err != nil {
		failed.Add(1)
		t.Errorf("%s: reply violates the contract: %v", name, err)
	} else {
		validated.Add(1)
	}
}

// validateChannelReply checks a decoded reply against ChannelReply and the
// body schema its type names.
func validateChannelReply(reply map[string]any) error {
	// Round-trip through JSON so numbers and maps have the types the
	// schema validator expects.
	b, err := json.Marshal(reply)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if err := spec.Components.Schemas["ChannelReply"].Value.VisitJSON(v); err != nil {
		return err
	}
	bodySchema := map[string]string{"pong": "PongBody", "predict_reply": "PredictReplyBody", "model_info_reply": "ModelInfo"}
	typ, _ := reply["type"].(string)
	// A failure has its request's reply type with an empty body: only a
	// success carries the body schema of its type.
	if name, ok := bodySchema[typ]; ok && reply["error"] == nil {
		if err := spec.Components.Schemas[name].Value.VisitJSON(v.(map[string]any)["body"]); err != nil {
			return fmt.Errorf("body of %s: %w", typ, err)
		}
	}
	return nil
}

// runPython runs the pyzmq scenario script against endpoint.
func runPython(t *testing.T, endpoint string, heartbeatMS int, scenarios []string) []map[string]channelResult {
	t.Helper()
	py := debianPython(t, "zmq", "msgpack")
	wn, in := testSpectrum()
	// The script keys results by name; run repeated names in separate
	// batches so each occurrence is kept.
	var out []map[string]channelResult
	for _, batch := range splitRepeats(scenarios) {
		job, _ := json.Marshal(map[string]any{"endpoint": endpoint, "heartbeat_ms": heartbeatMS,
			"wavenumbers": wn, "intensities": in, "scenarios": batch})
		cmd := exec.Command(py, "testdata/pyzmq_client.py")
		cmd.Stdin = bytes.NewReader(job)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		res, err := cmd.Output()
		if err != nil {
			t.Fatalf("pyzmq client: %v\n%s", err, stderr.String())
		}
		var m map[string]channelResult
		if err := json.Unmarshal(res, &m); err != nil {
			t.Fatalf("pyzmq client output: %v: %s", err, res)
		}
		out = append(out, m)
	}
	return out
}

func splitRepeats(names []string) [][]string {
	var batches [][]string
	seen := map[string]bool{}
	var cur []string
	for _, n := range names {
		if seen[n] {
			batches = append(batches, cur)
			cur, seen = nil, map[string]bool{}
		}
		seen[n] = true
		cur = append(cur, n)
	}
	return append(batches, cur)
}

func TestChannelPyzmq(t *testing.T) {
	// Parallel: it runs once every sequential test is done, so no swap
	// of the suite's active model can come between; the tests it runs
	// beside have servers of their own. Each Python client takes a second
	// to start.
	t.Parallel()
	a, _ := twoModels(t)
	for _, hb := range []int{0, 100} {
		t.Run(fmt.Sprintf("heartbeat=%dms", hb), func(t *testing.T) {
			batches := runPython(t, suite.zmq, hb, scenarioOrder)
			for _, m := range batches {
				for name, got := range m {
					checkScenario(t, name, got)
					if got.Type == "predict_reply" && got.Code == nil && got.Body["model_version"] != a {
						t.Errorf("%s: model_version %v, want %s", name, got.Body["model_version"], a)
					}
				}
			}
		})
	}
}

// zmqClient sends raw frames through the project's Go client
// (package client), so the suite can send malformed requests too.
type zmqClient struct {
	cl *client.PredictionClient
}

func dialZMQ(t *testing.T, endpoint string) *zmqClient {
	t.Helper()
	// The per-call timeout comes from roundTrip's context.
	cl, err := client.DialPrediction(context.Background(), endpoint, client.PredictionOptions{Timeout: time.Minute, Retries: -1})
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cl.Close() })
	return &zmqClient{cl: cl}
}

func (c *zmqClient) roundTrip(frame []byte, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.cl.RoundTrip(ctx, frame)
}

// goScenarioFrame builds the same scenarios as pyzmq_client.py.
func goScenarioFrame(name string, wn, in []float64) (frame []byte, id string) {
	id = uuid.NewString()
	env := func(typ string, body any, over map[string]any) []byte {
		m := map[string]any{"v": 1, "type": typ, "id": id, "ts": float64(time.Now().UnixNano()) / 1e9}
		if body != nil {
			m["body"] = body
		}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		// Compact ints, as Python's msgpack packs them.
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.UseCompactInts(true)
		if err := enc.Encode(m); err != nil {
			panic(err)
		}
		return buf.Bytes()
	}
	body := func(w, i any) map[string]any {
		return map[string]any{
			"spectrum": map[string]any{"wavenumbers": w, "intensities": i, "channel": 1, "integration_ms": 500, "scan_seq": 7},
			"context":  map[string]any{"batch_id": "B-1", "port": "P1", "column_index": 2},
		}
	}
	with := func(i int, v float64) []float64 {
		c := append([]float64(nil), in...)
		c[i] = v
		return c
	}
	switch name {
	case "ping":
		return client.AppendPingRequest(nil, id, 1), id
	case "model_info":
		return client.AppendModelInfoRequest(nil, id, 1), id
	case "predict":
		return client.AppendPredictRequest(nil, id, 1, &client.Spectrum{Wavenumbers: wn, Intensities: in, Channel: 1, IntegrationMS: 500, ScanSeq: 7}, &client.ScanContext{BatchID: "B-1", Port: "P1", ColumnIndex: 2}), id
	case "predict_mixed_ints":
		mixed := make([]any, len(in))
		for k, v := range in {
			if k%2 == 0 {
				mixed[k] = int64(v)
			} else {
				mixed[k] = float64(int64(v))
			}
		}
		return env("predict", body(wn, mixed), nil), id
	case "wrong_v":
		return env("ping", nil, map[string]any{"v": 2}), id
	case "unknown_type":
		return env("reboot", nil, nil), id
	case "missing_id":
		return env("ping", nil, map[string]any{"id": nil}), ""
	case "not_a_map":
		b, _ := msgpack.Marshal([]int{1, 2, 3})
		return b, ""
	case "truncated":
		return client.AppendPredictRequest(nil, id, 1, &client.Spectrum{Wavenumbers: wn, Intensities: in}, nil)[:1000], id
	case "garbage":
		return []byte("\xc1\xc1 definitely not msgpack"), ""
	case "nan":
		return env("predict", body(wn, with(10, math.NaN())), nil), id
	case "inf":
		return env("predict", body(wn, with(20, math.Inf(1))), nil), id
	case "string_in_array":
		arr := make([]any, len(in))
		for k, v := range in {
			arr[k] = v
		}
		arr[0] = "x"
		return env("predict", body(wn, arr), nil), id
	case "short":
		return env("predict", body(wn[:100], in[:100]), nil), id
	case "unequal":
		return env("predict", body(wn, in[:len(in)-1]), nil), id
	case "decreasing":
		rev := make([]float64, len(wn))
		for k := range wn {
			rev[k] = wn[len(wn)-1-k]
		}
		return env("predict", body(rev, in), nil), id
	case "shifted_axis":
		sh := make([]float64, len(wn))
		for k := range wn {
			sh[k] = wn[k] + 60
		}
		return env("predict", body(sh, in), nil), id
	case "million":
		return env("predict", body(wn, make([]int64, 1_000_000)), nil), id
	case "too_large":
		big := make([]float64, 200_000)
		return env("predict", body(wn, big), nil), ""
	}
	panic("unknown scenario " + name)
}

// goResult turns a raw reply into the shape the checks use.
func goResult(t *testing.T, raw []byte, id string) channelResult {
	t.Helper()
	var m map[string]any
	if err := msgpack.Unmarshal(raw, &m); err != nil {
		t.Fatalf("reply is not a MessagePack map: %v", err)
	}
	rep, err := client.DecodeReply(raw)
	if err != nil {
		t.Fatalf("reply does not decode: %v", err)
	}
	r := channelResult{
		Type: rep.Type, V: int(rep.Version), CorrelationID: rep.CorrelationID,
		CorrelationOK: rep.CorrelationID == id, HasID: rep.ID != "", Reply: m,
	}
	_, r.TSIsFloat = m["ts"].(float64)
	if b, ok := m["body"].(map[string]any); ok {
		r.Body = b
	}
	if rep.Error != nil {
		code, msg, retry := string(rep.Error.Code), rep.Error.Message, rep.Error.Retryable
		r.Code, r.Message, r.Retryable = &code, &msg, &retry
	}
	return r
}

func TestChannelZmq4(t *testing.T) {
	a, _ := twoModels(t)
	wn, in := testSpectrum()
	c := dialZMQ(t, suite.zmq)
	for _, name := range scenarioOrder {
		frame, id := goScenarioFrame(name, wn, in)
		raw, err := c.roundTrip(frame, replyTimeout)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := goResult(t, raw, id)
		checkScenario(t, name, got)
		if got.Type == "predict_reply" && got.Code == nil && got.Body["model_version"] != a {
			t.Errorf("%s: model_version %v, want %s", name, got.Body["model_version"], a)
		}
	}
}

// TestChannelClientsAgree checks that libzmq and zmq4 clients get the very
// same concentrations, and that pong and model_info name the active model.
func TestChannelClientsAgree(t *testing.T) {
	a, _ := twoModels(t)
	wn, in := testSpectrum()
	c := dialZMQ(t, suite.zmq)
	frame, _ := goScenarioFrame("predict", wn, in)
	raw := must(c.roundTrip(frame, replyTimeout))(t)
	rep := must(client.DecodeReply(raw))(t)
	pr := must(client.DecodePredictReply(rep.Body))(t)
	py := runPython(t, suite.zmq, 0, []string{"predict", "ping", "model_info"})[0]
	conc := py["predict"].Body["concentrations"].(map[string]any)
	for _, name := range []string{"EPA", "DHA", "DPA"} {
		goVal := pr.Concentrations.Value[analyteIndex(name)]
		if pyVal, _ := conc[name].(float64); pyVal != goVal || math.IsNaN(goVal) {
			t.Errorf("%s: pyzmq %v, zmq4 %v", name, conc[name], goVal)
		}
		if cf := pr.Confidence.Value[analyteIndex(name)]; cf < 0 || cf > 1 {
			t.Errorf("confidence %s = %v outside [0,1]", name, cf)
		}
	}
	if pr.ModelVersion != a || py["ping"].Body["model_version"] != a || py["model_info"].Body["active_version"] != a {
		t.Errorf("versions: predict %s, pong %v, model_info %v; want %s", pr.ModelVersion, py["ping"].Body["model_version"], py["model_info"].Body["active_version"], a)
	}
	if n, _ := py["model_info"].Body["wavenumber_count"].(float64); int(n) != len(wn) {
		// JSON numbers come back as float64.
		t.Errorf("model_info wavenumber_count = %v, want %d", py["model_info"].Body["wavenumber_count"], len(wn))
	}
}

func analyteIndex(name string) int {
	return strings.Index("EPA DHA DPA", name) / 4
}

// TestHostileMessagesLeaveOthersServed: after each malformed or hostile
// message from one client (undecodable bytes, truncated MessagePack, not a
// map, a wrong v, a missing id, NaN and Inf, a 10^6-element array, an
// oversized message), that client gets its one error reply, and another
// client's ping is still answered within 50 ms: the best of three, so a
// single scheduling hiccup on a loaded machine does not fail it.
func TestHostileMessagesLeaveOthersServed(t *testing.T) {
	twoModels(t)
	wn, in := testSpectrum()
	hostile := dialZMQ(t, suite.zmq)
	good := dialZMQ(t, suite.zmq)
	for _, name := range []string{"garbage", "truncated", "not_a_map", "wrong_v", "missing_id", "nan", "inf", "million", "too_large"} {
		t.Run(name, func(t *testing.T) {
			frame, id := goScenarioFrame(name, wn, in)
			raw := must(hostile.roundTrip(frame, replyTimeout))(t)
			got := goResult(t, raw, id)
			if want := channelScenarios[name]; got.Type != want.replyType || got.Code == nil || *got.Code != want.code {
				t.Fatalf("reply %s %v, want %s %s", got.Type, got.Code, want.replyType, want.code)
			}
			best := time.Hour
			for i := 0; i < 3; i++ {
				ping, pingID := goScenarioFrame("ping", wn, in)
				start := time.Now()
				raw := must(good.roundTrip(ping, replyTimeout))(t)
				best = min(best, time.Since(start))
				if pong := goResult(t, raw, pingID); pong.Type != "pong" || !pong.CorrelationOK {
					t.Fatalf("the other client's ping got %s (correlation ok %v)", pong.Type, pong.CorrelationOK)
				}
			}
			if best > 50*time.Millisecond {
				t.Fatalf("the other client's best ping round trip took %v, want <= 50ms", best)
			}
		})
	}
}

// TestModelInfoMatchesHTTP: the channel's model_info_reply carries the same
// fields and values as GET /model/info (messages.md section 3.3),
// trained_at to the nanosecond included.
func TestModelInfoMatchesHTTP(t *testing.T) {
	twoModels(t)
	cl, err := client.DialPrediction(context.Background(), suite.zmq, client.PredictionOptions{Timeout: replyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ch, err := cl.ModelInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := must(api(t).GetModelInfoWithResponse(context.Background(), nil))(t).JSON200
	if h == nil {
		t.Fatal("GET /model/info has no model")
	}
	breakdown := func(m *gen.MetricBreakdown) [3]float64 {
		if m == nil {
			return [3]float64{}
		}
		var out [3]float64
		for i, v := range []*float64{m.EPA, m.DHA, m.DPA} {
			if v != nil {
				out[i] = *v
			}
		}
		return out
	}
	if ch.ActiveVersion != h.ActiveVersion || ch.Algorithm != h.Algorithm || !ch.TrainedAt.Equal(h.TrainedAt) ||
		h.LatentComponents == nil || ch.LatentComponents != *h.LatentComponents ||
		h.TrainedSamples == nil || ch.TrainedSamples != *h.TrainedSamples ||
		h.WavenumberCount == nil || ch.WavenumberCount != *h.WavenumberCount ||
		h.WavenumberRange == nil || ch.WavenumberRange[0] != (*h.WavenumberRange)[0] || ch.WavenumberRange[1] != (*h.WavenumberRange)[1] ||
		ch.RMSE.Value != breakdown(h.Rmse) || ch.R2.Value != breakdown(h.R2) {
		t.Fatalf("model_info over the channel %+v\ndiffers from GET /model/info %+v", ch, h)
	}
}

// TestChannelFailureReplyType: a predict whose spectrum is bad is answered
// with type predict_reply, error.code INVALID_SPECTRUM and an empty body,
// as the interface document describes, to a real libzmq client (pyzmq) and
// to go-zeromq/zmq4 (the project's client, raw and typed). A request of
// unknown type still gets type "error".
func TestChannelFailureReplyType(t *testing.T) {
	twoModels(t)
	wn, in := testSpectrum()
	py := runPython(t, suite.zmq, 0, []string{"nan", "unequal", "unknown_type"})[0]
	for _, name := range []string{"nan", "unequal", "unknown_type"} {
		got := py[name]
		t.Logf("pyzmq %s: type=%s error.code=%s body=%v", name, got.Type, codeOf(got.Code), got.Body)
		checkScenario(t, name, got)
	}

	c := dialZMQ(t, suite.zmq)
	for _, name := range []string{"nan", "unequal", "unknown_type"} {
		frame, id := goScenarioFrame(name, wn, in)
		got := goResult(t, must(c.roundTrip(frame, replyTimeout))(t), id)
		t.Logf("zmq4 %s: type=%s error.code=%s body=%v", name, got.Type, codeOf(got.Code), got.Body)
		checkScenario(t, name, got)
	}

	typed, err := client.DialPrediction(context.Background(), suite.zmq, client.PredictionOptions{Timeout: replyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer typed.Close()
	_, err = typed.Predict(context.Background(), &client.Spectrum{Wavenumbers: wn, Intensities: in[:len(in)-1]}, nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != "INVALID_SPECTRUM" || ce.Retryable {
		t.Fatalf("typed zmq4 predict of unequal arrays: %v, want INVALID_SPECTRUM", err)
	}
	t.Logf("zmq4 typed client: %v", ce)
}

func codeOf(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
