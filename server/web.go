package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/time/rate"
)

// The management channel's web conventions (api/openapi.yaml, "Web
// conventions"): every response carries X-Request-Id; listed browser
// origins get CORS headers and preflight answers; every request writes
// one access-log line. webLayer is the outermost handler, around the
// health reserve's gate, so the reserve's 503s, the body limits' 408 and
// 413 and echo's 404 and 405 carry the id and the CORS headers too. Only
// what net/http answers itself, before any handler (a malformed request,
// 431), has neither.
type webLayer struct {
	next     http.Handler
	cors     corsPolicy
	ids      *requestIDs
	access   *accessLog
	requests requestRecorder
	// gate authenticates each request before next sees it; nil when
	// authentication is off (see auth.go).
	gate *tokenGate
}

// requestRecorder observes every answered request (the server's metrics):
// route is the contract's template, "" when no route matched; status 0
// means the request ended before any answer.
type requestRecorder interface {
	Request(route, method string, status int, took time.Duration)
}

const requestIDHeader = "X-Request-Id"

func newWebLayer(next http.Handler, origins []string, requests requestRecorder, log *slog.Logger) (*webLayer, error) {
	cors, err := newCORSPolicy(origins)
	if err != nil {
		return nil, err
	}
	ids, err := newRequestIDs()
	if err != nil {
		return nil, err
	}
	return &webLayer{next: next, cors: cors, ids: ids, access: newAccessLog(log), requests: requests}, nil
}

func (l *webLayer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	x := &exchange{id: l.ids.from(r.Header), accept: r.Header.Get("Accept")}
	h := w.Header()
	h.Set(requestIDHeader, x.id)
	x.origin = l.cors.decorate(h, r.Header)

	rw := &recordingWriter{ResponseWriter: w}
	// A copy: net/http's own request keeps its own body (see restoreBody).
	r = r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x))
	var in *countingBody
	if r.Body != nil && r.Body != http.NoBody {
		in = &countingBody{ReadCloser: r.Body}
		r.Body = in
	}
	served := false
	// Deferred: a handler aborted with http.ErrAbortHandler is logged
	// and counted too.
	defer func() {
		took := time.Since(start)
		status := rw.answered(served)
		l.requests.Request(x.route, r.Method, status, took)
		l.access.write(r, x, rw, in, status, took)
	}()
	if l.gate != nil {
		admitted, ok := l.gate.admit(rw, r)
		if !ok {
			served = true
			return
		}
		r = admitted
		x.user = authenticatedAs(r.Context())
	}
	l.next.ServeHTTP(rw, r)
	served = true
}

// exchange is what the web layer learns about one request while it is
// served; the echo middleware fills in the route.
type exchange struct {
	id     string
	origin string // the request's Origin when it is listed, else ""
	route  string // the route template, e.g. /training/{jobId}; "" for none
	user   string // the name of the request's bearer token; "" without one
	accept string // the request's Accept header, for handlers with two media types
}

type exchangeKey struct{}

func exchangeOf(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

// Request ids.

// requestIDs makes ids for requests that bring none (or an unusable one):
// a random prefix per server and a counter, so ids are unique within the
// process and, with 64 random bits, across its restarts.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() (*requestIDs, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("request id prefix: %w", err)
	}
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}, nil
}

// from is the request's own X-Request-Id when it has exactly one that is
// sane, else a new id.
func (g *requestIDs) from(h http.Header) string {
	if v := h.Values(requestIDHeader); len(v) == 1 && saneRequestID(v[0]) {
		return v[0]
	}
	return g.next()
}

func (g *requestIDs) next() string {
	buf := make([]byte, 0, len(g.prefix)+13)
	buf = append(buf, g.prefix...)
	return string(strconv.AppendUint(buf, g.n.Add(1), 36))
}

// maxRequestIDLen bounds a client's id: longer ones are replaced. The
// character set keeps ids out of trouble in logs, headers and file names.
const maxRequestIDLen = 128

