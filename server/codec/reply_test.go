package codec

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/server/contract"
)

var testMeta = ReplyMeta{
	ID:            NewIDGeneratorWithPrefix([8]byte{1, 2, 3, 4, 5, 6, 7, 8}).Next(),
	CorrelationID: []byte("req-42"),
	TS:            1700000000.25,
}

// checkEnvelope asserts the fields every reply carries and returns the
// body and error values as the reference decoder sees them.
func checkEnvelope(t *testing.T, m map[string]any, typ string) (body map[string]any, errObj any) {
	t.Helper()
	if m["v"] != int8(1) {
		t.Errorf("v = %#v, want int 1", m["v"])
	}
	if m["type"] != typ {
		t.Errorf("type = %#v, want %q", m["type"], typ)
	}
	if m["id"] != testMeta.ID.String() {
		t.Errorf("id = %#v, want %s", m["id"], testMeta.ID)
	}
	if m["correlation_id"] != "req-42" {
		t.Errorf("correlation_id = %#v", m["correlation_id"])
	}
	if m["ts"] != 1700000000.25 {
		t.Errorf("ts = %#v, want float64", m["ts"])
	}
	if len(m) != 7 {
		t.Errorf("envelope has %d keys, want 7: %v", len(m), m)
	}
	body, ok := m["body"].(map[string]any)
	if !ok {
		t.Fatalf("body = %#v, want map", m["body"])
	}
	e, ok := m["error"]
	if !ok {
		t.Fatalf("no error key")
	}
	return body, e
}

func TestAppendPong(t *testing.T) {
	p := Pong{ServerVersion: "0.1.0", ProtocolVersion: 1, ModelVersion: "", UptimeSeconds: 3}
	data := AppendPong([]byte("prefix"), testMeta, &p)
	if string(data[:6]) != "prefix" {
		t.Fatalf("dst prefix overwritten")
	}
	body, e := checkEnvelope(t, unpack(t, data[6:]), "pong")
	if e != nil {
		t.Errorf("error = %#v, want nil", e)
	}
	want := map[string]any{"server_version": "0.1.0", "protocol_version": int8(1), "model_version": "", "uptime_seconds": 3.0}
	assertMap(t, body, want)
}

// assertMap compares generic maps including the dynamic types, so an int
// where a float64 is due fails.
func assertMap(t *testing.T, got, want map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d keys %v, want %d %v", len(got), got, len(want), want)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("missing key %q", k)
			continue
		}
		if gm, ok := g.(map[string]any); ok {
			assertMap(t, gm, w.(map[string]any))
			continue
		}
		if ga, ok := g.([]any); ok {
			wa := w.([]any)
			if len(ga) != len(wa) {
				t.Errorf("%s: %#v, want %#v", k, ga, wa)
				continue
			}
			for i := range ga {
				if ga[i] != wa[i] {
					t.Errorf("%s[%d]: %#v, want %#v", k, i, ga[i], wa[i])
				}
			}
			continue
		}
		if g != w {
			t.Errorf("%s: %#v (%T), want %#v (%T)", k, g, g, w, w)
		}
	}
}

func TestAppendPredictReply(t *testing.T) {
	full := inference.Prediction{}
	full.Concentrations.Set(inference.EPA, 1.5)
	full.Concentrations.Set(inference.DHA, 2) // integral value: must still be a float
	full.Concentrations.Set(inference.DPA, -0.25)
	full.Confidence.Set(inference.EPA, 0.9)
	full.Confidence.Set(inference.DHA, 0.8)
	full.Confidence.Set(inference.DPA, 0.7)
	full.Diagnostics = inference.Diagnostics{HasT2: true, T2: 4, T2Limit: 8, ReducedT2: 0.5, Leverage: 0.1,
		HasQ: true, Q: 2, HasQLim: true, QLimit: 4, ReducedQ: 0.5}

	partial := inference.Prediction{}
	partial.Concentrations.Set(inference.DHA, 3)
	partial.Confidence.Set(inference.DHA, 1)
	partial.Diagnostics = inference.Diagnostics{HasQ: true, Q: 2}

	tests := []struct {
		name string
		pred *inference.Prediction
		want map[string]any
	}{
		{"three analytes, all diagnostics", &full, map[string]any{
			"concentrations": map[string]any{"EPA": 1.5, "DHA": 2.0, "DPA": -0.25},
			"confidence":     map[string]any{"EPA": 0.9, "DHA": 0.8, "DPA": 0.7},
			"model_version":  "v7",
			"inference_ms":   0.125,
			"diagnostics": map[string]any{"t2": 4.0, "t2_limit": 8.0, "t2_reduced": 0.5, "leverage": 0.1,
				"q": 2.0, "q_limit": 4.0, "q_reduced": 0.5},
		}},
		{"one analyte, q without limit", &partial, map[string]any{
			"concentrations": map[string]any{"DHA": 3.0},
			"confidence":     map[string]any{"DHA": 1.0},
			"model_version":  "v7",
			"inference_ms":   0.125,
			"diagnostics":    map[string]any{"q": 2.0},
		}},
		{"no diagnostics", &inference.Prediction{}, map[string]any{
			"concentrations": map[string]any{},
			"confidence":     map[string]any{},
			"model_version":  "v7",
			"inference_ms":   0.125,
			"diagnostics":    map[string]any{},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := AppendPredictReply(nil, testMeta, &PredictResult{ModelVersion: "v7", InferenceMS: 0.125, Prediction: tc.pred})
			body, e := checkEnvelope(t, unpack(t, data), "predict_reply")
			if e != nil {
				t.Errorf("error = %#v", e)
			}
			assertMap(t, body, tc.want)

			// The client-side decoder reads back the same values.
			rep, err := client.DecodeReply(data)
			if err != nil {
				t.Fatal(err)
			}
			pr, err := client.DecodePredictReply(rep.Body)
			if err != nil {
				t.Fatal(err)
			}
			if pr.Concentrations != asClient(tc.pred.Concentrations) || pr.Confidence != asClient(tc.pred.Confidence) || pr.ModelVersion != "v7" || pr.InferenceMS != 0.125 {
				t.Errorf("client decode %+v", pr)
			}
			if len(pr.Diagnostics) != len(tc.want["diagnostics"].(map[string]any)) {
				t.Errorf("client diagnostics %v", pr.Diagnostics)
			}
		})
	}
}

