package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"ramanserve/gen"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// TestLabPostReadOnce: a JSON lab post is refused at its first bad
// record while the rest of its body is still arriving. Its body is read
// once, by the parser as it streams; the contract's validator, which
// would read the whole body first, is not attached to the route.
func TestLabPostReadOnce(t *testing.T) {
	h, err := newHTTPHandler(&API{Lab: countingLab{}}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	body, client := io.Pipe()
	defer client.Close()
	go client.Write([]byte(`[{"lab_sample_id":"S","batch_id":"B","scan_seq":1,"EPA":1},7,`))
	req := httptest.NewRequest(http.MethodPost, "/lab-results", body)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		h.ServeHTTP(rec, req)
	}()
	select {
	case <-answered:
	case <-time.After(time.Minute): // a correctness bound: without the fix it waits for ever
		client.CloseWithError(errors.New("the test gave up"))
		<-answered
		t.Fatal("no answer while the body was still arriving: the route read the whole body before parsing it")
	}
	var e gen.ErrorResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != 400 || e.Code != "INVALID_REQUEST" || !strings.Contains(e.Message, "record 1") {
		t.Fatalf("%d %s", rec.Code, rec.Body.Bytes())
	}
}

// TestOperationMiddlewaresCoverEveryRoute: the contract's operation ids
// are those the generated registration looks up, so that every route but
// the two that read their own bodies gets the request validator.
func TestOperationMiddlewaresCoverEveryRoute(t *testing.T) {
	spec, err := loadSpecDocuments()
	if err != nil {
		t.Fatal(err)
	}
	ops, err := contractOperations(spec.json)
	if err != nil {
		t.Fatal(err)
	}
	generated, err := os.ReadFile(filepath.Join("..", "gen", "api.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	looked := regexp.MustCompile(`OperationMiddlewares\["(\w+)"\]`).FindAllSubmatch(generated, -1)
	var registered []string
	for _, m := range looked {
		registered = append(registered, string(m[1]))
	}
	slices.Sort(ops)
	slices.Sort(registered)
	if len(ops) < 20 || !slices.Equal(ops, registered) {
		t.Fatalf("the contract's operations %v, the generated registration's %v", ops, registered)
	}
	perOperation, err := operationMiddlewares(ops, &API{}, HTTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		validated := slices.ContainsFunc(perOperation[op], func(m echo.MiddlewareFunc) bool {
			return reflect.ValueOf(m).Pointer() == reflect.ValueOf(validateRequest).Pointer()
		})
		if validated == (op == uploadOperation || op == labPostOperation) {
			t.Errorf("%s: validated %v", op, validated)
		}
	}
}

// TestLabPostSlots: while every lab post slot is taken, another post
// waits (its client gives up first), and goes through once a slot is
// free: concurrent posts cannot multiply the memory one costs past
// labPostSlots.
func TestLabPostSlots(t *testing.T) {
	api := &API{Lab: countingLab{}}
	h, err := newHTTPHandler(api, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var leaves []func()
	for range labPostSlots {
		leave, err := api.labGate.enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, leave)
	}
	post := func(timeout time.Duration) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/lab-results",
			strings.NewReader(`[{"lab_sample_id":"S1","batch_id":"B","scan_seq":1,"EPA":1}]`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := post(300 * time.Millisecond); err == nil {
		t.Fatalf("a post went through with every slot taken: %d", code)
	}
	leaves[0]()
	if code, err := post(10 * time.Second); err != nil || code != 200 {
		t.Fatalf("after a slot was freed: %d %v", code, err)
	}
	for _, leave := range leaves[1:] {
		leave()
	}
}
