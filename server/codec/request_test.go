package codec

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"ramanserve/client"
	"ramanserve/server/codec/wire"
	"ramanserve/server/contract"

	"github.com/vmihailenco/msgpack/v5"
)

func TestDecodeRequestPredict(t *testing.T) {
	w, x := axis(2048), intensities(2048)
	mixedW := []any{int8(-3), 0, uint8(200), uint16(60000), uint32(70000), uint64(1) << 40, int64(-1) << 40, float32(1.5), 2.25, int16(-300), int32(-70000)}
	mixedWant := []float64{-3, 0, 200, 60000, 70000, 1 << 40, -(1 << 40), 1.5, 2.25, -300, -70000}
	deep := any("leaf")
	for i := 0; i < wire.MaxSkipDepth-4; i++ {
		deep = []any{deep}
	}

	tests := []struct {
		name  string
		msg   any
		wantW []float64
		wantX []float64
	}{
		{
			name:  "float64 arrays, type before body",
			msg:   predictEnvelope("id-1", predictBody(w, x)),
			wantW: w, wantX: x,
		},
		{
			name:  "body before type and id",
			msg:   ordered{"body", predictBody(w, x), "ts", 1.7e9, "type", "predict", "v", 1, "id", "id-1"},
			wantW: w, wantX: x,
		},
		{
			name:  "mixed integer and float element types",
			msg:   predictEnvelope("id-1", predictBody(mixedW, mixedW)),
			wantW: mixedWant, wantX: mixedWant,
		},
		{
			name: "text as bin, unknown keys at every level, nested values skipped",
			msg: ordered{
				[]byte("trace"), ordered{"a", []any{1, ordered{"b", deep}}},
				[]byte("v"), 1, []byte("type"), []byte("predict"), []byte("id"), []byte("id-1"), 7, "int key ignored",
				"ts", 1.7e9,
				"body", ordered{
					"extra", deep,
					"spectrum", ordered{"note", ordered{"x", []any{nil, true}}, "wavenumbers", []float64{1, 2}, "intensities", []float64{3, 4},
						"channel", 2, "integration_ms", 50.0, "scan_seq", 17},
					"context", ordered{[]byte("batch_id"), []byte("B-7"), "port", "P1", "column_index", 3, "extra", raw{0xd6, 0x01, 1, 2, 3, 4}},
				},
			},
			wantW: []float64{1, 2}, wantX: []float64{3, 4},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			if err := DecodeRequest(pack(t, tc.msg), &req); err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if req.Version != 1 || req.Type != TypePredict || string(req.ID) != "id-1" || !req.HasTS || req.TS != 1.7e9 {
				t.Errorf("envelope: v=%d type=%v id=%q ts=%v/%v", req.Version, req.Type, req.ID, req.TS, req.HasTS)
			}
			s := req.Predict.Spectrum
			if !slices.Equal(s.Wavenumbers, tc.wantW) || !slices.Equal(s.Intensities, tc.wantX) {
				t.Errorf("arrays: got %v / %v", head(s.Wavenumbers), head(s.Intensities))
			}
			if !s.HasChannel || s.Channel != 2 || !s.HasIntegrationMS || s.IntegrationMS != 50 || !s.HasScanSeq || s.ScanSeq != 17 {
				t.Errorf("spectrum scalars: %+v", s)
			}
			c := req.Predict.Context
			if !c.HasBatchID || string(c.BatchID) != "B-7" || !c.HasPort || string(c.Port) != "P1" || !c.HasColumnIndex || c.ColumnIndex != 3 {
				t.Errorf("context: %+v", c)
			}
		})
	}
}

func head(v []float64) []float64 {
	if len(v) > 4 {
		return v[:4]
	}
	return v
}

