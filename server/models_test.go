package server

import (
	"encoding/json"
	"testing"

	"ramanserve/registry"
)

// TestModelDetailShape: the entry's axis, regions and recipe become the
// contract's fields; every version has its report URL; a recipe the
// contract cannot read is left out, not an error.
func TestModelDetailShape(t *testing.T) {
	e := registry.Entry{Version: "pls-1", Status: registry.StatusStaged, File: "models/pls-1.npz", Shape: &registry.Shape{
		WavenumberRange: [2]float64{200, 3200}, WavenumberCount: 2048,
		Regions:       [][2]float64{{600, 1800}, {2800, 3100}},
		Preprocessing: json.RawMessage(`[{"step":"savgol","window":15,"polyorder":2,"deriv":1},{"step":"snv"}]`),
	}}
	d := modelDetail(&e)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"wavenumber_count": `2048`,
		"wavenumber_range": `[200,3200]`,
		"regions":          `[[600,1800],[2800,3100]]`,
		"preprocessing":    `[{"deriv":1,"polyorder":2,"step":"savgol","window":15},{"step":"snv"}]`,
		"report_url":       `"/model/pls-1/report"`,
	}
	for k, w := range want {
		v, _ := json.Marshal(got[k])
		if string(v) != w {
			t.Errorf("%s = %s, want %s", k, v, w)
		}
	}

	e.Shape.Preprocessing = json.RawMessage(`[{"step":"wavelet"}]`)
	if d := modelDetail(&e); d.Preprocessing != nil {
		t.Errorf("an unreadable recipe was reported: %+v", *d.Preprocessing)
	}
	e.Shape = nil
	if d := modelDetail(&e); d.WavenumberCount != nil || d.Regions != nil || d.ReportUrl == nil {
		t.Errorf("entry without shape: %+v", d)
	}
}
