package preprocess_test

import (
	"fmt"
	"math"

	"ramanserve/inference/preprocess"
)

// A recipe as a chemometrician writes it: remove cosmic spikes, take the
// first derivative, scale each spectrum to unit variance.
func Example() {
	recipe, err := preprocess.ParseRecipe([]byte(`[
		{"step": "despike"},
		{"step": "savgol", "window": 7, "polyorder": 2, "deriv": 1},
		{"step": "snv"}
	]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := recipe.MarshalJSON()
	fmt.Println(string(b))

	// The instrument's axis: 64 points, not linear.
	axis := make([]float64, 64)
	spectrum := make([]float64, 64)
	for i := range axis {
		u := float64(i) / 63
		axis[i] = 600 + 1100*u + 100*u*u
		d := (axis[i] - 1200) / 150
		spectrum[i] = 100 + 0.05*axis[i] + 500/(1+d*d) + 2*math.Sin(float64(7*i))
	}
	spectrum[40] += 4000 // a cosmic ray

	p, err := preprocess.Compile(recipe, axis)
	if err != nil {
		fmt.Println(err)
		return
	}
	ws := p.NewWorkspace() // one per goroutine; Apply then allocates nothing
	st, err := p.Apply(spectrum, ws)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("repaired %d points; x[20..23] = %.4f %.4f %.4f %.4f\n",
		st.Repaired, spectrum[20], spectrum[21], spectrum[22], spectrum[23])

	// Errors name the field.
	_, err = preprocess.Compile(preprocess.Recipe{{Kind: preprocess.Savgol, Window: 65, PolyOrder: 2}}, axis)
	fmt.Println(err)
	// Output:
	// [{"step":"despike","threshold":6,"width":2},{"step":"savgol","window":7,"polyorder":2,"deriv":1},{"step":"snv"}]
	// repaired 1 points; x[20..23] = 0.8358 0.9464 1.0922 1.2763
	// invalid preprocessing recipe: preprocessing[0].window: 65 is more than the 64 points of the axis
}