func TestDecodeRequestOptionalFields(t *testing.T) {
	msg := ordered{"v", 1, "type", "predict", "id", "x", "body", ordered{
		"spectrum", ordered{"wavenumbers", []int{1, 2}, "intensities", []int{5, 6}, "channel", nil},
		"context", nil,
	}}
	var req Request
	if err := DecodeRequest(pack(t, msg), &req); err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	s, c := req.Predict.Spectrum, req.Predict.Context
	if req.HasTS || s.HasChannel || s.HasIntegrationMS || s.HasScanSeq || c.HasBatchID || c.HasPort || c.HasColumnIndex {
		t.Errorf("absent fields reported present: ts=%v %+v %+v", req.HasTS, s, c)
	}
	if !slices.Equal(s.Intensities, []float64{5, 6}) {
		t.Errorf("intensities %v", s.Intensities)
	}
}

func TestDecodeRequestPingAndModelInfo(t *testing.T) {
	tests := []struct {
		name string
		msg  any
		want MessageType
	}{
		{"ping without body", ordered{"v", 1, "type", "ping", "id", "p"}, TypePing},
		{"ping with nil body", ordered{"v", 1, "type", "ping", "id", "p", "ts", 1.0, "body", nil}, TypePing},
		{"ping with content ignored", ordered{"v", 1, "type", "ping", "id", "p", "body", ordered{"spectrum", "not checked"}}, TypePing},
		{"model_info, body first", ordered{"body", ordered{}, "v", 1, "type", "model_info", "id", "p"}, TypeModelInfo},
		{"integer ts", ordered{"v", 1, "type", "model_info", "id", "p", "ts", 1700000000}, TypeModelInfo},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			if err := DecodeRequest(pack(t, tc.msg), &req); err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if req.Type != tc.want || string(req.ID) != "p" {
				t.Errorf("type=%v id=%q", req.Type, req.ID)
			}
		})
	}
}