func saneRequestID(s string) bool {
	if len(s) == 0 || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

// CORS.

// corsPolicy is the set of listed origins (-cors-origin); empty, CORS is
// off and no response carries a CORS header.
type corsPolicy struct {
	origins map[string]string // as browsers send it -> the same, from the configuration
}

// corsMaxAge is how long a browser may cache a preflight answer, seconds.
// Browsers cap it (Chromium at 2 h); 10 minutes keeps a change of
// -cors-origin effective soon while sparing a console most preflights.
const corsMaxAge = "600"

func newCORSPolicy(origins []string) (corsPolicy, error) {
	p := corsPolicy{}
	for _, o := range origins {
		norm, err := ParseCORSOrigin(o)
		if err != nil {
			return corsPolicy{}, fmt.Errorf("-cors-origin: %w", err)
		}
		if p.origins == nil {
			p.origins = map[string]string{}
		}
		p.origins[norm] = norm
	}
	return p, nil
}

// decorate adds the CORS headers every response to req gets, and returns
// the request's origin when it is listed. With CORS on, every response
// says it varies by Origin, so that a cache never hands one origin's
// answer to another; a listed origin gets Access-Control-Allow-Origin
// (the configured string, never the request's bytes) and the exposed
// headers. An unlisted or absent origin gets no Access-Control-* header.
func (p corsPolicy) decorate(h, req http.Header) string {
	if len(p.origins) == 0 {
		return ""
	}
	h.Add("Vary", "Origin")
	v := req.Values("Origin")
	if len(v) != 1 {
		return ""
	}
	origin, ok := p.origins[v[0]]
	if !ok {
		return ""
	}
	h.Set("Access-Control-Allow-Origin", origin)
	// A console reads the registry's ETag (for If-Match) and a 202's Location.
	h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After, ETag, Location")
	return origin
}

// ParseCORSOrigin checks that s is an origin as browsers send it in the
// Origin header, scheme://host[:port], and returns it normalised: scheme
// and host in lower case, the scheme's default port dropped. "*" and
// "null" are refused: either would let any web page an operator opens
// call this API (load, delete, train) through the operator's browser.
func ParseCORSOrigin(s string) (string, error) {
	switch s {
	case "*":
		return "", errors.New(`"*" is not accepted: list each origin whose pages may call this API (a wildcard would let any web page an operator opens drive the server)`)
	case "null":
		return "", errors.New(`"null" is not accepted: sandboxed frames and local files all send it, so it would admit any page`)
	}
	bad := func(why string) error {
		return fmt.Errorf("%q is not an origin (%s): want scheme://host[:port], e.g. https://console.plant.local:8443", s, why)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+:/[]", c) >= 0) {
			return "", bad(fmt.Sprintf("character %q", c))
		}
	}
	if !strings.Contains(s, "://") {
		return "", bad("no scheme")
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", bad(err.Error())
	case u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", bad("more than scheme, host and port")
	case u.Path != "":
		return "", bad(`it has a path; an origin has none, not even a trailing "/"`)
	case u.Hostname() == "":
		return "", bad("no host")
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if strings.HasSuffix(u.Host, ":") {
		return "", bad("empty port")
	}
	if strings.HasPrefix(u.Host, "[") {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", bad("not an IPv6 address in brackets")
		}
	} else if strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "" {
		return "", bad("host " + host)
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", bad("port " + port)
		}
		if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
			port = "" // browsers leave the default port out
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// isPreflight reports whether r is a CORS preflight: OPTIONS with an
// Origin and Access-Control-Request-Method.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && r.Header.Get("Origin") != "" && r.Header.Get("Access-Control-Request-Method") != ""
}

// answerPreflight is the 204 to a listed origin's preflight of a route
// that allows methods (echo's Allow value for the path).
func answerPreflight(c echo.Context, methods string) error {
	h := c.Response().Header()
	h.Set("Allow", methods)
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", allowedRequestHeaders(c.Request().Header.Values("Access-Control-Request-Headers")))
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
	return c.NoContent(http.StatusNoContent)
}

// Headers a preflight may have allowed beside the ones the API reads.
const (
	maxExtraAllowedHeaders = 16
	maxAllowedHeaderLen    = 64
)

// allowedRequestHeaders is Content-Type and X-Request-Id, plus those of
// the requested names that are safe to allow: well-formed header names of
// sensible length that are neither headers a browser never lets a page
// set (so only a non-browser would ask) nor method overrides some proxies
// obey. At most maxExtraAllowedHeaders are added.
func allowedRequestHeaders(requested []string) string {
	var b strings.Builder
	b.WriteString("Content-Type, X-Request-Id")
	extra := 0
	for _, list := range requested {
		for name := range strings.SplitSeq(list, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if extra == maxExtraAllowedHeaders {
				return b.String()
			}
			if name == "content-type" || name == "x-request-id" || !safeRequestHeader(name) {
				continue
			}
			b.WriteString(", ")
			b.WriteString(name)
			extra++
		}
	}
	return b.String()
}

