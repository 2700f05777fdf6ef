package reconcile_test

import (
	"fmt"

	"ramanserve/evidence/reconcile"
)

// Four samples: the model reads about 1 g/L high.
func ExampleStatistics() {
	predicted := []float64{181.2, 176.0, 190.4, 185.1}
	lab := []float64{180.0, 175.2, 189.1, 184.3}
	s := reconcile.Statistics(predicted, lab)
	fmt.Printf("n %d, RMSEP %.3f g/L, bias %+.3f g/L\n", s.N, *s.RMSEP, *s.Bias)
	fmt.Printf("lab = %.3f + %.4f * predicted\n", *s.Intercept, *s.Slope)

	// One sample: no regression line.
	one := reconcile.Statistics([]float64{181.2}, []float64{180.0})
	fmt.Println(one.N, *one.Bias, one.Slope == nil, one.Intercept == nil)
	// Output:
	// n 4, RMSEP 1.050 g/L, bias +1.025 g/L
	// lab = 3.621 + 0.9746 * predicted
	// 1 1.1999999999999886 true true
}
