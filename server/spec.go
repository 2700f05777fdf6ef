package server

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"ramanserve/api"
	"ramanserve/gen"
)

// specDocuments is the contract as served: the text of api/openapi.yaml
// and its JSON rendering, both built once when the handler is built.
// Neither slice is written after that.
type specDocuments struct {
	yaml []byte
	json specJSON
}

func loadSpecDocuments() (specDocuments, error) {
	j, err := api.OpenAPIJSON()
	if err != nil {
		return specDocuments{}, err
	}
	return specDocuments{yaml: []byte(api.OpenAPIYAML()), json: j}, nil
}

// GetOpenAPIYAML serves api/openapi.yaml as written.
func (a *API) GetOpenAPIYAML(ctx context.Context, _ gen.GetOpenAPIYAMLRequestObject) (gen.GetOpenAPIYAMLResponseObject, error) {
	return gen.GetOpenAPIYAML200ApplicationyamlResponse{Body: bytes.NewReader(a.spec.yaml), ContentLength: int64(len(a.spec.yaml))}, nil
}

// GetOpenAPIJSON serves the contract rendered as JSON.
func (a *API) GetOpenAPIJSON(ctx context.Context, _ gen.GetOpenAPIJSONRequestObject) (gen.GetOpenAPIJSONResponseObject, error) {
	return a.spec.json, nil
}

// specJSON writes the pre-rendered document. The generated 200 response
// type is a map that would be encoded again on every request.
type specJSON []byte

func (s specJSON) VisitGetOpenAPIJSONResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(s)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(s)
	return err
}
