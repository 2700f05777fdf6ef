package conformance

import (
	"encoding/json"
	"testing"
)

// TestChannelSchemasDiscriminate checks that ChannelRequest and ChannelReply
// pick their member schema by `type` (kin-openapi's oneOf + discriminator):
// a body is checked against its own type's schema, a failed request is
// answered with its own reply type and an empty body, and `error` replies
// carry an error.
func TestChannelSchemasDiscriminate(t *testing.T) {
	const env = `"v":1,"id":"r","correlation_id":"q","ts":1.5`
	pong := `{"server_version":"x","protocol_version":1,"model_version":"","uptime_seconds":1.0}`
	predict := `{"concentrations":{"EPA":1.0},"confidence":{},"model_version":"a","inference_ms":0.5}`
	fail := func(code string) string { return `{"code":"` + code + `","message":"m","retryable":false}` }
	summary := `{"total":2.0,"top":[{"wavenumber":1655.2,"value":1.5}],"regions":[{"region":[600.0,1800.0],"value":2.0}]}`
	explained := `{"concentrations":{"EPA":1.0},"confidence":{},"model_version":"a","inference_ms":0.5,"contributions":{"q":` + summary + `,"t2":` + summary + `}}`
	noTotal := `{"concentrations":{"EPA":1.0},"confidence":{},"model_version":"a","inference_ms":0.5,"contributions":{"q":{"top":[],"regions":[]}}}`
	replies := []struct {
		name, msg string
		valid     bool
	}{
		{"pong", `{` + env + `,"type":"pong","body":` + pong + `,"error":null}`, true},
		{"predict_reply", `{` + env + `,"type":"predict_reply","body":` + predict + `,"error":null}`, true},
		{"failed predict", `{` + env + `,"type":"predict_reply","body":{},"error":` + fail("INVALID_SPECTRUM") + `}`, true},
		{"predict_reply with contributions", `{` + env + `,"type":"predict_reply","body":` + explained + `,"error":null}`, true},
		{"contributions without total", `{` + env + `,"type":"predict_reply","body":` + noTotal + `,"error":null}`, false},
		{"refused options", `{` + env + `,"type":"predict_reply","body":{},"error":` + fail("INVALID_REQUEST") + `}`, true},
		{"failed model_info", `{` + env + `,"type":"model_info_reply","body":{},"error":` + fail("MODEL_NOT_LOADED") + `}`, true},
		{"unknown type", `{` + env + `,"type":"error","body":{},"error":` + fail("UNKNOWN_TYPE") + `}`, true},
		{"predict_reply with a pong body", `{` + env + `,"type":"predict_reply","body":` + pong + `,"error":null}`, false},
		{"pong with a predict body", `{` + env + `,"type":"pong","body":` + predict + `,"error":null}`, false},
		{"error without error", `{` + env + `,"type":"error","body":{},"error":null}`, false},
		{"error with a body", `{` + env + `,"type":"error","body":` + pong + `,"error":` + fail("UNKNOWN_TYPE") + `}`, false},
		{"no such reply type", `{` + env + `,"type":"predict","body":{},"error":null}`, false},
		{"bad code", `{` + env + `,"type":"pong","body":{},"error":` + fail("NOPE") + `}`, false},
	}
	for _, c := range replies {
		if err := visit(t, "ChannelReply", c.msg); (err == nil) != c.valid {
			t.Errorf("ChannelReply %s: valid = %v, want %v (%v)", c.name, err == nil, c.valid, err)
		}
	}
	requests := []struct {
		name, msg string
		valid     bool
	}{
		{"ping", `{"v":1,"type":"ping","id":"a"}`, true},
		{"model_info", `{"v":1,"type":"model_info","id":"a","ts":null,"body":null}`, true},
		{"predict", `{"v":1,"type":"predict","id":"a","ts":1.5,"body":{"spectrum":{"wavenumbers":[1.0],"intensities":[2.0]}}}`, true},
		{"predict with contributions", `{"v":1,"type":"predict","id":"a","body":{"spectrum":{"wavenumbers":[1.0],"intensities":[2.0]},"options":{"contributions":10}}}`, true},
		{"predict with 65 contributions", `{"v":1,"type":"predict","id":"a","body":{"spectrum":{"wavenumbers":[1.0],"intensities":[2.0]},"options":{"contributions":65}}}`, false},
		{"predict without body", `{"v":1,"type":"predict","id":"a"}`, false},
		{"predict with a spectrum-less body", `{"v":1,"type":"predict","id":"a","body":{}}`, false},
		{"a reply type", `{"v":1,"type":"pong","id":"a"}`, false},
		{"version 2", `{"v":2,"type":"ping","id":"a"}`, false},
	}
	for _, c := range requests {
		if err := visit(t, "ChannelRequest", c.msg); (err == nil) != c.valid {
			t.Errorf("ChannelRequest %s: valid = %v, want %v (%v)", c.name, err == nil, c.valid, err)
		}
	}
}

func visit(t *testing.T, schema, msg string) error {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(msg), &v); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	return spec.Components.Schemas[schema].Value.VisitJSON(v)
}
