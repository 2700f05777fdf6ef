package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"
)

// TestShapeIsRecordedAndSurvivesRestart: the axis, regions and recipe
// given at staging are in the entry, also after a restart.
func TestShapeIsRecordedAndSurvivesRestart(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	shape := &Shape{
		WavenumberRange: [2]float64{200, 3200}, WavenumberCount: 2048,
		Regions:       [][2]float64{{600, 1800}, {2800, 3100}},
		Preprocessing: json.RawMessage(`[{"step":"snv"}]`),
	}
	v, _, err := r.AddStaged(context.Background(), StagedModel{
		Ext: ".npz", TrainedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Algorithm: "const", Shape: shape,
		Write: func(_ string, w io.Writer) error { _, err := fmt.Fprint(w, "const:1"); return err },
	})
	if err != nil {
		t.Fatal(err)
	}
	r = reopen(t, r, nil)
	e, err := r.Describe(v)
	if err != nil {
		t.Fatal(err)
	}
	if e.Shape == nil || e.Shape.WavenumberCount != 2048 || e.Shape.WavenumberRange != shape.WavenumberRange ||
		!reflect.DeepEqual(e.Shape.Regions, shape.Regions) || !jsonEqual(e.Shape.Preprocessing, shape.Preprocessing) {
		t.Fatalf("shape after restart: %+v", e.Shape)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestShapeOfOpenedModels: a model whose entry has no shape (an adopted
// file, an import, an entry from before shapes) gets the one its model
// tells once the registry has opened it.
func TestShapeOfOpenedModels(t *testing.T) {
	axis := []float64{100, 200, 300, 400, 500, 600, 700, 800}
	p := &inference.PLSParams{
		Meta:          inference.Metadata{Version: "x", Algorithm: "test", Wavenumbers: axis},
		Targets:       []inference.Analyte{inference.EPA},
		Preprocessing: preprocess.Recipe{{Kind: preprocess.SNV}},
		Regions:       [][2]float64{{200, 450}},
		XMean:         []float64{0, 0, 0}, XScale: []float64{1, 1, 1},
		Coef:      mat.NewDense(3, 1, []float64{1, 2, 3}),
		Intercept: []float64{1},
	}
	open := func(ctx context.Context, _ *io.SectionReader, e Entry) (inference.Model, error) {
		q := *p
		q.Meta.Version = e.Version
		return inference.NewPLSModel(&q, inference.ModelOptions{})
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models", "found.npz"), []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), dir, Options{Openers: map[string]OpenFunc{".npz": open}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := &Shape{WavenumberRange: [2]float64{100, 800}, WavenumberCount: 8, Regions: [][2]float64{{200, 450}},
		Preprocessing: json.RawMessage(`[{"step":"snv"}]`)}
	check := func(version string) {
		t.Helper()
		e, err := r.Describe(version)
		if err != nil {
			t.Fatal(err)
		}
		if e.Shape == nil || e.Shape.WavenumberRange != want.WavenumberRange || e.Shape.WavenumberCount != 8 ||
			!reflect.DeepEqual(e.Shape.Regions, want.Regions) || !jsonEqual(e.Shape.Preprocessing, want.Preprocessing) {
			t.Fatalf("%s: shape %+v, want %+v", version, e.Shape, want)
		}
	}
	check("found")

	v, _, err := r.AddStaged(context.Background(), StagedModel{Ext: ".npz", TrainedAt: time.Now(), Algorithm: "test",
		Write: func(_ string, w io.Writer) error { _, err := fmt.Fprint(w, "model"); return err }})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := r.Describe(v); e.Shape != nil {
		t.Fatalf("staged without shape has %+v", e.Shape)
	}
	if _, err := r.Load(context.Background(), LoadRequest{Version: v, Source: SourceStaged}); err != nil {
		t.Fatal(err)
	}
	check(v)
}
