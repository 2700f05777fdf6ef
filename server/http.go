// Package server is the transport layer: the management HTTP API (this
// file and handlers.go) and the two channels' listeners (Transports), with
// the prediction channel's ZMTP transport, MessagePack codec and
// dispatcher in subpackages. Each request is decoded, handed to one
// service method (package service/..., the registry, the job queue), and
// its error mapped to the contract in one place (package contract).
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"ramanserve/evidence/reconcile"
	"ramanserve/gen"
	"ramanserve/server/contract"
	"ramanserve/server/metrics"
)

// HTTPConfig bounds the management channel.
type HTTPConfig struct {
	// StorageProbeTimeout is how long health and a training upload wait
	// for the registry's 4 KiB write probe before they say the storage
	// does not answer (default DefaultStorageProbeTimeout).
	StorageProbeTimeout time.Duration
	// MaxJSONBodyBytes bounds JSON request bodies (default 1 MiB).
	MaxJSONBodyBytes int64
	// MaxUploadBytes bounds a training upload (default 512 MiB).
	MaxUploadBytes int64
	// BodyIdleTimeout ends a request whose body stops arriving for this
	// long (default 30 s) with 408 REQUEST_TIMEOUT. It is an idle limit,
	// not a total one: a large upload on a slow line may take as long as
	// it needs while bytes keep coming.
	BodyIdleTimeout time.Duration
	// JSONBodyTimeout bounds the whole body of a JSON request (every route
	// but the upload) from the end of its headers (default 10 s): 1 MiB of
	// JSON has no business taking longer. Past it the answer is 408.
	JSONBodyTimeout time.Duration
	// UploadMinRate is the lowest average rate, in bytes per second, at
	// which a training upload's body must arrive once UploadRateGrace has
	// passed (default 65536; negative turns the floor off, as the flag's
	// 0 does). An upload holds a training slot while it arrives, so a
	// client trickling below the floor would keep others out: its
	// deadline is start + UploadRateGrace + bytes received / UploadMinRate
	// (never later than the idle limit), and past it the answer is 408.
	UploadMinRate int64
	// UploadRateGrace is how long an upload may take before the rate
	// floor starts to count (default 10 s): headers, the meta part, a slow
	// start of the connection.
	UploadRateGrace time.Duration
	// CORSOrigins are the browser origins (scheme://host[:port]) whose
	// pages may call the API (-cors-origin); empty, CORS is off. See
	// ParseCORSOrigin and web.go.
	CORSOrigins []string
	// MaxConnections caps simultaneous HTTP connections (default 256), so
	// a flood of idle or stalled clients cannot use up the process's file
	// descriptors, which the prediction channel and the registry need too.
	// A small reserve beyond it answers GET /health only (see
	// connlimit.go), so a full cap never silences the liveness probe.
	MaxConnections int
	// TLS serves the management channel over TLS when its files are set
	// (tls.go).
	TLS TLSConfig
}

// withDefaults returns c with every zero field set to its default.
func (c HTTPConfig) withDefaults() HTTPConfig {
	c.defaults()
	return c
}

func (c *HTTPConfig) defaults() {
	if c.StorageProbeTimeout <= 0 {
		c.StorageProbeTimeout = DefaultStorageProbeTimeout
	}
	if c.BodyIdleTimeout <= 0 {
		c.BodyIdleTimeout = 30 * time.Second
	}
	if c.JSONBodyTimeout <= 0 {
		c.JSONBodyTimeout = 10 * time.Second
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = 256
	}
	if c.UploadMinRate == 0 {
		c.UploadMinRate = DefaultUploadMinRate
	}
	if c.UploadRateGrace <= 0 {
		c.UploadRateGrace = DefaultUploadRateGrace
	}
	if c.MaxJSONBodyBytes <= 0 {
		c.MaxJSONBodyBytes = 1 << 20
	}
	if c.MaxUploadBytes <= 0 {
		c.MaxUploadBytes = 512 << 20
	}
}

// Defaults of the upload's rate floor (HTTPConfig.UploadMinRate and
// UploadRateGrace; flags -upload-min-rate and -upload-rate-grace).
const (
	DefaultUploadMinRate   = 64 << 10
	DefaultUploadRateGrace = 10 * time.Second
)

