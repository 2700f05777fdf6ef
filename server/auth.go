package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"

	"ramanserve/server/auth"
	"ramanserve/server/contract"
)

// AuthConfig turns bearer-token authentication on for the management
// channel (-auth-tokens, -auth-health). See "Authentication" in
// api/openapi.yaml.
type AuthConfig struct {
	// TokensFile holds one line per token: role sha256(token) name.
	// Empty: authentication is off.
	TokensFile string
	// Health makes GET /health need a token too (any role).
	Health bool
}

// loadAuth reads the tokens file at start; a file that does not parse
// fails the start, naming the line. Without a file, authentication is
// off and t.tokens stays nil.
func (t *Transports) loadAuth() error {
	if t.cfg.Auth.TokensFile == "" {
		return nil
	}
	set, err := auth.ReadFile(t.cfg.Auth.TokensFile)
	if err != nil {
		return fmt.Errorf("-auth-tokens: %w", err)
	}
	t.tokens = auth.NewStore(set)
	return nil
}

// reloadAuth re-reads the tokens file (SIGHUP). A file that fails to
// parse, or that may be half-written (auth.ReloadFile), is refused as a
// whole: the tokens in force stay, and the error says why.
func (t *Transports) reloadAuth(ctx context.Context) error {
	if t.tokens == nil {
		return nil
	}
	set, err := auth.ReloadFile(ctx, t.cfg.Auth.TokensFile)
	if err != nil {
		return fmt.Errorf("-auth-tokens: %w; the %d tokens in force stay", err, t.tokens.Len())
	}
	t.tokens.Swap(set)
	t.log.InfoContext(ctx, "auth tokens reloaded", "tokens", set.Len())
	return nil
}

// warnWithoutAuth warns when anyone who can reach the management address
// may load, train and delete: authentication off on a non-loopback one.
func (t *Transports) warnWithoutAuth() {
	if t.tokens != nil {
		return
	}
	if tcp, ok := t.httpLn.Addr().(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return
	}
	t.log.Warn("authentication is off on a management address that is not loopback: anyone who can reach it may load, delete and train models; set -auth-tokens",
		"http", t.httpLn.Addr().String())
}

// tokenGate authenticates every management request before anything else
// looks at it (route, method, body): the web layer calls it first, so
// unknown routes and wrong methods answer 401 too, and the 401 and 403
// still carry the request id, the CORS headers and an access-log line.
type tokenGate struct {
	tokens *auth.Store
	health bool // GET /health needs a token too
}

// identityKey holds, in a request's context, its auth.Identity.
type identityKey struct{}

// authenticatedAs is the name of the token the request of ctx carried,
// "" when authentication is off.
func authenticatedAs(ctx context.Context) string {
	id, _ := ctx.Value(identityKey{}).(auth.Identity)
	return id.Name
}

// admit authenticates r. It returns the request to serve on, with its
// identity in the context; or, having answered r with 401 or 403, false.
func (g *tokenGate) admit(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if g.exempt(r) {
		return r, true
	}
	var header string
	if v := r.Header.Values("Authorization"); len(v) == 1 {
		header = v[0]
	}
	id, err := g.tokens.Authenticate(header)
	switch {
	case errors.Is(err, auth.ErrUnknownToken):
		g.refuse(w, r, contract.Errorf(contract.Unauthorized, "the bearer token is not known to this server"), `, error="invalid_token"`)
		return nil, false
	case err != nil:
		g.refuse(w, r, contract.Errorf(contract.Unauthorized, "this server needs a bearer token: Authorization: Bearer <token>"), "")
		return nil, false
	case !id.Role.Allows(r.Method):
		g.refuse(w, r, contract.Errorf(contract.Forbidden, "%s needs the %s role; token %q has the %s role", r.Method, auth.Operate, id.Name, id.Role), "")
		return nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), true
}

// exempt: a CORS preflight (browsers send no token with it), and the
// probes (GET /health, /livez, /readyz) unless -auth-health.
func (g *tokenGate) exempt(r *http.Request) bool {
	if isPreflight(r) {
		return true
	}
	return !g.health && isProbe(r)
}

// refuse answers a request the gate did not admit with the error
// envelope, through the one error path's body and status; a 401 also with
// the challenge (RFC 6750 section 3) plus challengeParams.
func (g *tokenGate) refuse(w http.ResponseWriter, r *http.Request, ce *contract.Error, challengeParams string) {
	body, status := errorBody(ce)
	h := w.Header()
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="ramanserve"`+challengeParams)
	}
	h.Set("Content-Type", "application/json")
	// The body, if any, is not read: closing lets the answer go out at
	// once instead of after net/http drains up to 256 KiB of it. A
	// connection of the health reserve is closed too, as its own gate
	// closes one that asks for anything but GET /health: a client
	// without a token must not keep a reserve slot by asking again.
	if lc, _ := r.Context().Value(connKey{}).(*limitedConn); r.ContentLength != 0 || (lc != nil && lc.reserve) {
		h.Set("Connection", "close")
	}
	w.WriteHeader(status)
	// Written for HEAD too: net/http drops it then, and sends the
	// Content-Length the GET would have, as RFC 9110 asks of HEAD.
	_ = json.NewEncoder(w).Encode(body)
}
