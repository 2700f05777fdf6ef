package preprocess

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseRecipeFillsDefaults(t *testing.T) {
	got, err := ParseRecipe([]byte(`[
		{"step": "despike"},
		{"step": "savgol", "window": 15, "polyorder": 2},
		{"step": "snv"},
		{"step": "als_baseline"},
		{"step": "normalize", "region": [1400, 1500.5]},
		{"step": "despike", "threshold": 3.5, "width": 0},
		{"step": "savgol", "window": 9, "polyorder": 4, "deriv": 2}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	want := Recipe{
		{Kind: Despike, Threshold: 6, Width: 2},
		{Kind: Savgol, Window: 15, PolyOrder: 2, Deriv: 0},
		{Kind: SNV},
		{Kind: ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10},
		{Kind: Normalize, Region: [2]float64{1400, 1500.5}},
		{Kind: Despike, Threshold: 3.5, Width: 0},
		{Kind: Savgol, Window: 9, PolyOrder: 4, Deriv: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	b, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `[{"step":"despike","threshold":6,"width":2},` +
		`{"step":"savgol","window":15,"polyorder":2,"deriv":0},` +
		`{"step":"snv"},` +
		`{"step":"als_baseline","lam":100000,"p":0.01,"iterations":10},` +
		`{"step":"normalize","region":[1400,1500.5]},` +
		`{"step":"despike","threshold":3.5,"width":0},` +
		`{"step":"savgol","window":9,"polyorder":4,"deriv":2}]`
	if string(b) != wantJSON {
		t.Fatalf("MarshalJSON:\n%s\nwant\n%s", b, wantJSON)
	}
	back, err := ParseRecipe(b)
	if err != nil || !reflect.DeepEqual(back, got) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// TestRecipeCostBounded: one als_baseline step at most, and Savitzky-Golay
// windows summing to at most 2047, whether the recipe comes as JSON or is
// built in Go.
func TestRecipeCostBounded(t *testing.T) {
	ok := `[{"step":"als_baseline","lam":1e7,"p":0.05,"iterations":3},` +
		`{"step":"savgol","window":2031,"polyorder":2},{"step":"savgol","window":15,"polyorder":2}]`
	r, err := ParseRecipe([]byte(ok))
	if err != nil {
		t.Fatalf("%s: %v", ok, err)
	}
	if r[0] != (Step{Kind: ALSBaseline, Lambda: 1e7, P: 0.05, Iterations: 3}) {
		t.Errorf("explicit ALS parameters read as %+v", r[0])
	}
	for _, tc := range []struct{ json, field string }{
		{`[{"step":"als_baseline"},{"step":"snv"},{"step":"als_baseline","iterations":1}]`, "preprocessing[2].step"},
		{`[{"step":"savgol","window":2001,"polyorder":2},{"step":"savgol","window":47,"polyorder":2}]`, "preprocessing[1].window"},
	} {
		_, err := ParseRecipe([]byte(tc.json))
		var fe *FieldError
		if !errors.Is(err, ErrInvalidRecipe) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want an error on %s", tc.json, err, tc.field)
		}
		axis := make([]float64, 2048)
		for i := range axis {
			axis[i] = float64(i)
		}
		built := Recipe{{Kind: ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10}, {Kind: ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10}}
		if _, err := Compile(built, axis); !errors.Is(err, ErrInvalidRecipe) {
			t.Errorf("Compile of two ALS steps: %v", err)
		}
	}
}

func TestParseRecipeEmpty(t *testing.T) {
	for _, in := range []string{`[]`, ` [ ] `} {
		r, err := ParseRecipe([]byte(in))
		if err != nil || len(r) != 0 {
			t.Errorf("%s: %v, %v", in, r, err)
		}
	}
	for _, r := range []Recipe{nil, {}} {
		b, err := r.MarshalJSON()
		if err != nil || string(b) != "[]" {
			t.Errorf("MarshalJSON(%#v) = %s, %v", r, b, err)
		}
	}
}

func TestParseRecipeRejects(t *testing.T) {
	for _, c := range []struct{ in, field string }{
		{``, "preprocessing"},
		{`null`, "preprocessing"},
		{`{}`, "preprocessing"},
		{`[`, "preprocessing"},
		{`[] []`, "preprocessing"},
		{`[{"step":"snv"}] x`, "preprocessing"},
		{`[1]`, "preprocessing[0]"},
		{`[null]`, "preprocessing[0]"},
		{`[{}]`, "preprocessing[0].step"},
		{`[{"step": null}]`, "preprocessing[0].step"},
		{`[{"step": 3}]`, "preprocessing[0].step"},
		{`[{"step": "smooth"}]`, "preprocessing[0].step"},
		{`[{"step": "SNV"}]`, "preprocessing[0].step"},
		{`[{"step":"snv"},{"step":"snv","window":3}]`, "preprocessing[1].window"},
		{`[{"step":"despike","deriv":1}]`, "preprocessing[0].deriv"},
		{`[{"step":"snv","step":"snv"}]`, "preprocessing[0]"},
		{`[{"step":"despike","threshold":null}]`, "preprocessing[0].threshold"},
		{`[{"step":"despike","threshold":"6"}]`, "preprocessing[0].threshold"},
		{`[{"step":"despike","threshold":0.5}]`, "preprocessing[0].threshold"},
		{`[{"step":"despike","threshold":1001}]`, "preprocessing[0].threshold"},
		{`[{"step":"despike","threshold":1e400}]`, "preprocessing[0].threshold"},
		{`[{"step":"despike","width":-1}]`, "preprocessing[0].width"},
		{`[{"step":"despike","width":17}]`, "preprocessing[0].width"},
		{`[{"step":"despike","width":2.5}]`, "preprocessing[0].width"},
		{`[{"step":"despike","width":2.0}]`, "preprocessing[0].width"},
		{`[{"step":"savgol","polyorder":2}]`, "preprocessing[0].window"},
		{`[{"step":"savgol","window":15}]`, "preprocessing[0].polyorder"},
		{`[{"step":"savgol","window":1,"polyorder":0}]`, "preprocessing[0].window"},
		{`[{"step":"savgol","window":2049,"polyorder":2}]`, "preprocessing[0].window"},
		{`[{"step":"savgol","window":15,"polyorder":11}]`, "preprocessing[0].polyorder"},
		{`[{"step":"savgol","window":15,"polyorder":2,"deriv":5}]`, "preprocessing[0].deriv"},
		{`[{"step":"savgol","window":99999999999999999999,"polyorder":2}]`, "preprocessing[0].window"},
		{`[{"step":"als_baseline","lam":0.5}]`, "preprocessing[0].lam"},
		{`[{"step":"als_baseline","lam":1e13}]`, "preprocessing[0].lam"},
		{`[{"step":"als_baseline","p":0}]`, "preprocessing[0].p"},
		{`[{"step":"als_baseline","p":0.5}]`, "preprocessing[0].p"},
		{`[{"step":"als_baseline","iterations":0}]`, "preprocessing[0].iterations"},
		{`[{"step":"als_baseline","iterations":51}]`, "preprocessing[0].iterations"},
		{`[{"step":"normalize"}]`, "preprocessing[0].region"},
		{`[{"step":"normalize","region":[1]}]`, "preprocessing[0].region"},
		{`[{"step":"normalize","region":[1,2,3]}]`, "preprocessing[0].region"},
		{`[{"step":"normalize","region":[1,null]}]`, "preprocessing[0].region[1]"},
		{`[{"step":"normalize","region":{"low":1}}]`, "preprocessing[0].region"},
		{`[` + strings.Repeat(`{"step":"snv"},`, 16) + `{"step":"snv"}]`, "preprocessing"},
	} {
		_, err := ParseRecipe([]byte(c.in))
		var fe *FieldError
		if !errors.Is(err, ErrInvalidRecipe) || !errors.As(err, &fe) {
			t.Errorf("%s: error %v, want a FieldError wrapping ErrInvalidRecipe", c.in, err)
			continue
		}
		if fe.Field != c.field {
			t.Errorf("%s: field %q, want %q (%v)", c.in, fe.Field, c.field, err)
		}
	}
}

func TestMarshalJSONRejectsOutOfBounds(t *testing.T) {
	for _, r := range []Recipe{
		{{Kind: "smooth"}},
		{{Kind: Despike}},
		{{Kind: Savgol, Window: 15, PolyOrder: 2, Deriv: 7}},
		{{Kind: ALSBaseline, Lambda: 1e5, P: 0.7, Iterations: 10}},
	} {
		if _, err := r.MarshalJSON(); !errors.Is(err, ErrInvalidRecipe) {
			t.Errorf("%+v: %v, want ErrInvalidRecipe", r, err)
		}
	}
}