// The operations whose handlers read and check their bodies themselves,
// by operation id as api/openapi.yaml writes it. They are registered
// without the contract's request validation (operationMiddlewares), which
// would decode the body first, whole, in memory.
const (
	// uploadOperation streams its multipart body and validates the meta
	// part itself (training.go).
	uploadOperation = "startTraining"
	// labPostOperation parses its body once, with reconcile's parser for
	// its media type, which enforces every rule the contract states for
	// it (lab.go).
	labPostOperation = "postLabResults"
	// exportOperation shares the review pages' slots (gateReports).
	exportOperation = "exportModel"
)

// NewHTTPHandler builds the management channel: echo serving the generated
// strict interface implemented by api, behind request validation against
// api/openapi.yaml, with one error path for every failure, behind the body
// deadlines, the health reserve's gate and the web conventions (request
// id, CORS, access log).
func NewHTTPHandler(api *API, cfg HTTPConfig, log *slog.Logger) (http.Handler, error) {
	return newHTTPHandler(api, cfg, log)
}

// httpHandler is the management channel's handler, layered from the
// outside in: web conventions, the health reserve's gate, body deadlines,
// echo. Shutdown reaches the body deadlines through it.
type httpHandler struct {
	*webLayer
	bodies *bodyDeadlines
}

func (h *httpHandler) abortBodies() { h.bodies.abortBodies() }

// newHTTPHandler is NewHTTPHandler with the body tracking that shutdown
// uses exposed.
func newHTTPHandler(api *API, cfg HTTPConfig, log *slog.Logger) (*httpHandler, error) {
	cfg.defaults()
	api.writeProbe.timeout = cfg.StorageProbeTimeout
	if api.Metrics == nil { // a handler built without an App: its own registry
		api.Metrics = metrics.New(metrics.Sources{})
	}
	spec, err := loadSpecDocuments()
	if err != nil {
		return nil, err
	}
	api.spec = spec
	doc, err := gen.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded OpenAPI document: %w", err)
	}
	// Match routes whatever host the server is reached on.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("build OpenAPI router: %w", err)
	}
	if ref := doc.Components.Schemas["TrainingMeta"]; ref != nil {
		api.metaSchema = ref.Value
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(log)
	routes := &routeRecorder{}
	e.Use(routes.middleware)
	e.Use(recoverToInternalError(log))
	e.Use(findOperation(router))
	api.labGate.size = labPostSlots
	ops, err := contractOperations(spec.json)
	if err != nil {
		return nil, err
	}
	perOperation, err := operationMiddlewares(ops, api, cfg)
	if err != nil {
		return nil, err
	}
	handlers := serverRoutes{ServerInterface: gen.NewStrictHandler(api, nil), api: api}
	gen.RegisterHandlersWithOptions(e, handlers, gen.RegisterHandlersOptions{OperationMiddlewares: perOperation})
	registerHeadHealth(e, handlers, perOperation)
	routes.learn(e)
	d := &bodyDeadlines{next: e, idle: cfg.BodyIdleTimeout, jsonTotal: cfg.JSONBodyTimeout, rateGrace: cfg.UploadRateGrace}
	if cfg.UploadMinRate > 0 {
		d.minRate = cfg.UploadMinRate
	}
	web, err := newWebLayer(reserveGate(d), cfg.CORSOrigins, api.Metrics.HTTP(), log)
	if err != nil {
		return nil, err
	}
	return &httpHandler{webLayer: web, bodies: d}, nil
}

// bodyDeadlines bounds every request body in time and keeps track of the
// bodies still arriving, so that shutdown can cut them at once.
//
// Every body has an idle limit: a read deadline of idle from now, moved
// forward each time bytes arrive, so a client that stalls in the middle of
// its body is cut off instead of holding a connection (and a handler) for
// ever. http.Server's ReadTimeout would bound the whole body instead, which
// a 200 MB upload on a slow line may rightly exceed. A JSON body (every
// route but the upload) also has a total limit: at most MaxJSONBodyBytes
// has no business taking longer, and a client that trickles one byte every
// few seconds must not hold a connection slot for long. The upload's body
// has a rate floor instead (it may rightly take minutes): it holds a
// training slot while it arrives, so once the grace has passed it must
// keep up minRate bytes per second on average.
type bodyDeadlines struct {
	next      http.Handler
	idle      time.Duration
	jsonTotal time.Duration
	minRate   int64 // upload bytes per second; 0: no floor
	rateGrace time.Duration

	mu       sync.Mutex
	open     map[*idleBody]struct{}
	stopping bool
}