// fixintArray returns an array header announcing n elements followed by n
// positive fixints, as raw MessagePack.
func fixintArray(n int) raw {
	b := []byte{wire.CodeArray32, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	return append(b, bytes.Repeat([]byte{7}, n)...)
}

func TestDecodeRequestErrors(t *testing.T) {
	good := pack(t, predictEnvelope("abc", predictBody([]float64{1, 2, 3}, []float64{4, 5, 6})))
	idFirst := pack(t, ordered{"id", "abc", "v", 1, "type", "predict", "body", predictBody([]float64{1, 2, 3}, []float64{4, 5, 6})})
	deep := any(1)
	for i := 0; i < wire.MaxSkipDepth+2; i++ {
		deep = []any{deep}
	}
	withIntensities := func(x any) []byte {
		return pack(t, predictEnvelope("abc", predictBody([]float64{1, 2, 3}, x)))
	}
	// Body first, id last: a body error must not lose the id.
	bodyFirst := func(x any) []byte {
		return pack(t, ordered{"type", "predict", "body", predictBody([]float64{1, 2, 3}, x), "v", 1, "id", "abc"})
	}

	tests := []struct {
		name    string
		data    []byte
		code    contract.Code
		wantID  string // "" means not recovered
		message string // substring of the error message
	}{
		{"empty frame", nil, contract.MalformedMessage, "", "empty"},
		{"invalid type code", []byte{0xc1}, contract.MalformedMessage, "", "map"},
		{"top-level array", pack(t, []int{1, 2}), contract.MalformedMessage, "", "array, not a map"},
		{"top-level string", pack(t, "ping"), contract.MalformedMessage, "", "string, not a map"},
		{"truncated after id", good[:len(good)/2], contract.MalformedMessage, "abc", "truncated"},
		{"truncated before id", idFirst[:3], contract.MalformedMessage, "", "truncated"},
		{"map announcing more entries than bytes", []byte{wire.CodeMap32, 0xff, 0xff, 0xff, 0xff, 0xa1, 'v', 1}, contract.MalformedMessage, "", "truncated"},
		{"trailing bytes", append(slices.Clone(good), 0xc0), contract.MalformedMessage, "abc", "trailing"},
		{"missing id", pack(t, ordered{"v", 1, "type", "ping"}), contract.MalformedMessage, "", "missing envelope field id"},
		{"integer id", pack(t, ordered{"v", 1, "type", "ping", "id", 5}), contract.MalformedMessage, "", "id must be a string, got integer"},
		{"empty id", pack(t, ordered{"v", 1, "type", "ping", "id", ""}), contract.MalformedMessage, "", "id must not be empty"},
		{"overlong id", pack(t, ordered{"v", 1, "type", "ping", "id", strings.Repeat("x", MaxIDLength+1)}), contract.MalformedMessage, "", "longer than 256"},
		{"missing v", pack(t, ordered{"type", "ping", "id", "abc"}), contract.MalformedMessage, "abc", "missing envelope field v"},
		{"string v", pack(t, ordered{"v", "1", "type", "ping", "id", "abc"}), contract.MalformedMessage, "abc", "v must be an integer, got string"},
		{"float v", pack(t, ordered{"v", 1.0, "type", "ping", "id", "abc"}), contract.MalformedMessage, "abc", "v must be an integer, got float"},
		{"v 2", pack(t, ordered{"v", 2, "type", "ping", "id", "abc"}), contract.UnsupportedVersion, "abc", "v=2"},
		{"v 0", pack(t, ordered{"v", 0, "type", "ping", "id", "abc"}), contract.UnsupportedVersion, "abc", "v=0"},
		{"v above int64", pack(t, ordered{"v", uint64(math.MaxUint64), "type", "ping", "id", "abc"}), contract.UnsupportedVersion, "abc", "above 2^63"},
		{"v 2 wins over unknown type and missing id", pack(t, ordered{"v", 2, "type", "predict2"}), contract.UnsupportedVersion, "", "v=2"},
		{"missing type", pack(t, ordered{"v", 1, "id", "abc"}), contract.MalformedMessage, "abc", "missing envelope field type"},
		{"integer type", pack(t, ordered{"v", 1, "id", "abc", "type", 3}), contract.MalformedMessage, "abc", "type must be a string"},
		{"unknown type", pack(t, ordered{"v", 1, "id", "abc", "type", "predicts"}), contract.UnknownType, "abc", `"predicts"`},
		{"reply type sent as request", pack(t, ordered{"v", 1, "id", "abc", "type", "pong"}), contract.UnknownType, "abc", "unknown message type"},
		{"string ts", pack(t, ordered{"v", 1, "id", "abc", "type", "ping", "ts", "now"}), contract.MalformedMessage, "abc", "ts must be a number"},
		{"array body", pack(t, ordered{"v", 1, "id", "abc", "type", "ping", "body", []int{}}), contract.MalformedMessage, "abc", "body must be a map, got array"},
		{"duplicate id", pack(t, ordered{"v", 1, "id", "abc", "type", "ping", "id", "def"}), contract.MalformedMessage, "abc", `duplicate envelope key "id"`},
		{"unknown key nested too deep", pack(t, ordered{"v", 1, "id", "abc", "type", "ping", "x", deep}), contract.MalformedMessage, "abc", "deeper than 32"},
		{"body key nested too deep", pack(t, ordered{"id", "abc", "v", 1, "type", "predict", "body", ordered{"x", deep}}), contract.MalformedMessage, "abc", "deeper than 32"},
		{"predict without body", pack(t, ordered{"v", 1, "id", "abc", "type", "predict"}), contract.InvalidSpectrum, "abc", "body.spectrum is missing"},
		{"predict with nil body", pack(t, ordered{"v", 1, "id", "abc", "type", "predict", "body", nil}), contract.InvalidSpectrum, "abc", "body.spectrum is missing"},
		{"predict without spectrum", pack(t, predictEnvelope("abc", ordered{"context", ordered{}})), contract.InvalidSpectrum, "abc", "body.spectrum is missing"},
		{"spectrum is a list", pack(t, predictEnvelope("abc", ordered{"spectrum", []int{1}})), contract.InvalidSpectrum, "abc", "body.spectrum must be a map, got array"},
		{"spectrum is nil", pack(t, predictEnvelope("abc", ordered{"spectrum", nil})), contract.InvalidSpectrum, "abc", "body.spectrum must be a map, got nil"},
		{"wavenumbers missing", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"intensities", []int{1}}})), contract.InvalidSpectrum, "abc", "wavenumbers is missing"},
		{"intensities missing", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"wavenumbers", []int{1}}})), contract.InvalidSpectrum, "abc", "intensities is missing"},
		{"intensities not an array", withIntensities("1,2,3"), contract.InvalidSpectrum, "abc", "intensities must be an array of numbers, got string"},
		{"nil element", withIntensities([]any{1.0, 2.0, nil}), contract.InvalidSpectrum, "abc", "body.spectrum.intensities[2] is nil"},
		{"bool element", withIntensities([]any{true, 2.0, 3.0}), contract.InvalidSpectrum, "abc", "body.spectrum.intensities[0] is boolean"},
		{"string element", withIntensities([]any{1.0, "2", 3.0}), contract.InvalidSpectrum, "abc", "body.spectrum.intensities[1] is string"},
		{"map element", withIntensities([]any{1.0, 2.0, map[string]int{"a": 1}}), contract.InvalidSpectrum, "abc", "intensities[2] is map"},
		{"bin element", withIntensities([]any{1.0, []byte{1}, 3.0}), contract.InvalidSpectrum, "abc", "intensities[1] is binary"},
		{"NaN element", withIntensities([]float64{1, math.NaN(), 3}), contract.InvalidSpectrum, "abc", "intensities[1] is not finite (NaN)"},
		{"+Inf element", withIntensities([]float64{1, 2, math.Inf(1)}), contract.InvalidSpectrum, "abc", "intensities[2] is not finite (+Inf)"},
		{"-Inf float32 element", withIntensities([]any{float32(math.Inf(-1)), 2.0, 3.0}), contract.InvalidSpectrum, "abc", "intensities[0] is not finite (-Inf)"},
		{"NaN element, id after body", bodyFirst([]float64{math.NaN(), 2, 3}), contract.InvalidSpectrum, "abc", "intensities[0] is not finite"},
		{"string element, id after body", bodyFirst([]any{1, 2, "x"}), contract.InvalidSpectrum, "abc", "intensities[2] is string"},
		{"length mismatch", withIntensities([]float64{1, 2}), contract.InvalidSpectrum, "abc", "wavenumbers has 3 points but body.spectrum.intensities has 2"},
		{"empty arrays", pack(t, predictEnvelope("abc", predictBody([]float64{}, []float64{}))), contract.InvalidSpectrum, "abc", "intensities is empty"},
		{"too many points", withIntensities(fixintArray(MaxPoints + 1)), contract.InvalidSpectrum, "abc", "too many points (65537, at most 65536)"},
		{"10^6 points, id after body", bodyFirst(fixintArray(1_000_000)), contract.InvalidSpectrum, "abc", "too many points"},
		{"array claiming 2^32-1 points, truncated", withIntensities(raw{wire.CodeArray32, 0xff, 0xff, 0xff, 0xff, 1}), contract.MalformedMessage, "abc", "truncated"},
		{"string channel", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{1}, "channel", "2"}})), contract.InvalidSpectrum, "abc", "body.spectrum.channel must be a number, got string"},
		{"integer port", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{1}}, "context", ordered{"port", 1}})), contract.InvalidSpectrum, "abc", "body.context.port must be a string, got integer"},
		{"context is a string", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{1}}, "context", "x"})), contract.InvalidSpectrum, "abc", "body.context must be a map"},
		{"id not UTF-8 (bin)", pack(t, ordered{"v", 1, "type", "ping", "id", []byte{0xff, 0xfe, '-', 'i', 'd'}}), contract.MalformedMessage, "", "not valid UTF-8"},
		{"duplicate optional spectrum key", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{1}, "channel", 1, "channel", 2}})), contract.InvalidSpectrum, "abc", "duplicate key body.spectrum.channel"},
		{"duplicate context key", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{1}}, "context", ordered{"port", "P1", "port", "P2"}})), contract.InvalidSpectrum, "abc", "duplicate key body.context.port"},
		{"duplicate spectrum key", pack(t, predictEnvelope("abc", ordered{"spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{1}, "intensities", []int{2}}})), contract.InvalidSpectrum, "abc", "duplicate key body.spectrum.intensities"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			err := DecodeRequest(tc.data, &req)
			var e *contract.Error
			if !errors.As(err, &e) {
				t.Fatalf("want *contract.Error %s, got %v", tc.code, err)
			}
			if e.Code != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Errorf("got %s %q, want %s containing %q", e.Code, e.Message, tc.code, tc.message)
			}
			if e.Retryable() {
				t.Errorf("decode errors must not be retryable")
			}
			if string(req.ID) != tc.wantID || (tc.wantID == "" && req.ID != nil) {
				t.Errorf("recovered id %q (nil=%v), want %q", req.ID, req.ID == nil, tc.wantID)
			}
		})
	}
}

