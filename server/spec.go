package server

import (
	"bytes"
	"context"
	"net/http"
	"strconv"

	"ramanserve/api"
	"ramanserve/gen"
	"ramanserve/server/apidocs"
)

// specDocuments is the contract as served: the text of api/openapi.yaml,
// its JSON rendering and the page that renders it (GET /docs), all built
// once when the handler is built. None is written after that.
type specDocuments struct {
	yaml []byte
	json specJSON
	docs docsPage
}

func loadSpecDocuments() (specDocuments, error) {
	j, err := api.OpenAPIJSON()
	if err != nil {
		return specDocuments{}, err
	}
	page, err := apidocs.New(j)
	if err != nil {
		return specDocuments{}, err
	}
	return specDocuments{yaml: []byte(api.OpenAPIYAML()), json: j, docs: docsPage(page)}, nil
}

// GetDocs serves the contract rendered for a browser.
func (a *API) GetDocs(ctx context.Context, _ gen.GetDocsRequestObject) (gen.GetDocsResponseObject, error) {
	return a.spec.docs, nil
}

// docsPage writes the pre-rendered page under its own policy, which
// admits its inline scripts by hash and nothing else.
type docsPage apidocs.Page

func (p docsPage) VisitGetDocsResponse(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", p.ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Length", strconv.Itoa(len(p.HTML)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(p.HTML)
	return err
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