func (d *bodyDeadlines) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		d.next.ServeHTTP(w, r)
		return
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	// A copy: net/http's own request keeps its own body (see restoreBody).
	r = r.WithContext(ctx)
	now := time.Now()
	b := &idleBody{ReadCloser: r.Body, rc: http.NewResponseController(w), idle: d.idle, ctx: ctx, cancel: cancel, d: d}
	// Every body starts with the JSON total; the upload's route trades it
	// for the rate floor (streamedUpload) before anything reads the body.
	b.start, b.until = now, now.Add(d.jsonTotal)
	if b.moveDeadline(now) != nil {
		d.next.ServeHTTP(w, r) // not a deadline-capable connection (tests' recorders)
		return
	}
	if !d.track(b) {
		b.abort()
	}
	defer d.forget(b)
	r.Body = b
	d.next.ServeHTTP(w, r)
}

// track records b as arriving; false once shutdown has begun.
func (d *bodyDeadlines) track(b *idleBody) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return false
	}
	if d.open == nil {
		d.open = map[*idleBody]struct{}{}
	}
	d.open[b] = struct{}{}
	return true
}

func (d *bodyDeadlines) forget(b *idleBody) {
	d.mu.Lock()
	delete(d.open, b)
	d.mu.Unlock()
}

// abortBodies cuts every request body still arriving, now and from now
// on: its read fails at once and its handler answers 503 SHUTTING_DOWN.
// Requests whose body has arrived (a load in progress) are left to finish.
func (d *bodyDeadlines) abortBodies() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopping = true
	for b := range d.open {
		b.abort()
	}
	clear(d.open)
}

// errShuttingDown is the cause of an aborted body's request context.
var errShuttingDown = contract.New(contract.ShuttingDown, http.StatusServiceUnavailable,
	"the server is shutting down; send the request again once it is back")

// idleBody pushes the read deadline forward after every read that got
// bytes, up to until when set, and, for an upload, no later than its rate
// floor allows. Reads are sequential (one handler goroutine); abort may
// run concurrently, which the context orders.
type idleBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	idle     time.Duration
	start    time.Time  // when the request arrived
	until    time.Time  // total limit; zero for none
	floor    *rateFloor // the upload's rate floor; nil for none
	received int64      // body bytes read so far
	last     time.Time  // when the deadline was last moved
	deadline time.Time  // the read deadline in force
	byRate   bool       // the rate floor, not the idle limit, set it
	ctx      context.Context
	cancel   context.CancelCauseFunc
	d        *bodyDeadlines
}

// streamed trades the JSON total for the upload's rate floor, counted
// from the request's arrival. Its route calls it before anything reads
// the body.
func (b *idleBody) streamed() {
	b.until = time.Time{}
	if b.d.minRate > 0 {
		b.floor = &rateFloor{start: b.start, grace: b.d.rateGrace, rate: b.d.minRate}
	}
	_ = b.moveDeadline(time.Now())
}

// rateFloor is an upload's minimum average rate: once received bytes have
// arrived, more must arrive by start + grace + received/rate.
type rateFloor struct {
	start time.Time
	grace time.Duration
	rate  int64 // bytes per second
}

// deadline is when the body must have delivered more than received bytes.
func (f *rateFloor) deadline(received int64) time.Time {
	secs := float64(received) / float64(f.rate)
	// Past a century the floor bounds nothing (and a Duration overflows).
	if secs > 100*365*24*3600 {
		return time.Time{}
	}
	return f.start.Add(f.grace + time.Duration(secs*float64(time.Second)))
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.received += int64(n)
	// Moving the deadline costs a timer update; once a second is plenty
	// for a limit measured in tens of seconds, unless the deadline in
	// force is close, which only the rate floor makes it.
	if now := time.Now(); n > 0 && (now.Sub(b.last) > time.Second || b.deadline.Sub(now) < 2*time.Second) {
		_ = b.moveDeadline(now)
	}
	switch {
	case err == io.EOF:
		b.d.forget(b) // complete: shutdown lets its request finish
		// The body is in: no limit is left to enforce, and a read deadline
		// passing while the handler still works (a large model load) would
		// make net/http's background read fail and cancel the request.
		// net/http sets its own deadlines again for the next request.
		b.floor = nil
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil && b.byRate && isBodyTimeout(err) && !errors.Is(context.Cause(b.ctx), errShuttingDown):
		err = &slowUploadError{rate: b.floor.rate, grace: b.floor.grace, received: b.received, err: err}
	}
	return n, err
}