func TestDecodeRequestReuseResets(t *testing.T) {
	var req Request
	big := pack(t, predictEnvelope("first", predictBody(axis(2048), intensities(2048))))
	if err := DecodeRequest(big, &req); err != nil {
		t.Fatal(err)
	}
	small := pack(t, ordered{"v", 1, "type", "predict", "id", "second", "body", ordered{"spectrum", ordered{"wavenumbers", []int{1}, "intensities", []int{9}}}})
	if err := DecodeRequest(small, &req); err != nil {
		t.Fatal(err)
	}
	s := req.Predict.Spectrum
	if string(req.ID) != "second" || req.HasTS || s.HasChannel || req.Predict.Context.HasPort ||
		!slices.Equal(s.Wavenumbers, []float64{1}) || !slices.Equal(s.Intensities, []float64{9}) {
		t.Errorf("stale state after reuse: id=%q ts=%v %+v", req.ID, req.HasTS, s)
	}
	if err := DecodeRequest([]byte{0x90}, &req); err == nil || req.ID != nil || req.Type != TypeUnknown {
		t.Errorf("after a failed decode: err=%v id=%q type=%v", err, req.ID, req.Type)
	}
}

func TestDecodeRequestZeroAllocs(t *testing.T) {
	for _, order := range []string{"type first", "body first"} {
		t.Run(order, func(t *testing.T) {
			msg := any(predictEnvelope("0b7f3c9e-1f6a-4a53-9d0e-4f4f3b1f2a10", predictBody(axis(2048), intensities(2048))))
			if order == "body first" {
				msg = ordered{"body", predictBody(axis(2048), intensities(2048)), "v", 1, "type", "predict", "id", "0b7f3c9e"}
			}
			data := pack(t, msg)
			var req Request
			if err := DecodeRequest(data, &req); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				if err := DecodeRequest(data, &req); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("DecodeRequest allocated %v times per run after warm-up", allocs)
			}
		})
	}
}

