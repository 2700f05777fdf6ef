package codec

import (
	"errors"
	"strings"
	"testing"

	"ramanserve/server/codec/wire"
	"ramanserve/server/contract"
)

func modelInfoEnvelope(body any) ordered {
	return ordered{"v", 1, "type", "model_info", "id", "abc", "body", body}
}

// TestDecodeModelInfoInclude: body.include asks for the axis, whatever
// the order of the envelope's keys; names it does not know, and keys it
// does not know, are ignored.
func TestDecodeModelInfoInclude(t *testing.T) {
	sixteen := append(make([]string, MaxInclude-1), "wavenumbers")
	for _, tc := range []struct {
		name string
		msg  any
		want bool
	}{
		{"no body", ordered{"v", 1, "type", "model_info", "id", "abc"}, false},
		{"nil body", modelInfoEnvelope(nil), false},
		{"empty body", modelInfoEnvelope(ordered{}), false},
		{"nil include", modelInfoEnvelope(ordered{"include", nil}), false},
		{"empty include", modelInfoEnvelope(ordered{"include", []string{}}), false},
		{"wavenumbers", modelInfoEnvelope(ordered{"include", []string{"wavenumbers"}}), true},
		{"wavenumbers as bin", modelInfoEnvelope(ordered{"include", []any{[]byte("wavenumbers")}}), true},
		{"among unknown names", modelInfoEnvelope(ordered{"x", 1, "include", []string{"future", "wavenumbers", "wavenumbers"}}), true},
		{"unknown names only", modelInfoEnvelope(ordered{"include", []string{"Wavenumbers", "wavenumber"}}), false},
		{"body before type", ordered{"body", ordered{"include", []string{"wavenumbers"}}, "v", 1, "type", "model_info", "id", "abc"}, true},
		{"sixteen names", modelInfoEnvelope(ordered{"include", sixteen}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			if err := DecodeRequest(pack(t, tc.msg), &req); err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			if req.Type != TypeModelInfo || req.ModelInfo.Wavenumbers != tc.want {
				t.Errorf("type %v, include wavenumbers %v, want %v", req.Type, req.ModelInfo.Wavenumbers, tc.want)
			}
		})
	}
}

// TestDecodeModelInfoIncludeErrors: a malformed include is INVALID_REQUEST
// with the request's id and type kept, so that the failure is answered
// with a model_info_reply the client can correlate.
func TestDecodeModelInfoIncludeErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     any
		message string
	}{
		{"include a string", modelInfoEnvelope(ordered{"include", "wavenumbers"}), "body.include must be an array of strings, got string"},
		{"include a map", modelInfoEnvelope(ordered{"include", ordered{"wavenumbers", true}}), "got map"},
		{"a number in include", modelInfoEnvelope(ordered{"include", []any{"wavenumbers", 3}}), "body.include[1] is"},
		{"nil in include", modelInfoEnvelope(ordered{"include", []any{nil}}), "body.include[0] is nil"},
		{"seventeen names", modelInfoEnvelope(ordered{"include", make([]string, 17)}), "17 names, at most 16"},
		{"repeated include", modelInfoEnvelope(ordered{"include", nil, "include", []string{}}), "duplicate key body.include"},
		{"body before type", ordered{"body", ordered{"include", 7}, "v", 1, "type", "model_info", "id", "abc"}, "must be an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var req Request
			err := DecodeRequest(pack(t, tc.msg), &req)
			var e *contract.Error
			if !errors.As(err, &e) {
				t.Fatalf("want INVALID_REQUEST, got %v", err)
			}
			if e.Code != contract.InvalidRequest || !strings.Contains(e.Message, tc.message) || e.Retryable() {
				t.Errorf("got %s %q (retryable %v), want INVALID_REQUEST containing %q", e.Code, e.Message, e.Retryable(), tc.message)
			}
			if string(req.ID) != "abc" || req.Type != TypeModelInfo {
				t.Errorf("id %q type %v: the reply could not be correlated", req.ID, req.Type)
			}
		})
	}
}

// TestDecodeModelInfoTruncatedInclude: an include cut short, or one that
// announces more names than the frame holds, is not a well-formed frame
// (MALFORMED_MESSAGE, reply type error).
func TestDecodeModelInfoTruncatedInclude(t *testing.T) {
	cut := pack(t, modelInfoEnvelope(ordered{"include", []string{"wavenumbers"}}))
	for name, data := range map[string][]byte{
		"cut short":            cut[:len(cut)-3],
		"huge announced count": pack(t, modelInfoEnvelope(ordered{"include", raw{wire.CodeArray32, 0xff, 0xff, 0xff, 0xff}})),
	} {
		t.Run(name, func(t *testing.T) {
			var req Request
			err := DecodeRequest(data, &req)
			var e *contract.Error
			if !errors.As(err, &e) || e.Code != contract.MalformedMessage || req.Type != TypeUnknown {
				t.Fatalf("got %v, type %v; want MALFORMED_MESSAGE with type unknown", err, req.Type)
			}
		})
	}
}
