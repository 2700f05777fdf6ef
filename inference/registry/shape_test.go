package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"
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
