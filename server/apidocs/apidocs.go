// Package apidocs builds the page GET /docs serves: the contract rendered
// by Redoc, as one self-contained HTML document. The Redoc bundle is the
// pinned npm package's standalone build (build/package-lock.json),
// copied into redoc/ by `make docs-bundle` and embedded in the binary,
// so that the server needs nothing but Go to build and the page fetches
// nothing: the bundle and the contract are both inline, and the page's
// Content Security Policy admits exactly those two scripts by hash.
//
// This package imports nothing of the module.
package apidocs

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

//go:embed redoc/redoc.standalone.js
var redocBundle string

// Page is the rendered page and the policy it must be served with.
type Page struct {
	HTML []byte
	// ContentSecurityPolicy admits the page's two inline scripts by their
	// SHA-256 and nothing else: no other script, no eval, no connection,
	// no frame. Redoc styles itself with inline style elements, and its
	// icons are data: images.
	ContentSecurityPolicy string
}

// redocOptions keep the page fetch-free and within its policy: search
// runs in a Web Worker made from a blob: URL, which the policy refuses,
// so it is off (the browser's own find serves); no download button, whose
// link would hold the document as a data: URL.
const redocOptions = `{"disableSearch":true,"hideDownloadButton":true,"expandResponses":"200,202","jsonSampleExpandLevel":3}`

// redocLogoURL is the one thing the Redoc bundle fetches whatever its
// options: the logo beside its "API docs by Redocly" link in the sidebar.
// The page shows a blank data: image in its place.
const (
	redocLogoURL = "https://cdn.redoc.ly/redoc/logo-mini.svg"
	blankImage   = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E"
)

// New renders the page for the contract specJSON (api/openapi.yaml as
// JSON).
func New(specJSON []byte) (Page, error) {
	if !json.Valid(specJSON) {
		return Page{}, errors.New("apidocs: the contract is not valid JSON")
	}
	if len(redocBundle) == 0 {
		return Page{}, errors.New("apidocs: the Redoc bundle is empty: run make docs-bundle")
	}
	if !strings.Contains(redocBundle, redocLogoURL) {
		return Page{}, errors.New("apidocs: the Redoc bundle no longer names its sidebar logo's URL; see redocLogoURL")
	}
	bundle := scriptSafe(strings.ReplaceAll(redocBundle, redocLogoURL, blankImage))
	// The contract goes in as a JSON data block, which is not a script and
	// needs no hash; the one init script reads it.
	initScript := `Redoc.init(JSON.parse(document.getElementById("contract").textContent),` + redocOptions + `,document.getElementById("redoc"));`

	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	b.WriteString("<title>ramanserve API</title>\n")
	b.WriteString("<style>body{margin:0;padding:0}</style>\n</head>\n<body>\n<div id=\"redoc\"></div>\n")
	b.WriteString("<script type=\"application/json\" id=\"contract\">")
	b.WriteString(jsonSafe(specJSON))
	b.WriteString("</script>\n<script>")
	b.WriteString(bundle)
	b.WriteString("</script>\n<script>")
	b.WriteString(initScript)
	b.WriteString("</script>\n</body>\n</html>\n")

	csp := fmt.Sprintf("default-src 'none'; script-src %s %s; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		scriptHash(bundle), scriptHash(initScript))
	return Page{HTML: b.Bytes(), ContentSecurityPolicy: csp}, nil
}

// scriptHash is the CSP source that admits an inline script whose text is s.
func scriptHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// scriptSafe escapes the sequences that would end or re-open an inline
// script element early ("</script", "<!--", "<script"). In the Redoc
// bundle they occur only inside string and regular-expression literals,
// where \x3C means the same "<".
func scriptSafe(js string) string {
	return scriptBreak.ReplaceAllString(js, `\x3C$1`)
}

// scriptBreak matches, as HTML does, in any case.
var scriptBreak = regexp.MustCompile(`(?i)<(/script|script|!--)`)

// jsonSafe makes JSON text safe inside a script element: "<" occurs in
// JSON only inside strings, where \u003c reads the same.
func jsonSafe(j []byte) string {
	return strings.ReplaceAll(string(j), "<", `\u003c`)
}