// unsafeRequestHeader reports whether name (lower case) is one of the
// Fetch standard's forbidden request headers or a method override.
func unsafeRequestHeader(name string) bool {
	switch name {
	case "accept-charset", "accept-encoding", "access-control-request-headers", "access-control-request-method",
		"connection", "content-length", "cookie", "cookie2", "date", "dnt", "expect", "host", "keep-alive",
		"origin", "referer", "set-cookie", "te", "trailer", "transfer-encoding", "upgrade", "via",
		"x-http-method", "x-http-method-override", "x-method-override":
		return true
	}
	return strings.HasPrefix(name, "proxy-") || strings.HasPrefix(name, "sec-")
}

func safeRequestHeader(name string) bool {
	return len(name) <= maxAllowedHeaderLen && !unsafeRequestHeader(name) && httpguts.ValidHeaderFieldName(name)
}

// routeRecorder is the first echo middleware: it records the route
// template of each request for the access log and answers listed
// origins' preflights, after routing (echo knows the path's methods then)
// and before anything reads a body.
type routeRecorder struct {
	templates map[string]string // echo path (/training/:jobId) -> contract template (/training/{jobId})
}

// learn records the routes e serves; called once they are registered.
func (rr *routeRecorder) learn(e *echo.Echo) {
	rr.templates = map[string]string{}
	for _, r := range e.Routes() {
		rr.templates[r.Path] = contractTemplate(r.Path)
	}
}

// contractTemplate turns echo's /training/:jobId into /training/{jobId}.
func contractTemplate(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(segs, "/")
}

func (rr *routeRecorder) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		x := exchangeOf(c.Request().Context())
		if x == nil { // served without the web layer
			return next(c)
		}
		x.route = rr.templates[c.Path()]
		if x.origin != "" && isPreflight(c.Request()) {
			// Set by echo's router when the path exists but has no
			// OPTIONS route: the methods it has.
			if methods, _ := c.Get(echo.ContextKeyHeaderAllow).(string); methods != "" {
				return answerPreflight(c, methods)
			}
		}
		err := next(c)
		if errors.Is(err, echo.ErrNotFound) {
			x.route = "" // echo names the closest node's path; no route matched
		}
		return err
	}
}

// Access log.

// accessLog writes one line per request at Info, at most
// accessLogLinesPerSecond on average (bursts of accessLogBurst): a flood
// of requests (GET /health in a loop) must neither fill the disk nor make
// every request wait for the log. Lines over the rate are counted, and
// the count is logged (Warn) before the next line written.
type accessLog struct {
	log        *slog.Logger
	limit      *rate.Limiter
	suppressed atomic.Int64
}

const (
	accessLogLinesPerSecond = 200
	accessLogBurst          = 1000
	// maxLoggedMethodLen bounds the method on the line: net/http admits
	// any token as a method, up to the header limit.
	maxLoggedMethodLen = 24
)

func newAccessLog(log *slog.Logger) *accessLog {
	return &accessLog{log: log, limit: rate.NewLimiter(accessLogLinesPerSecond, accessLogBurst)}
}

func (a *accessLog) write(r *http.Request, x *exchange, rw *recordingWriter, in *countingBody, status int, took time.Duration) {
	ctx := r.Context()
	if !a.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	if !a.limit.Allow() {
		a.suppressed.Add(1)
		return
	}
	if n := a.suppressed.Swap(0); n > 0 {
		a.log.LogAttrs(ctx, slog.LevelWarn, "access log lines suppressed",
			slog.Int64("lines", n), slog.Int("max_per_second", accessLogLinesPerSecond))
	}
	method := r.Method
	if len(method) > maxLoggedMethodLen {
		method = method[:maxLoggedMethodLen]
	}
	var bytesIn int64
	if in != nil {
		bytesIn = in.n
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("route", x.route),
		slog.Int("status", status), // 0: aborted before any answer
		slog.Duration("duration", took),
		slog.String("request_id", x.id),
		slog.Int64("bytes_in", bytesIn),
		slog.Int64("bytes_out", rw.written),
	}
	if x.user != "" { // the token's name, never the token
		attrs = append(attrs, slog.String("authenticated_as", x.user))
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
}

// recordingWriter records the status and counts the body bytes written.
// Unwrap lets http.ResponseController reach the connection (the body
// deadlines set read deadlines through it).
type recordingWriter struct {
	http.ResponseWriter
	status  int
	written int64
}

// answered is the status the client got: the one written; 200 when the
// handler returned without writing (net/http sends an empty 200); 0 when
// it was aborted before any answer.
func (w *recordingWriter) answered(served bool) int {
	if w.status == 0 && served {
		return http.StatusOK
	}
	return w.status
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.written += int64(n)
	return n, err
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts the request body bytes the handlers read. Reads are
// sequential (one handler goroutine), and the count is read after the
// handler returned.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}
