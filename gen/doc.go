// Package gen holds the code generated from api/openapi.yaml by oapi-codegen
// (models, the echo strict server interface, an HTTP client and the embedded
// spec). Do not edit api.gen.go: change the contract and run `make generate`.
package gen

//go:generate go tool oapi-codegen -config ../api/oapi-codegen.yaml ../api/openapi.yaml