func TestAppendModelInfoReply(t *testing.T) {
	trained := time.Date(2024, 5, 1, 14, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	meta := inference.Metadata{Version: "v7", Algorithm: "PLS2-NIPALS", LatentComponents: 8, TrainedAt: trained,
		TrainedSamples: 120, Wavenumbers: []float64{200, 201.5, 3270.5}}
	meta.RMSE.Set(inference.EPA, 0.05)
	meta.RMSE.Set(inference.DHA, 0.04)
	meta.RMSE.Set(inference.DPA, 0.03)
	meta.R2.Set(inference.EPA, 0.99)
	bare := inference.Metadata{Version: "imported", Algorithm: "sklearn.PLSRegression", TrainedAt: trained}

	every := map[string]any{
		"active_version": "v7", "algorithm": "PLS2-NIPALS", "latent_components": int8(8),
		"trained_at": "2024-05-01T12:30:00Z", "trained_samples": int8(120),
		"rmse":             map[string]any{"EPA": 0.05, "DHA": 0.04, "DPA": 0.03},
		"r2":               map[string]any{"EPA": 0.99},
		"wavenumber_range": []any{200.0, 3270.5}, "wavenumber_count": int8(3),
	}
	withAxis := map[string]any{"wavenumbers": []any{200.0, 201.5, 3270.5}}
	for k, v := range every {
		withAxis[k] = v
	}
	tests := []struct {
		name string
		meta *inference.Metadata
		req  *ModelInfoBody
		want map[string]any
	}{
		{"every field", &meta, nil, every},
		{"not asked for the axis", &meta, &ModelInfoBody{}, every},
		{"asked for the axis", &meta, &ModelInfoBody{Wavenumbers: true}, withAxis},
		{"asked for the axis of a model without one", &bare, &ModelInfoBody{Wavenumbers: true}, map[string]any{
			"active_version": "imported", "algorithm": "sklearn.PLSRegression", "trained_at": "2024-05-01T12:30:00Z",
		}},
		{"unknown optional fields left out", &bare, nil, map[string]any{
			"active_version": "imported", "algorithm": "sklearn.PLSRegression", "trained_at": "2024-05-01T12:30:00Z",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := AppendModelInfoReply(nil, testMeta, tc.meta, tc.req)
			body, e := checkEnvelope(t, unpack(t, data), "model_info_reply")
			if e != nil {
				t.Errorf("error = %#v", e)
			}
			assertMap(t, body, tc.want)

			rep, err := client.DecodeReply(data)
			if err != nil {
				t.Fatal(err)
			}
			mi, err := client.DecodeModelInfoReply(rep.Body)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi, ok := tc.meta.WavenumberRange()
			if mi.ActiveVersion != tc.meta.Version || !mi.TrainedAt.Equal(trained) || mi.RMSE != asClient(tc.meta.RMSE) ||
				mi.HasWavenumberRange != ok || mi.WavenumberRange != [2]float64{lo, hi} || mi.WavenumberCount != len(tc.meta.Wavenumbers) ||
				mi.LatentComponents != tc.meta.LatentComponents || mi.TrainedSamples != tc.meta.TrainedSamples {
				t.Errorf("client decode %+v", mi)
			}
		})
	}
}

// asClient is b as the client decodes it (same analyte order).
func asClient(b inference.Breakdown) client.Breakdown {
	return client.Breakdown{Value: b.Value, Valid: b.Valid}
}

func TestAppendErrorReply(t *testing.T) {
	for _, code := range []contract.Code{contract.MalformedMessage, contract.UnsupportedVersion, contract.UnknownType, contract.InvalidSpectrum,
		contract.SpectrumOutOfRange, contract.ModelNotLoaded, contract.MessageTooLarge, contract.InternalError} {
		t.Run(string(code), func(t *testing.T) {
			data := AppendErrorReply(nil, testMeta, TypePing, contract.Errorf(code, "because %d", 7))
			body, e := checkEnvelope(t, unpack(t, data), "pong")
			if len(body) != 0 {
				t.Errorf("body %v, want empty map", body)
			}
			em, ok := e.(map[string]any)
			if !ok {
				t.Fatalf("error = %#v", e)
			}
			assertMap(t, em, map[string]any{"code": string(code), "message": "because 7", "retryable": false})

			rep, err := client.DecodeReply(data)
			if err != nil || rep.Error == nil || rep.Error.Code != string(code) || rep.Error.Message != "because 7" || rep.CorrelationID != "req-42" {
				t.Errorf("client decode %+v, %v", rep, err)
			}
		})
	}
}

// TestErrorReplyType: a failure is answered with the request's reply
// type; only an unknown request type gets "error". Retryable follows the
// contract's table.
func TestErrorReplyType(t *testing.T) {
	for _, tc := range []struct {
		req  MessageType
		want string
	}{{TypePing, "pong"}, {TypePredict, "predict_reply"}, {TypeModelInfo, "model_info_reply"}, {TypeUnknown, "error"}} {
		got := unpack(t, AppendErrorReply(nil, testMeta, tc.req, contract.Errorf(contract.ServerBusy, "x")))
		if got["type"] != tc.want || got["error"].(map[string]any)["retryable"] != true {
			t.Errorf("%v: type %v error %v, want %s", tc.req, got["type"], got["error"], tc.want)
		}
	}
}

func TestErrorReplyWithoutCorrelation(t *testing.T) {
	m := testMeta
	m.CorrelationID = nil
	got := unpack(t, AppendErrorReply(nil, m, TypePing, contract.Errorf(contract.MalformedMessage, "x")))
	if got["correlation_id"] != "" {
		t.Errorf("correlation_id = %#v, want empty string", got["correlation_id"])
	}
}

func TestStringEncodingSizes(t *testing.T) {
	// Every str header form, read back by the reference decoder.
	for _, n := range []int{0, 31, 32, 255, 256, 65535, 65536} {
		s := strings.Repeat("x", n)
		m := unpack(t, AppendErrorReply(nil, testMeta, TypePing, &contract.Error{Code: contract.InternalError, Message: s}))
		if got := m["error"].(map[string]any)["message"]; got != s {
			t.Errorf("len %d: message length %d", n, len(got.(string)))
		}
	}
}

func TestDecodeReplyRejectsBrokenEnvelopes(t *testing.T) {
	complete := ordered{"v", 1, "type", "pong", "id", "a", "correlation_id", "b", "ts", 1.0, "body", ordered{}, "error", nil}
	tests := []struct {
		name string
		data []byte
	}{
		{"not a map", pack(t, []int{1})},
		{"missing correlation_id", pack(t, complete[:6])},
		{"missing error", pack(t, complete[:12])},
		{"error type without error object", pack(t, ordered{"v", 1, "type", "error", "id", "a", "correlation_id", "b", "ts", 1.0, "body", ordered{}, "error", nil})},
		{"error object without code", pack(t, ordered{"v", 1, "type", "error", "id", "a", "correlation_id", "b", "ts", 1.0, "body", ordered{}, "error", ordered{"message", "x"}})},
		{"integer id", pack(t, ordered{"v", 1, "type", "pong", "id", 5, "correlation_id", "b", "ts", 1.0, "body", ordered{}, "error", nil})},
		{"trailing bytes", append(pack(t, complete), 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := client.DecodeReply(tc.data); !errors.Is(err, client.ErrBadReply) {
				t.Errorf("err = %v, want client.ErrBadReply", err)
			}
		})
	}
	if rep, err := client.DecodeReply(pack(t, complete)); err != nil || rep.Type != "pong" || rep.CorrelationID != "b" {
		t.Errorf("complete envelope: %+v %v", rep, err)
	}
}

var uuidText = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIDGenerator(t *testing.T) {
	g := NewIDGenerator()
	seen := map[string]bool{}
	for i := 0; i < 10000; i++ {
		s := g.Next().String()
		if !uuidText.MatchString(s) {
			t.Fatalf("id %q is not a version-4 UUID text", s)
		}
		if seen[s] {
			t.Fatalf("duplicate id %q after %d", s, i)
		}
		seen[s] = true
	}
	u, err := uuid.Parse(g.Next().String())
	if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
		t.Errorf("google/uuid reads version %v variant %v err %v", u.Version(), u.Variant(), err)
	}
	fixed := NewIDGeneratorWithPrefix([8]byte{0xde, 0xad, 0xbe, 0xef, 0, 1, 0xff, 3})
	if got := fixed.Next().String(); got != "deadbeef-0001-4f03-8000-000000000001" {
		t.Errorf("fixed prefix id %q", got)
	}
	if a, b := NewIDGenerator().Next(), NewIDGenerator().Next(); a == b {
		t.Errorf("two generators produced the same first id %s", a)
	}
}
