package preprocess

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestCompileRejects(t *testing.T) {
	axis := linearAxis(21) // 200, 350, ..., 3200
	for _, c := range []struct {
		name   string
		recipe Recipe
		axis   []float64
		field  string
	}{
		{"no axis", nil, nil, "wavenumbers"},
		{"NaN axis", nil, []float64{1, math.NaN(), 3}, "wavenumbers[1]"},
		{"Inf axis", nil, []float64{1, 2, math.Inf(1)}, "wavenumbers[2]"},
		{"flat axis", nil, []float64{1, 2, 2, 3}, "wavenumbers[2]"},
		{"decreasing axis", nil, []float64{3, 2, 1}, "wavenumbers[1]"},
		{"even window", Recipe{{Kind: SNV}, {Kind: Savgol, Window: 14, PolyOrder: 2}}, axis, "preprocessing[1].window"},
		{"window <= polyorder", Recipe{{Kind: Savgol, Window: 5, PolyOrder: 5}}, axis, "preprocessing[0].window"},
		{"window > len", Recipe{{Kind: Savgol, Window: 23, PolyOrder: 2}}, axis, "preprocessing[0].window"},
		{"deriv > polyorder", Recipe{{Kind: Savgol, Window: 7, PolyOrder: 2, Deriv: 3}}, axis, "preprocessing[0].deriv"},
		{"schema bound", Recipe{{Kind: Despike, Threshold: 0, Width: 2}}, axis, "preprocessing[0].threshold"},
		{"unknown kind", Recipe{{Kind: "smooth"}}, axis, "preprocessing[0].step"},
		{"region low > high", Recipe{{Kind: Normalize, Region: [2]float64{900, 800}}}, axis, "preprocessing[0].region"},
		{"region below axis", Recipe{{Kind: Normalize, Region: [2]float64{100, 800}}}, axis, "preprocessing[0].region"},
		{"region above axis", Recipe{{Kind: Normalize, Region: [2]float64{3000, 3300}}}, axis, "preprocessing[0].region"},
		{"region one point", Recipe{{Kind: Normalize, Region: [2]float64{340, 360}}}, axis, "preprocessing[0].region"},
		{"region no point", Recipe{{Kind: Normalize, Region: [2]float64{360, 390}}}, axis, "preprocessing[0].region"},
		{"region NaN", Recipe{{Kind: Normalize, Region: [2]float64{math.NaN(), 900}}}, axis, "preprocessing[0].region[0]"},
	} {
		_, err := Compile(c.recipe, c.axis)
		var fe *FieldError
		if !errors.Is(err, ErrInvalidRecipe) || !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
	// The limits themselves compile.
	for _, r := range []Recipe{
		{{Kind: Savgol, Window: 21, PolyOrder: 10, Deriv: 4}},
		{{Kind: Normalize, Region: [2]float64{200, 350}}},
		{{Kind: Normalize, Region: [2]float64{3050, 3200}}},
	} {
		if _, err := Compile(r, axis); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

func TestSelectRegions(t *testing.T) {
	axis := []float64{100, 200, 300, 400, 500, 600, 700}
	got, err := SelectRegions(axis, [][2]float64{{450, 700}, {100, 250}, {200, 300}, {550, 650}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 4, 5, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got, err = SelectRegions(axis, nil)
	if err != nil || len(got) != len(axis) {
		t.Errorf("no regions: %v, %v", got, err)
	}
	for _, c := range []struct {
		regions [][2]float64
		field   string
	}{
		{[][2]float64{{100, 200}, {300, 250}}, "regions[1]"},
		{[][2]float64{{50, 200}}, "regions[0]"},
		{[][2]float64{{600, 701}}, "regions[0]"},
		{[][2]float64{{210, 290}}, "regions[0]"},
		{[][2]float64{{math.NaN(), 290}}, "regions[0]"},
		{make([][2]float64, MaxRegions+1), "regions"},
	} {
		_, err := SelectRegions(axis, c.regions)
		var fe *FieldError
		if !errors.Is(err, ErrInvalidRecipe) || !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%v: %v, want a FieldError on %s", c.regions, err, c.field)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	axis := linearAxis(50)
	p, err := Compile(Recipe{{Kind: Normalize, Region: [2]float64{1000, 1500}}}, axis)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.NewWorkspace()
	if _, err := p.Apply(make([]float64, 49), ws); !errors.Is(err, ErrDegenerateSpectrum) {
		t.Errorf("short spectrum: %v", err)
	}
	if _, err := p.Apply(make([]float64, 50), nil); !errors.Is(err, ErrDegenerateSpectrum) {
		t.Errorf("nil workspace: %v", err)
	}
	if _, err := p.Apply(make([]float64, 50), ws); !errors.Is(err, ErrDegenerateSpectrum) {
		t.Errorf("zero band area: %v", err)
	}
	x := make([]float64, 50)
	x[20] = math.Inf(1)
	if _, err := p.Apply(x, ws); !errors.Is(err, ErrDegenerateSpectrum) {
		t.Errorf("infinite band area: %v", err)
	}
	// The zero Workspace works too.
	x = make([]float64, 50)
	for i := range x {
		x[i] = 2
	}
	if _, err := p.Apply(x, &Workspace{}); err != nil {
		t.Fatal(err)
	}
	lo, hi := -1, -1
	for i, a := range axis {
		if a >= 1000 && a <= 1500 {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if want := 2 / (2 * (axis[hi] - axis[lo])); math.Abs(x[0]-want) > 1e-14*want {
		t.Errorf("normalized flat spectrum: %v, want %v", x[0], want)
	}
}

func TestSNVFlatIsZero(t *testing.T) {
	p, err := Compile(Recipe{{Kind: SNV}}, linearAxis(2048))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, 2048)
	for i := range x {
		x[i] = 0.1
	}
	if _, err := p.Apply(x, p.NewWorkspace()); err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		if v != 0 {
			t.Fatalf("x[%d] = %v, want 0", i, v)
		}
	}
}

// despikeCase is a spectrum of 400 points on a warped axis: a background,
// a strong, sharp band of high signal-to-noise (centre 200, half width at
// half maximum 4 points, 20000 counts), a little noise and the given
// spikes added.
func despikeSpectrum(spikes map[int]float64) (axis, x, clean []float64) {
	axis = warpedAxis(400)
	x = make([]float64, len(axis))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range x {
		d := float64(i-200) / 4
		x[i] = 1000 + 2*float64(i) + 20000/(1+d*d) + 3*rng.NormFloat64()
	}
	clean = append([]float64(nil), x...)
	for i, h := range spikes {
		x[i] += h
	}
	return axis, x, clean
}

func runDespike(t *testing.T, axis, x []float64, threshold float64, width int) int {
	t.Helper()
	p, err := Compile(Recipe{{Kind: Despike, Threshold: threshold, Width: width}}, axis)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Apply(x, p.NewWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	return st.Repaired
}

// The band's flanks rise by up to 2600 counts per point, hundreds of
// times the noise: the Whitaker & Hayes rule (every outlying difference
// marks a point) flagged them; a spike needs a rise and a fall within
// width+1 points, each more than twice the slope beside it.
func TestDespikeLeavesSharpBandsAlone(t *testing.T) {
	axis, x, clean := despikeSpectrum(nil)
	for _, threshold := range []float64{3, 6} {
		if got := runDespike(t, axis, x, threshold, 2); got != 0 {
			t.Errorf("threshold %g: repaired %d points of a clean spectrum", threshold, got)
		}
	}
	for i := range x {
		if x[i] != clean[i] {
			t.Fatalf("x[%d] = %v, clean %v", i, x[i], clean[i])
		}
	}
}

func TestDespikeRepairsSpikes(t *testing.T) {
	for _, c := range []struct {
		name     string
		spikes   map[int]float64
		width    int
		repaired int
	}{
		{"one point on the background", map[int]float64{100: 3000}, 2, 1},
		{"two points on the background", map[int]float64{100: 3000, 101: 1200}, 2, 2},
		{"two points, the second taller", map[int]float64{100: 1000, 101: 3000}, 2, 2},
		{"one point on the band's rising flank", map[int]float64{195: 5000}, 2, 1},
		{"two points on the band's falling flank", map[int]float64{207: 6000, 208: 3000}, 2, 2},
		{"three points, width 2", map[int]float64{300: 3000, 301: 3000, 302: 3000}, 2, 3},
		{"three points, width 1: too wide", map[int]float64{300: 3000, 301: 3000, 302: 3000}, 1, 0},
		{"two points, width 0: too wide", map[int]float64{100: 3000, 101: 1200}, 0, 0},
		{"two spikes", map[int]float64{50: 2000, 300: 8000, 301: 2000}, 2, 3},
		{"first and last points: one edge only", map[int]float64{0: 5000, 399: 5000}, 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			axis, x, clean := despikeSpectrum(c.spikes)
			spiky := append([]float64(nil), x...)
			if got := runDespike(t, axis, x, 6, c.width); got != c.repaired {
				t.Errorf("repaired %d points, want %d", got, c.repaired)
			}
			for i := range x {
				_, spike := c.spikes[i]
				switch {
				case c.repaired > 0 && spike && math.Abs(x[i]-clean[i]) > 400:
					// A line across a spike on a band's flank misses the
					// flank's curvature by a few hundred counts at most.
					t.Errorf("spike point %d: %v after repair, clean %v", i, x[i], clean[i])
				case !spike && x[i] != clean[i]:
					t.Errorf("point %d is no spike but changed: %v, clean %v", i, x[i], clean[i])
				case c.repaired == 0 && x[i] != spiky[i]:
					t.Errorf("point %d changed: %v, was %v", i, x[i], spiky[i])
				}
			}
		})
	}
}

// Apply allocates nothing with a workspace, whatever the steps; this is
// what keeps the predict path free of garbage.
func TestApplyAllocatesNothing(t *testing.T) {
	axis := warpedAxis(2048)
	p, err := Compile(Recipe{
		{Kind: Despike, Threshold: 6, Width: 2},
		{Kind: ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10},
		{Kind: Savgol, Window: 15, PolyOrder: 2, Deriv: 1},
		{Kind: Normalize, Region: [2]float64{1400, 1500}},
		{Kind: SNV},
	}, axis)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.NewWorkspace()
	spectrum := syntheticSpectrum(rand.New(rand.NewPCG(7, 8)), axis, 3)
	x := make([]float64, len(spectrum))
	allocs := testing.AllocsPerRun(20, func() {
		copy(x, spectrum)
		if _, err := p.Apply(x, ws); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Apply allocates %v times per spectrum, want 0", allocs)
	}
}
