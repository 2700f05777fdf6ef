package readiness

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReasons: each check that fails is one reason; all passing is
// ready; -ready-without-model drops the model's; Stopping is for good;
// a registry read that hangs is a reason within the timeout.
func TestReasons(t *testing.T) {
	bound, loaded, readErr := error(nil), false, error(nil)
	var hang atomic.Bool
	checks := Checks{
		Bound:       func() error { return bound },
		ModelLoaded: func() bool { return loaded },
		Readable: func(ctx context.Context) error {
			if hang.Load() {
				<-ctx.Done()
				return ctx.Err()
			}
			return readErr
		},
		ReadTimeout: 50 * time.Millisecond,
	}
	s := New(checks)
	s.readLimit = 200 * time.Millisecond
	ctx := context.Background()
	want := func(what string, n int, has ...string) {
		t.Helper()
		got := s.Reasons(ctx)
		all := strings.Join(got, "; ")
		if len(got) != n {
			t.Fatalf("%s: %d reasons %q, want %d", what, len(got), got, n)
		}
		for _, h := range has {
			if !strings.Contains(all, h) {
				t.Fatalf("%s: reasons %q do not say %q", what, got, h)
			}
		}
	}
	want("no model", 1, "no model is loaded")
	loaded = true
	want("ready", 0)
	bound, readErr = errors.New("the prediction port is not listening"), errors.New("index.json: permission denied")
	want("port and registry", 2, "prediction port", "registry cannot be read", "permission denied")
	bound, readErr = nil, nil
	hang.Store(true)
	want("a hung registry", 1, "no answer within")
	hang.Store(false)
	// The hung read ends with its own limit, not the probe's; until then
	// probes share it. Wait for it to end before the next checks.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		idle := s.read == nil
		s.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hung read never ended")
		}
	}
	s.Stopping()
	want("stopping", 1, "shutting down")

	loaded = false
	checks.WithoutModel = true
	want2 := New(checks).Reasons(ctx)
	if len(want2) != 0 {
		t.Fatalf("-ready-without-model with no model: %q", want2)
	}
}
