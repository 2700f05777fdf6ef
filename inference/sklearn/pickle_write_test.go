package sklearn

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ramanserve/inference"
	"ramanserve/inference/preprocess"

	"gonum.org/v1/gonum/mat"
)

// corpusInput reads a committed FuzzLoad input (its one []byte value).
func corpusInput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/fuzz/FuzzLoad/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, line := range strings.Split(string(b), "\n") {
		if s, ok := strings.CutPrefix(line, "[]byte("); ok {
			var err error
			u, err := strconv.Unquote(strings.TrimSuffix(s, ")"))
			if err != nil {
				t.Fatal(err)
			}
			data = []byte(u)
		}
	}
	if data == nil {
		t.Fatalf("%s holds no []byte", name)
	}
	return data
}

// TestWriteBackCorpus: the committed inputs on which the writer once could
// not give back what the reader read. An array built twice is what its
// last BUILD says (as NumPy's __setstate__ makes it), not a mix of both;
// a joblib wrapper referenced apart from its array is refused as
// corrupt, since no writer could give its state without the array's
// bytes after it.
func TestWriteBackCorpus(t *testing.T) {
	twice := corpusInput(t, "writeback_ndarray_built_twice")
	v, err := (&machine{buf: twice}).run()
	if err != nil {
		t.Fatal(err)
	}
	a, ok := v.(*ndarray)
	if !ok || a.strings != nil || len(a.floats) != 1 || a.floats[0] != 2.5 {
		t.Fatalf("read %#v, want the float array of the last BUILD", v)
	}
	husk := corpusInput(t, "writeback_wrapper_husk")
	if _, err := (&machine{buf: husk}).run(); err != nil {
		t.Fatalf("the machine refuses the input itself: %v", err)
	}
	_, _, err = Load(context.Background(), bytes.NewReader(husk), Options{})
	if !errors.Is(err, inference.ErrModelCorrupted) || !strings.Contains(err.Error(), "wrapper") {
		t.Fatalf("Load: %v, want MODEL_CORRUPTED naming the wrapper", err)
	}
	for _, in := range [][]byte{twice, husk} {
		if err := CheckWriteBack(in, 1<<20); err != nil {
			t.Error(err)
		}
	}
}

// TestWriterCyclesAndSharing: shared values are written once and read
// back shared; cycles through lists, dicts and tuples end.
func TestWriterCyclesAndSharing(t *testing.T) {
	l := &list{}
	tup := tuple{l, "x"}
	l.items = append(l.items, tup, l)
	d := &dict{}
	d.keys, d.values = []any{"self", "list"}, []any{d, l}
	shared := &ndarray{shape: []int{2}, dtype: &dtype{kind: "f8", order: '<'}, floats: []float64{1, 2}}
	root := tuple{d, tup, shared, shared, &list{items: []any{int64(-1), int64(1 << 40), 1.5, true, nil, []byte("b")}}}
	b, err := writePickle(root)
	if err != nil {
		t.Fatal(err)
	}
	back, err := (&machine{buf: b}).run()
	if err != nil {
		t.Fatal(err)
	}
	if !(&sameness{seen: map[[2]any]bool{}}).same(root, back) {
		t.Fatal("read back to another value")
	}
	bt := back.(tuple)
	if bt[2] != bt[3] {
		t.Error("a shared array was read back as two")
	}
	if bd := bt[0].(*dict); bd.values[0] != bd {
		t.Error("the dict's cycle was not kept")
	}
}

// TestRegionSelectionRefusals: select_regions is read only as the last
// FunctionTransformer, with both keywords and nothing else, and with
// ranges that fit the axis and keep the PLS's feature count.
func TestRegionSelectionRefusals(t *testing.T) {
	axis := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	p := &inference.PLSParams{
		Meta:          inference.Metadata{Wavenumbers: axis},
		Targets:       []inference.Analyte{inference.EPA, inference.DHA, inference.DPA},
		Preprocessing: preprocess.Recipe{{Kind: preprocess.SNV}},
		Regions:       [][2]float64{{0, 4}},
		XMean:         make([]float64, 5),
		XScale:        []float64{1, 1, 1, 1, 1},
		Coef:          mat.NewDense(5, 3, nil),
		Intercept:     []float64{1, 2, 3},
	}
	regionKw := func(pl *object) *dict {
		steps := pl.state.(*dict).get("steps").(*list)
		ft := steps.items[1].(tuple)[1].(*object)
		return ft.state.(*dict).get("kw_args").(*dict)
	}
	for _, tc := range []struct {
		name   string
		change func(pl *object)
		want   error
		msg    string
	}{
		{"as it is written", func(*object) {}, nil, ""},
		{"not the last function", func(pl *object) {
			steps := pl.state.(*dict).get("steps").(*list)
			steps.items[0], steps.items[1] = steps.items[1], steps.items[0]
		}, inference.ErrModelUnsupported, "must be the last"},
		{"a range outside the axis", func(pl *object) {
			kw := regionKw(pl)
			kw.values[1] = &list{items: []any{tuple{-5.0, 3.0}}}
		}, inference.ErrModelUnsupported, "outside the axis"},
		{"other points than the features", func(pl *object) {
			kw := regionKw(pl)
			kw.values[1] = &list{items: []any{tuple{0.0, 2.0}}}
		}, inference.ErrModelCorrupted, "keeps 3 points"},
		{"no ranges", func(pl *object) {
			kw := regionKw(pl)
			kw.values[1] = &list{}
		}, inference.ErrModelUnsupported, "0 regions"},
		{"another keyword", func(pl *object) {
			kw := regionKw(pl)
			kw.keys, kw.values = append(kw.keys, "mode"), append(kw.values, "any")
		}, inference.ErrModelUnsupported, "mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := pipelineValue(p)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(pl)
			b, err := writePickle(pl)
			if err != nil {
				t.Fatal(err)
			}
			back, _, err := Load(context.Background(), bytes.NewReader(b), Options{})
			if tc.want == nil {
				if err != nil || !slices.Equal(back.Regions, p.Regions) {
					t.Fatalf("%v, regions %v", err, back)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%v, want %v naming %q", err, tc.want, tc.msg)
			}
		})
	}
}
