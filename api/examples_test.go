package api_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"ramanserve/api"
	"ramanserve/server/auth"
	"ramanserve/server/contract"
)

// loadContract parses api/openapi.yaml as a validating consumer would.
func loadContract(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(api.OpenAPIYAML()))
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("api/openapi.yaml does not validate: %v", err)
	}
	return doc
}

// tableCode is a row of the error table at the top of the contract:
// | 400 | `INVALID_REQUEST` | ...
var tableCode = regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([A-Z][A-Z_]+)` \\|")

// namedCode is an error code as a description names it.
var namedCode = regexp.MustCompile("`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)`")

// TestEveryOperationHasValidExamples holds the contract to what
// documentation tools and mock servers need from it: every request body,
// every response and every error of every operation has an example, and
// every example is valid against its schema. An error response has one
// example per code its description names, with the retryability the
// server's one error table gives that code.
func TestEveryOperationHasValidExamples(t *testing.T) {
	doc := loadContract(t)
	codes := map[string]bool{}
	for _, m := range tableCode.FindAllStringSubmatch(doc.Info.Description, -1) {
		codes[m[2]] = true
	}
	if len(codes) < 30 {
		t.Fatalf("found %d codes in the contract's error table; the pattern no longer reads it", len(codes))
	}
	errorSchema := doc.Components.Schemas["ErrorResponse"]

	var ops, bodies, responses, examples int
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			ops++
			where := method + " " + path
			if op.RequestBody != nil {
				for mt, media := range op.RequestBody.Value.Content {
					bodies++
					examples += checkMedia(t, where+" request "+mt, media, openapi3.VisitAsRequest())
				}
			}
			for status, ref := range op.Responses.Map() {
				r := ref.Value
				responses++
				at := fmt.Sprintf("%s %s", where, status)
				// 204 and 304 are the statuses HTTP gives no body
				// (RFC 9110 sections 15.3.5 and 15.4.5).
				if len(r.Content) == 0 && status != "204" && status != "304" {
					t.Errorf("%s: no content to give an example of", at)
				}
				for mt, media := range r.Content {
					examples += checkMedia(t, at+" "+mt, media, openapi3.VisitAsResponse())
					if media.Schema == nil || media.Schema.Value != errorSchema.Value {
						continue
					}
					checkErrorExamples(t, at, r, media, codes)
				}
			}
		}
	}
	if ops < 20 {
		t.Fatalf("walked %d operations; the contract has more", ops)
	}
	t.Logf("examples: %d operations, %d request bodies, %d responses, %d examples valid against their schemas", ops, bodies, responses, examples)
}

// checkMedia fails the test when media has no example or one that its
// schema refuses; it returns how many examples it validated.
func checkMedia(t *testing.T, at string, media *openapi3.MediaType, as openapi3.SchemaValidationOption) int {
	t.Helper()
	values := map[string]any{}
	if media.Example != nil {
		values["example"] = media.Example
	}
	for name, ex := range media.Examples {
		values[name] = ex.Value.Value
	}
	if len(values) == 0 {
		t.Errorf("%s: no example", at)
		return 0
	}
	for name, v := range values {
		if err := media.Schema.Value.VisitJSON(v, as, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s: example %s does not match its schema: %v", at, name, err)
		}
	}
	return len(values)
}

// checkErrorExamples requires an example of every code the response's
// description (or its headers') names, each with that code, a message,
// and the retryability of the server's error table.
func checkErrorExamples(t *testing.T, at string, r *openapi3.Response, media *openapi3.MediaType, codes map[string]bool) {
	t.Helper()
	text := ""
	if r.Description != nil {
		text = *r.Description
	}
	for _, h := range r.Headers {
		text += " " + h.Value.Description
	}
	byCode := map[string]bool{}
	for name, ex := range media.Examples {
		v, ok := ex.Value.Value.(map[string]any)
		if !ok {
			t.Errorf("%s: example %s is not an object", at, name)
			continue
		}
		code, _ := v["code"].(string)
		if !codes[code] {
			t.Errorf("%s: example %s has code %q, which the contract's error table does not list", at, name, code)
		}
		byCode[code] = true
		retryable, _ := v["retryable"].(bool)
		if want := contract.Retryable(contract.Code(code)); retryable != want {
			t.Errorf("%s: example %s says retryable %v; the server says %v for %s", at, name, retryable, want, code)
		}
	}
	var missing []string
	for _, m := range namedCode.FindAllStringSubmatch(text, -1) {
		if codes[m[1]] && !byCode[m[1]] {
			missing = append(missing, m[1])
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%s: names %s but has no example of it", at, strings.Join(missing, ", "))
	}
	if len(byCode) == 0 {
		t.Errorf("%s: an error response with no example of its code", at)
	}
}

// probes are the operations the token gate lets through without a token
// unless the server runs with -auth-health: what supervisors and load
// balancers ask (GET and HEAD of /health, /livez and /readyz).
var probes = map[string]bool{"getHealth": true, "getLivez": true, "getReadyz": true}

// TestSecurityIsOptionalAndRolesDocumented: every operation accepts a
// request without a token (authentication is the server's start-up
// choice, so a validating proxy must not refuse one) or with bearerAuth,
// and names in x-required-role, and in the first line of its
// description, the least role the server's token gate lets through.
func TestSecurityIsOptionalAndRolesDocumented(t *testing.T) {
	doc := loadContract(t)
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			where := method + " " + path
			sec := doc.Security
			if op.Security != nil {
				sec = *op.Security
			}
			var anonymous, bearer bool
			for _, req := range sec {
				switch {
				case len(req) == 0:
					anonymous = true
				case len(req) == 1 && req["bearerAuth"] != nil:
					bearer = true
				default:
					t.Errorf("%s: unexpected security requirement %v", where, req)
				}
			}
			if !anonymous || !bearer {
				t.Errorf("%s: security must offer both no scheme and bearerAuth; has %v", where, sec)
			}
			role, _ := op.Extensions["x-required-role"].(string)
			want := auth.Read
			if !want.Allows(method) {
				want = auth.Operate
			}
			if probes[op.OperationID] {
				want = "none" // open unless -auth-health; any role then
			}
			if role != string(want) {
				t.Errorf("%s: x-required-role %q; the token gate needs %q", where, role, want)
			}
			// The description says it too, for readers and tools that
			// do not show extensions.
			line := "**Role** (with `-auth-tokens`): `" + role + "`."
			if role == "none" {
				line = "**Role** (with `-auth-tokens`): none;"
			}
			if !strings.HasPrefix(op.Description, line) {
				t.Errorf("%s: the description does not start with %q", where, line)
			}
		}
	}
}