func (b *idleBody) moveDeadline(now time.Time) error {
	b.last = now
	deadline, byRate := now.Add(b.idle), false
	if !b.until.IsZero() && deadline.After(b.until) {
		deadline = b.until
	}
	if b.floor != nil {
		if d := b.floor.deadline(b.received); !d.IsZero() && d.Before(deadline) {
			deadline, byRate = d, true
		}
	}
	if err := b.rc.SetReadDeadline(deadline); err != nil {
		return err
	}
	b.deadline, b.byRate = deadline, byRate
	// An abort between the check and the set above must still win.
	if b.ctx.Err() != nil {
		_ = b.rc.SetReadDeadline(time.Unix(1, 0))
	}
	return nil
}

// slowUploadError is an upload cut by its rate floor. It is a deadline
// error (isBodyTimeout) whose message names the floor.
type slowUploadError struct {
	rate     int64
	grace    time.Duration
	received int64
	err      error
}

func (e *slowUploadError) Error() string {
	return fmt.Sprintf("the upload arrived slower than %d bytes/s on average (-upload-min-rate, counted after the first %v): %d bytes in; an upload holds a training slot while it arrives, so it must keep up that rate",
		e.rate, e.grace, e.received)
}

func (e *slowUploadError) Unwrap() error { return e.err }

// abort cancels the request with errShuttingDown and makes the body's
// pending and future reads fail at once.
func (b *idleBody) abort() {
	b.cancel(errShuttingDown)
	_ = b.rc.SetReadDeadline(time.Unix(1, 0))
}

// isBodyTimeout reports whether err is the body's read deadline passing.
func isBodyTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

var errBodyTimeout = contract.New(contract.RequestTimeout, http.StatusRequestTimeout,
	"the request body stopped arriving, or a JSON body took longer than its time limit; send it without pauses")

// streamedUpload is the training upload's route policy. Its body may
// rightly take minutes, so it has the rate floor instead of the JSON
// total (bodyDeadlines); it is bounded in size: a declared length over
// the limit is refused at once, and reading past it fails with
// *http.MaxBytesError, which the handler answers with 413. A refused
// upload may still be streaming in: the answer closes the connection, so
// that it goes out at once; otherwise net/http first reads up to 256 KiB
// more of a body nobody wants, and a client that sends its whole body
// before reading waits for nothing.
func streamedUpload(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			req := c.Request()
			if b, ok := req.Body.(*idleBody); ok {
				b.streamed()
			}
			defer func() {
				if p := recover(); p != nil {
					c.Response().Header().Set("Connection", "close")
					panic(p)
				}
				if err != nil {
					c.Response().Header().Set("Connection", "close")
				}
			}()
			if req.ContentLength > limit {
				return contract.New(contract.PayloadTooLarge, http.StatusRequestEntityTooLarge,
					fmt.Sprintf("the upload exceeds the %d-byte limit", limit))
			}
			defer restoreBody(req, req.Body)
			req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
			return next(c)
		}
	}
}

// bodyLimit bounds a request body to limit bytes (413 past it).
func bodyLimit(limit int64) echo.MiddlewareFunc {
	return middleware.BodyLimit(fmt.Sprintf("%dB", limit))
}

// restoreBody puts a request's body back once its handler returned.
// net/http decides how to close a connection whose body was not read to
// the end by looking at the request's own body: seen there, it stops
// writing, then waits a moment before closing, so an answer sent while
// the client is still sending (413, 429) reaches it. Behind a wrapper it
// closes at once, and the client's kernel throws the answer away when the
// reset for the unread data arrives.
func restoreBody(r *http.Request, body io.ReadCloser) { r.Body = body }

// The probes' operation ids in the contract.
const (
	healthOperation = "getHealth"
	livezOperation  = "getLivez"
	readyzOperation = "getReadyz"
)

