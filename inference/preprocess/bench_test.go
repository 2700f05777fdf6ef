package preprocess

import (
	"math/rand/v2"
	"testing"

	"ramanserve/platform/cputime"
)

// BenchmarkApply measures one 2048-point spectrum through the recipes a
// model carries. The predict budget (README) is 25 us server-side with
// savgol + snv, of which the PLS part costs about 16 us, and 150 us with
// als_baseline.
func BenchmarkApply(b *testing.B) {
	axis := linearAxis(2048)
	spectrum := syntheticSpectrum(rand.New(rand.NewPCG(5, 6)), axis, 3)
	for _, c := range []struct {
		name   string
		recipe Recipe
	}{
		{"savgol(15,2,1)+snv", Recipe{{Kind: Savgol, Window: 15, PolyOrder: 2, Deriv: 1}, {Kind: SNV}}},
		{"despike+savgol(15,2,1)+snv", Recipe{{Kind: Despike, Threshold: 6, Width: 2}, {Kind: Savgol, Window: 15, PolyOrder: 2, Deriv: 1}, {Kind: SNV}}},
		{"als_baseline(1e5,0.01,10)", Recipe{{Kind: ALSBaseline, Lambda: 1e5, P: 0.01, Iterations: 10}}},
		{"normalize", Recipe{{Kind: Normalize, Region: [2]float64{1400, 1500}}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, err := Compile(c.recipe, axis)
			if err != nil {
				b.Fatal(err)
			}
			ws := p.NewWorkspace()
			x := make([]float64, len(spectrum))
			b.ReportAllocs()
			cpu0 := cputime.Process()
			for b.Loop() {
				copy(x, spectrum)
				if _, err := p.Apply(x, ws); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
