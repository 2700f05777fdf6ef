// Package api holds the management channel's contract, openapi.yaml, so
// that the server can serve its exact text (GET /openapi.yaml) and a JSON
// rendering of it (GET /openapi.json). gen/ is generated from the same
// file, but the copy oapi-codegen embeds there is re-marshalled JSON with
// its operation ids capitalised, not the document as written.
//
// This package imports nothing of the module: api -> gen -> server.
package api

import (
	_ "embed"
	"fmt"

	"github.com/oasdiff/yaml"
)

//go:embed openapi.yaml
var openAPIYAML string

// OpenAPIYAML is the text of api/openapi.yaml, byte for byte.
func OpenAPIYAML() string { return openAPIYAML }

// OpenAPIJSON renders the contract as JSON (object keys sorted). It
// converts on every call: callers that serve it keep the result.
func OpenAPIJSON() ([]byte, error) {
	b, err := yaml.YAMLToJSON([]byte(openAPIYAML))
	if err != nil {
		return nil, fmt.Errorf("render api/openapi.yaml as JSON: %w", err)
	}
	return b, nil
}