// registerHeadHealth serves HEAD /health, /livez and /readyz beside the
// generated routes: load balancers and uptime checkers probe with HEAD,
// and a 405 reads as down to them. Each is its GET's own handler under its
// GET's route policy; net/http sends its status and headers (Content-Length included)
// and drops the body it writes, as RFC 9110 section 9.3.2 asks. The
// contract says so in each GET's description rather than with an
// operation of its own, which would be a second handler to keep in step
// with the first.
func registerHeadHealth(e *echo.Echo, handlers gen.ServerInterface, perOperation map[string][]echo.MiddlewareFunc) {
	get := gen.ServerInterfaceWrapper{Handler: handlers}
	e.HEAD(healthPath, get.GetHealth, perOperation[healthOperation]...)
	e.HEAD(livezPath, get.GetLivez, perOperation[livezOperation]...)
	e.HEAD(readyzPath, get.GetReadyz, perOperation[readyzOperation]...)
}

// operationMiddlewares is each operation's route policy, attached at its
// registration after the middlewares every request passes. A JSON
// operation has the JSON body limit and the contract's request
// validation. The training upload streams its body through its own
// checks (streamedUpload); the lab post has the lab's body limit and
// waits for one of its slots, and its parser checks what the validator
// would. ops are the contract's operation ids.
func operationMiddlewares(ops []string, api *API, cfg HTTPConfig) (map[string][]echo.MiddlewareFunc, error) {
	perOperation := make(map[string][]echo.MiddlewareFunc, len(ops))
	jsonPolicy := []echo.MiddlewareFunc{bodyLimit(cfg.MaxJSONBodyBytes), validateRequest}
	for _, op := range ops {
		perOperation[op] = jsonPolicy
	}
	for _, op := range []string{uploadOperation, labPostOperation, exportOperation, axisOperation} {
		if _, ok := perOperation[op]; !ok {
			return nil, fmt.Errorf("the OpenAPI document has no operation %q", op)
		}
	}
	perOperation[uploadOperation] = []echo.MiddlewareFunc{streamedUpload(cfg.MaxUploadBytes)}
	perOperation[labPostOperation] = []echo.MiddlewareFunc{bodyLimit(reconcile.MaxInputBytes), api.gateLabPosts}
	// An export or an axis may read and write a whole model file, as a
	// review page does: each takes one of the same slots, after the
	// validator, so that a bad request is refused without one.
	perOperation[exportOperation] = append(slices.Clone(jsonPolicy), api.gateReports)
	perOperation[axisOperation] = append(slices.Clone(jsonPolicy), api.gateReports)
	return perOperation, nil
}

