package registry

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"ramanserve/inference"
)

// TestOpenVersion: every status opens without changing what is active;
// unknown, invalid and tampered versions fail as a load would.
func TestOpenVersion(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v1 := addStaged(t, r, 1, t0)
	v2 := addStaged(t, r, 2, t0.Add(time.Hour))
	v3 := addStaged(t, r, 3, t0.Add(2*time.Hour))
	ctx := context.Background()
	for _, v := range []string{v1, v2} {
		if _, err := r.Load(ctx, LoadRequest{Version: v, Source: SourceStaged}); err != nil {
			t.Fatal(err)
		}
	}
	// v1 archived, v2 active, v3 staged.
	for v, want := range map[string]float64{v1: 1, v2: 2, v3: 3} {
		m, err := r.OpenVersion(ctx, v)
		if err != nil {
			t.Fatalf("OpenVersion(%s): %v", v, err)
		}
		var p inference.Prediction
		if err := m.Predict(nil, &p); err != nil || p.Concentrations.Value[inference.EPA] != want || m.Metadata().Version != v {
			t.Fatalf("OpenVersion(%s) predicts %g (%v), version %s", v, p.Concentrations.Value[inference.EPA], err, m.Metadata().Version)
		}
	}
	if got := activeValue(t, r); got != 2 {
		t.Fatalf("active predicts %g after OpenVersion, want 2", got)
	}
	for _, v := range []string{"nope", "../x", ""} {
		if _, err := r.OpenVersion(ctx, v); !errors.Is(err, ErrModelNotFound) {
			t.Fatalf("OpenVersion(%q): %v, want ErrModelNotFound", v, err)
		}
	}
	e, err := r.Describe(v3)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir(), filepath.FromSlash(e.File)), []byte("const:9"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.OpenVersion(ctx, v3); !errors.Is(err, inference.ErrModelCorrupted) {
		t.Fatalf("OpenVersion of a changed file: %v, want ErrModelCorrupted", err)
	}
}
