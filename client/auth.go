package client

import (
	"context"
	"net/http"

	"ramanserve/gen"
)

// WithBearerToken makes every request of the management client carry
// "Authorization: Bearer token", for a server run with -auth-tokens (see
// "Authentication" in api/openapi.yaml). A read token may call every GET;
// load, delete, train and cancel need an operate token (403 FORBIDDEN
// otherwise). The client keeps the token only to send it; it never
// appears in an error the client returns.
func WithBearerToken(token string) gen.ClientOption {
	header := "Bearer " + token
	return gen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", header)
		return nil
	})
}
