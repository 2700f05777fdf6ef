// Package clients tests the clients that API consumers generate from
// api/openapi.yaml, as they would generate them: Go with oapi-codegen's
// defaults (and again with skip-prune), TypeScript with openapi-typescript
// + openapi-fetch under tsc --strict, and TypeScript with
// @hey-api/openapi-ts. Each is generated into a scratch directory,
// compiled, and its smoke program (testdata/) is run against an
// in-process server: every endpoint, a multipart training upload and the
// error envelope. `make test-clients` installs the pinned generators and
// runs it; the package holds no code of its own.
package clients