// contractOperations lists the operation ids of the OpenAPI document
// (api/openapi.yaml as JSON), as written there: the keys of the
// generated registration's per-operation middlewares. (The generated
// embedded spec spells them otherwise: it capitalises them.)
func contractOperations(doc []byte) ([]string, error) {
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("read the operations of the OpenAPI document: %w", err)
	}
	var ops []string
	for _, item := range d.Paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
			default:
				continue // parameters, summary, ...
			}
			var op struct {
				OperationID string `json:"operationId"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("read the operations of the OpenAPI document: %w", err)
			}
			if op.OperationID != "" {
				ops = append(ops, op.OperationID)
			}
		}
	}
	return ops, nil
}

// contractOperationKey is where findOperation leaves a request's
// operation on its echo context.
const contractOperationKey = "ramanserve.contractOperation"

// contractOperation is a request's operation in the contract and its path
// parameters.
type contractOperation struct {
	route  *routers.Route
	params map[string]string
}

// findOperation finds each request's operation in the contract, for
// validateRequest. A request on a known path with another method passes
// through, so echo answers 405 with Allow. A path the contract does not
// have is 404 here: echo's router would take /model/a/b for version
// "a/b", and no handler may see a parameter the contract's pattern was
// not checked against.
func findOperation(router routers.Router) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			route, params, err := router.FindRoute(c.Request())
			if errors.Is(err, routers.ErrPathNotFound) {
				return echo.ErrNotFound
			}
			if err == nil {
				c.Set(contractOperationKey, contractOperation{route: route, params: params})
			}
			return next(c)
		}
	}
}

// validationOptions are the request validator's.
var validationOptions = &openapi3filter.Options{
	MultiError:         false,
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	// A null must be refused as not nullable, not replaced by the
	// field's default; the handlers apply the defaults themselves.
	SkipSettingDefaults: true,
}

// validateRequest checks a request's parameters and JSON body against
// its operation in the contract (found by findOperation). It is attached
// to an operation at registration (operationMiddlewares).
func validateRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		op, ok := c.Get(contractOperationKey).(contractOperation)
		if !ok {
			return next(c)
		}
		req := c.Request()
		if err := checkJSONBody(req); err != nil {
			return err
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: op.params, Route: op.route, Options: validationOptions}
		if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
			return validationError(err)
		}
		return next(c)
	}
}

// checkJSONBody reads a JSON route's body (within the body limit) and
// puts it back for the validator and the handler, after three checks the
// validator does not make: an over-long chunked body is 413, not a
// validation failure; the media type is compared without regard to case
// (RFC 9110), so "Application/JSON" is application/json; and the body must
// be exactly one JSON value, so that `{...} trailing junk` is not taken
// for its first value.
func checkJSONBody(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return bodyReadError(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	if ct := req.Header.Get("Content-Type"); isJSONMediaType(ct) {
		_, params, _ := mime.ParseMediaType(ct)
		req.Header.Set("Content-Type", mime.FormatMediaType("application/json", params))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil // the validator reports the missing body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		return nil // the validator reports it as malformed JSON
	}
	if _, err := dec.Token(); err != io.EOF {
		return contract.New(contract.MalformedJSON, http.StatusBadRequest,
			fmt.Sprintf("request body is not valid JSON: data after the JSON value at byte %d", dec.InputOffset()))
	}
	return nil
}

// bodyReadError is the answer to a request whose body could not be read:
// 413 past the body limit, 408 past its deadline, else 400.
func bodyReadError(err error) error {
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	switch {
	case (errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge) || errors.As(err, &mbe):
		return contract.New(contract.PayloadTooLarge, http.StatusRequestEntityTooLarge, "request body exceeds the size limit")
	case isBodyTimeout(err):
		return errBodyTimeout
	}
	return contract.New(contract.InvalidRequest, http.StatusBadRequest, "reading the request body: "+err.Error())
}

// isJSONMediaType reports whether a Content-Type value is application/json,
// with any parameters. Media types compare without regard to case (RFC
// 9110 8.3.1), and "application/jsonx" is not JSON.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && strings.EqualFold(mt, "application/json")
}

// validationError turns a kin-openapi error into a coded error whose
// message names the offending field.
func validationError(err error) error {
	var reqErr *openapi3filter.RequestError
	if !errors.As(err, &reqErr) {
		return contract.New(contract.InvalidRequest, http.StatusBadRequest, err.Error())
	}
	if strings.Contains(reqErr.Reason, "header Content-Type has unexpected value") ||
		strings.Contains(err.Error(), "unsupported content type") {
		return contract.New(contract.UnsupportedMediaType, http.StatusUnsupportedMediaType,
			"request body must be application/json")
	}
	var parseErr *openapi3filter.ParseError
	if errors.As(err, &parseErr) && reqErr.Parameter != nil {
		// A parameter's value is not of its type (limit=abc): the
		// request is invalid, its body (if any) is not the problem.
		return contract.New(contract.InvalidRequest, http.StatusBadRequest,
			fmt.Sprintf("%s parameter %q: %s", reqErr.Parameter.In, reqErr.Parameter.Name, parseErr.Error()))
	}
	if errors.As(err, &parseErr) {
		return contract.New(contract.MalformedJSON, http.StatusBadRequest, "request body is not valid JSON: "+parseErr.Error())
	}
	var schemaErr *openapi3.SchemaError
	if errors.As(err, &schemaErr) {
		reason := schemaErr.Reason
		if strings.Contains(reason, "json.Number") { // kin-openapi's wording for an unrepresentable number
			reason = "value is not a valid " + schemaType(schemaErr.Schema)
		}
		if p := reqErr.Parameter; p != nil {
			return contract.New(contract.InvalidRequest, http.StatusBadRequest,
				fmt.Sprintf("%s parameter %q: %s", p.In, p.Name, reason))
		}
		field := strings.Join(schemaErr.JSONPointer(), ".")
		if field == "" {
			return contract.New(contract.InvalidRequest, http.StatusBadRequest, "request body: "+reason)
		}
		return contract.New(contract.InvalidRequest, http.StatusBadRequest,
			fmt.Sprintf("field %q: %s", field, reason))
	}
	if errors.Is(err, openapi3filter.ErrInvalidRequired) && reqErr.RequestBody != nil {
		return contract.New(contract.InvalidRequest, http.StatusBadRequest, "request body is required")
	}
	return contract.New(contract.InvalidRequest, http.StatusBadRequest, reqErr.Error())
}

// schemaType names a schema's JSON type for an error message.
func schemaType(s *openapi3.Schema) string {
	if s != nil && s.Type != nil && len(*s.Type) > 0 {
		return (*s.Type)[0]
	}
	return "value"
}

// errorHandler is the single place where failures become HTTP responses:
// always the ErrorResponse envelope, never echo's default body or a stack
// trace.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		// A body cut by shutdown fails its handler with whatever error its
		// read gave (a deadline); the request's context says why.
		if errors.Is(context.Cause(c.Request().Context()), errShuttingDown) {
			err = errShuttingDown
			c.Response().Header().Set("Connection", "close")
		}
		body, status := errorBody(err)
		if status >= 500 {
			log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "request_id", requestID(c), "err", err)
		}
		if wait := contract.RetryAfter(contract.Code(body.Code)); wait > 0 {
			c.Response().Header().Set("Retry-After", retryAfterSeconds(wait))
		}
		switch contract.Code(body.Code) {
		case contract.MethodNotAllowed:
			if allow := reservedRouteAllow(c.Request().URL.Path); allow != "" {
				c.Response().Header().Set("Allow", allow)
			}
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = c.JSON(status, body)
	}
}

// retryAfterSeconds is a wait as Retry-After's delay-seconds, rounded up.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// generatedParamError starts the message of the generated handlers' 400
// for a parameter they cannot bind (given twice, say); the validator has
// already passed it.
const generatedParamError = "Invalid format for parameter "

// badRequestOf codes a 400 the router or the generated handlers raised: a
// parameter that cannot be bound is INVALID_REQUEST naming it, anything
// else is a body that could not be decoded.
func badRequestOf(he *echo.HTTPError) (contract.Code, string) {
	if m, ok := he.Message.(string); ok && strings.HasPrefix(m, generatedParamError) {
		return contract.InvalidRequest, "parameter " + strings.TrimPrefix(m, generatedParamError)
	}
	return contract.MalformedJSON, fmt.Sprint("request body could not be decoded: ", he.Message)
}

func errorBody(err error) (gen.ErrorResponse, int) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code, msg := contract.InternalError, "internal error"
		switch he.Code {
		case http.StatusNotFound:
			code, msg = contract.NotFound, "no such route"
		case http.StatusMethodNotAllowed:
			code, msg = contract.MethodNotAllowed, "method not allowed on this route"
		case http.StatusRequestEntityTooLarge:
			code, msg = contract.PayloadTooLarge, "request body exceeds the size limit"
		case http.StatusUnsupportedMediaType:
			code, msg = contract.UnsupportedMediaType, "unsupported content type"
		case http.StatusBadRequest:
			code, msg = badRequestOf(he)
		}
		if code == contract.InternalError {
			return gen.ErrorResponse{Code: string(code), Message: msg, Retryable: ptr(false)}, http.StatusInternalServerError
		}
		return gen.ErrorResponse{Code: string(code), Message: msg, Retryable: ptr(false)}, he.Code
	}
	if errors.Is(err, http.ErrNotMultipart) {
		return gen.ErrorResponse{Code: string(contract.UnsupportedMediaType), Message: "the upload must be multipart/form-data", Retryable: ptr(false)}, http.StatusUnsupportedMediaType
	}
	if errors.Is(err, http.ErrMissingBoundary) {
		return gen.ErrorResponse{Code: string(contract.InvalidRequest), Message: "multipart/form-data without a boundary", Retryable: ptr(false)}, http.StatusBadRequest
	}
	cl := contract.Classify(err)
	msg := err.Error()
	var ce *contract.Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	if cl.Code == contract.InternalError {
		msg = "internal error; the server log has the details"
	}
	if cl.Code == contract.LoadInProgress {
		msg = "another model load is in progress; retry after about one second"
	}
	return gen.ErrorResponse{Code: string(cl.Code), Message: msg, Retryable: ptr(cl.Retryable)}, cl.Status
}

// recoverToInternalError turns a panic in a handler into INTERNAL_ERROR and
// logs the stack; the client never sees it.
func recoverToInternalError(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					log.Error("handler panic", "request_id", requestID(c), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					err = errors.New("handler panic")
				}
			}()
			return next(c)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// requestID is the request's id for the server's own log lines, so they
// can be joined with its access-log line and the client's X-Request-Id.
func requestID(c echo.Context) string {
	if x := exchangeOf(c.Request().Context()); x != nil {
		return x.id
	}
	return ""
}
