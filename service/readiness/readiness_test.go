package readiness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestReasons: each check that fails is one reason; all passing is
// ready; -ready-without-model drops the model's; Stopping is for good;
// a registry read that hangs is a reason within the timeout.
func TestReasons(t *testing.T) {
	bound, loaded, readErr := error(nil), false, error(nil)
	hang := false
	checks := Checks{
		Bound:       func() error { return bound },
		ModelLoaded: func() bool { return loaded },
		Readable: func(ctx context.Context) error {
			if hang {
				<-ctx.Done()
				return ctx.Err()
			}
			return readErr
		},
		ReadTimeout: 50 * time.Millisecond,
	}
	s := New(checks)
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
	bound, readErr, hang = nil, nil, true
	want("a hung registry", 1, "deadline exceeded")
	hang = false
	s.Stopping()
	want("stopping", 1, "shutting down")

	loaded = false
	checks.WithoutModel = true
	want2 := New(checks).Reasons(ctx)
	if len(want2) != 0 {
		t.Fatalf("-ready-without-model with no model: %q", want2)
	}
}
