package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFoldAssignmentSegments: consecutive segments are contiguous blocks
// in row order whose sizes are R pls cvsegments' and scikit-learn KFold's
// (the first n mod K blocks one row longer); interleaved puts row i in
// fold i mod K; random keeps the sizes of consecutive and depends on the
// seed; K = n puts each row alone.
func TestFoldAssignmentSegments(t *testing.T) {
	sizes := func(fold []int, k int) []int {
		out := make([]int, k)
		for _, f := range fold {
			out[f]++
		}
		return out
	}
	for _, tc := range []struct {
		n, k  int
		sizes []int
	}{
		{28, 10, []int{3, 3, 3, 3, 3, 3, 3, 3, 2, 2}},
		{50, 10, []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}},
		{12, 5, []int{3, 3, 2, 2, 2}},
		{7, 7, []int{1, 1, 1, 1, 1, 1, 1}},
	} {
		t.Run(fmt.Sprintf("n=%d,K=%d", tc.n, tc.k), func(t *testing.T) {
			cons := foldAssignment(tc.n, tc.k, SegmentsConsecutive, 0)
			if !slices.IsSorted(cons) || !slices.Equal(sizes(cons, tc.k), tc.sizes) {
				t.Errorf("consecutive %v, want contiguous blocks of sizes %v", cons, tc.sizes)
			}
			inter := foldAssignment(tc.n, tc.k, SegmentsInterleaved, 0)
			for i, f := range inter {
				if f != i%tc.k {
					t.Fatalf("interleaved row %d in fold %d, want %d", i, f, i%tc.k)
				}
			}
			random := foldAssignment(tc.n, tc.k, SegmentsRandom, 4)
			if !slices.Equal(sizes(random, tc.k), tc.sizes) {
				t.Errorf("random sizes %v, want %v", sizes(random, tc.k), tc.sizes)
			}
			if tc.n > tc.k && slices.Equal(random, foldAssignment(tc.n, tc.k, SegmentsRandom, 5)) {
				t.Errorf("random segments do not depend on the seed")
			}
		})
	}
}

// TestOneSigmaUsesEachCountsOwnError: onesigma compares Score_k - SE_k
// (each count's own SE) with the minimum, strictly; one_standard_error
// compares Score_k with the minimum plus the minimum's SE.
func TestOneSigmaUsesEachCountsOwnError(t *testing.T) {
	stats := []ComponentStats{{Score: 1.0, ScoreSE: 0.05}, {Score: 0.6, ScoreSE: 0.11}, {Score: 0.5, ScoreSE: 0.01}, {Score: 0.55, ScoreSE: 0.2}}
	if got := oneSigma(stats); got != 2 {
		t.Errorf("onesigma chose %d, want 2 (0.6 - 0.11 < 0.5)", got)
	}
	stats[1].ScoreSE = 0.1 // 0.6 - 0.1 = 0.5 is not below the minimum
	if got := oneSigma(stats); got != 3 {
		t.Errorf("onesigma chose %d, want 3 (the bound is strict)", got)
	}
	if got := oneStandardError(stats); got != 3 {
		t.Errorf("one_standard_error chose %d, want 3 (0.6 > 0.5 + 0.01)", got)
	}
}

// TestSignFlipPValue: a difference far above 0 has the smallest p-value
// 0.5/(perms+1); a difference symmetric about 0 has p near 1/2; the
// draw is seeded.
func TestSignFlipPValue(t *testing.T) {
	const perms = 999
	large := make([]float64, 40)
	for i := range large {
		large[i] = 1 + float64(i%3)
	}
	if p := signFlipPValue(large, perms, rand.New(rand.NewPCG(1, 2))); p != 0.5/(perms+1) {
		t.Errorf("all-positive differences: p = %v, want %v", p, 0.5/(perms+1))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]float64, 200)
	for i := range noise {
		noise[i] = rng.NormFloat64()
	}
	noise[0] -= sum(noise) // mean 0 exactly: about half the flips reach it
	p := signFlipPValue(noise, perms, rand.New(rand.NewPCG(1, 2)))
	if math.Abs(p-0.5) > 0.07 {
		t.Errorf("mean-zero differences: p = %v, want about 0.5", p)
	}
	if again := signFlipPValue(noise, perms, rand.New(rand.NewPCG(1, 2))); again != p {
		t.Errorf("same seed, p = %v then %v", p, again)
	}
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}
