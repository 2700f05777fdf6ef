package preprocess

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

var recipeSeeds = []string{
	`[]`,
	`[{"step":"snv"}]`,
	`[{"step":"despike"},{"step":"savgol","window":15,"polyorder":2,"deriv":1},{"step":"snv"}]`,
	`[{"step":"despike","threshold":3.5,"width":0}]`,
	`[{"step":"als_baseline","lam":1e7,"p":0.05,"iterations":3},{"step":"normalize","region":[1400,1500]}]`,
	`[{"step":"savgol","window":3,"polyorder":2,"deriv":2}]`,
	`[{"step":"normalize","region":[-1e-300,1e300]}]`,
	`[{"step":"snv","step":"snv"}]`,
	`[{"step":"savgol","window":15.0,"polyorder":2}]`,
	`[{"step":"despike","threshold":1e-7}]`,
	`[{"step":"normalize","region":[1,null]}]`,
	` [ {"step" : "snv" } ] `,
}

// FuzzParseRecipe: any input either is refused with an error wrapping
// ErrInvalidRecipe, or parses to a recipe that MarshalJSON writes and
// ParseRecipe reads back unchanged, and whose JSON is a fixed point.
func FuzzParseRecipe(f *testing.F) {
	for _, s := range recipeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ParseRecipe(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecipe) {
				t.Fatalf("error %v does not wrap ErrInvalidRecipe", err)
			}
			return
		}
		out, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of a parsed recipe %+v: %v", r, err)
		}
		back, err := ParseRecipe(out)
		if err != nil {
			t.Fatalf("ParseRecipe(%s) of MarshalJSON: %v", out, err)
		}
		if len(back) != len(r) || (len(r) > 0 && !reflect.DeepEqual(back, r)) {
			t.Fatalf("round trip: %+v -> %s -> %+v", r, out, back)
		}
		again, err := back.MarshalJSON()
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("MarshalJSON is not a fixed point: %s, then %s (%v)", out, again, err)
		}
	})
}

// FuzzCompileApply: any recipe on any small axis and any spectrum, NaN and
// infinities included, compiles or is refused with ErrInvalidRecipe, and
// applies or is refused with ErrDegenerateSpectrum, without a panic, and
// Repaired never exceeds the spectrum's length per despike step.
func FuzzCompileApply(f *testing.F) {
	for i, s := range recipeSeeds {
		f.Add([]byte(s), uint8(i*7), float64(i)-3, []byte{1, 2, 3, 4, 5, 6, 7, 8, 200, 9, 9, 9, 9, 9, 9, 9})
	}
	f.Add([]byte(`[{"step":"normalize","region":[1,2]}]`), uint8(2), 1.0, []byte{})
	f.Add([]byte(`[{"step":"despike","width":16},{"step":"als_baseline","lam":1e12,"p":1e-300,"iterations":50}]`), uint8(5), 0.0, bytes.Repeat([]byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 1}, 9))
	f.Fuzz(func(t *testing.T, recipeJSON []byte, size uint8, warp float64, values []byte) {
		r, err := ParseRecipe(recipeJSON)
		if err != nil {
			return
		}
		n := int(size%64) + 1
		axis := make([]float64, n)
		for i := range axis {
			u := float64(i)
			axis[i] = 1 + u + warp*u*u/float64(n)
		}
		p, err := Compile(r, axis)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecipe) {
				t.Fatalf("Compile error %v does not wrap ErrInvalidRecipe", err)
			}
			return
		}
		x := make([]float64, n)
		for i := range x {
			if len(values) >= 8*(i+1) {
				x[i] = math.Float64frombits(binary.LittleEndian.Uint64(values[8*i:]))
			} else if len(values) > 0 {
				x[i] = float64(values[i%len(values)]) - 128
			}
		}
		ws := &Workspace{}
		for round := 0; round < 2; round++ {
			y := append([]float64(nil), x...)
			st, err := p.Apply(y, ws)
			if err != nil && !errors.Is(err, ErrDegenerateSpectrum) {
				t.Fatalf("Apply error %v does not wrap ErrDegenerateSpectrum", err)
			}
			if st.Repaired < 0 || st.Repaired > n*len(r) {
				t.Fatalf("Repaired %d for %d points", st.Repaired, n)
			}
		}
	})
}