// The independent decoder must read our encoded requests as the contract
// says: text as str, arrays of float64.
func TestAppendPredictRequestIsReadableByReference(t *testing.T) {
	s := client.Spectrum{Wavenumbers: []float64{1, 2}, Intensities: []float64{3, 4}, Channel: 2, IntegrationMS: 50, ScanSeq: 9}
	c := client.ScanContext{BatchID: "B", Port: "P", ColumnIndex: 4}
	data := client.AppendPredictRequest(nil, "req-1", 12.5, &s, &c)

	m := unpack(t, data)
	if m["v"] != int8(1) || m["type"] != "predict" || m["id"] != "req-1" || m["ts"] != 12.5 {
		t.Errorf("envelope %v", m)
	}
	body := m["body"].(map[string]any)
	spec := body["spectrum"].(map[string]any)
	if got := spec["intensities"].([]any); got[0] != 3.0 || got[1] != 4.0 {
		t.Errorf("intensities %v", got)
	}
	if spec["integration_ms"] != 50.0 || spec["channel"] != int8(2) {
		t.Errorf("spectrum %v", spec)
	}
	if ctx := body["context"].(map[string]any); ctx["port"] != "P" || ctx["batch_id"] != "B" {
		t.Errorf("context %v", ctx)
	}

	var req Request
	if err := DecodeRequest(data, &req); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(req.Predict.Spectrum.Intensities, s.Intensities) || req.Predict.Spectrum.ScanSeq != 9 || string(req.Predict.Context.BatchID) != "B" {
		t.Errorf("round trip %+v", req.Predict)
	}
}

func TestRequestEncodersRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		data []byte
		want MessageType
	}{
		{client.AppendPingRequest(nil, "a", 1), TypePing},
		{client.AppendModelInfoRequest(nil, "a", 1), TypeModelInfo},
	} {
		var req Request
		if err := DecodeRequest(tc.data, &req); err != nil || req.Type != tc.want || string(req.ID) != "a" {
			t.Errorf("%v: err=%v type=%v id=%q", tc.want, err, req.Type, req.ID)
		}
	}
	// msgpack.Unmarshal agrees on the shape of an empty body.
	m := unpack(t, client.AppendPingRequest(nil, "a", 1))
	if b, ok := m["body"].(map[string]any); !ok || len(b) != 0 {
		t.Errorf("ping body %#v", m["body"])
	}
	var v any
	if err := msgpack.Unmarshal(client.AppendModelInfoRequest(nil, "a", 1), &v); err != nil {
		t.Error(err)
	}
}

// TestDecodeRequestTypeForReply: a failed request keeps its type (so the
// reply is its own reply type) as long as the frame is one well-formed map
// with one type field naming a request type; otherwise it is TypeUnknown
// and the reply is "error".
func TestDecodeRequestTypeForReply(t *testing.T) {
	ping := pack(t, ordered{"v", 1, "type", "ping", "id", "a"})
	tests := []struct {
		name string
		data []byte
		want MessageType
	}{
		{"unsupported version", pack(t, ordered{"v", 2, "type", "ping", "id", "a"}), TypePing},
		{"missing id", pack(t, ordered{"v", 1, "type", "model_info"}), TypeModelInfo},
		{"bad ts", pack(t, ordered{"v", 1, "type", "ping", "id", "a", "ts", "x"}), TypePing},
		{"repeated id", pack(t, ordered{"v", 1, "type", "ping", "id", "a", "id", "b"}), TypePing},
		{"invalid spectrum", pack(t, predictEnvelope("a", predictBody([]float64{1}, []float64{math.NaN()}))), TypePredict},
		{"body before type, invalid", pack(t, ordered{"body", predictBody([]float64{1}, []float64{}), "v", 1, "type", "predict", "id", "a"}), TypePredict},
		{"unknown type", pack(t, ordered{"v", 1, "type", "reboot", "id", "a"}), TypeUnknown},
		{"type not text", pack(t, ordered{"v", 1, "type", 3, "id", "a"}), TypeUnknown},
		{"type missing", pack(t, ordered{"v", 1, "id", "a"}), TypeUnknown},
		{"type repeated", pack(t, ordered{"v", 1, "type", "ping", "id", "a", "type", "predict"}), TypeUnknown},
		{"truncated", ping[:len(ping)-1], TypeUnknown},
		{"trailing bytes", append(append([]byte(nil), ping...), 0xc0), TypeUnknown},
		{"not a map", pack(t, []any{"ping"}), TypeUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			if err := DecodeRequest(tc.data, &req); err == nil {
				t.Fatal("decoded without error")
			}
			if req.Type != tc.want {
				t.Errorf("Type = %v, want %v (reply %s)", req.Type, tc.want, ReplyTypeFor(req.Type))
			}
		})
	}
}
