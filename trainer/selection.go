package trainer

import (
	"math"
	"math/rand/v2"

	"ramanserve/inference"
)

// DefaultRule is the rule that chooses the component count when
// Options.Rule is empty: onesigma, the rule whose held-out error was
// lowest or tied on the most of the measured data sets and segment types,
// and the only one whose choice on gasoline did not move with the
// segments (TestRuleEvidence; api/openapi.yaml, TrainingMeta's
// component_rule, gives the table).
const DefaultRule = inference.RuleOneSigma

// The randomization rule's test, as R pls's selectNcomp runs it by
// default: 999 random sign flips, and a count is "not worse" than the
// best one when its p-value is above 0.01.
const (
	RandomizationPermutations = 999
	RandomizationAlpha        = 0.01
)

// signSeedStream is the PCG stream of the randomization rule's sign
// flips; the seed is Options.Seed, as for the fold shuffle.
const signSeedStream = 0x766456 // "vdV"

// The rules (Options.Rule), for counts k = 1..A_max of the CV curve
// (Train's comment defines RMSECV_jk, sd_j and Score_k). All three start
// from k* = argmin_k Score_k (the lowest count on a tie) and choose a
// count at most k*. r_ijk is row i's out-of-fold residual yhat - y of
// target j with k components.
//
// one_standard_error: the smallest k with Score_k <= Score_k* + SE_k*,
// SE across folds (Train's comment).
//
// onesigma (R pls selectNcomp(method = "onesigma")): each count's own
// standard error, from its CV residuals,
//
//	SE_k = (1/q) sum_j sd_i(r_ijk) / (sd_j sqrt(n))     (sd_i: ddof 1)
//
// and the smallest k with Score_k - SE_k < Score_k*. For one target this
// is R's `RMSEP_k - sd(r_k)/sqrt(n) < RMSEP_min` divided through by sd_y.
//
// randomization (van der Voet, 1994; R pls selectNcomp(method =
// "randomization")): for each k < k*, the per-row differences of the
// squared residuals, scaled by the label variances,
//
//	d_i = sum_j (r_ijk^2 - r_ijk*^2) / sd_j^2,
//
// are tested for a mean above 0 by flipping the sign of each d_i at
// random RandomizationPermutations times (seeded): with c the number of
// flips whose mean is >= mean(d), p_k = (c + 0.5) / (permutations + 1).
// The choice is the smallest k with p_k > RandomizationAlpha, else k*.
// For one target the scaling cancels and this is R's test.
//
// R pls also considers 0 components (the mean alone), which no model
// here can be; its rules take one response only, and these take several
// through the scaling by sd_j, so that every analyte weighs alike, as
// in Score.

// chooseComponents applies the inputs' rule (or the fixed count) to the
// CV curve and returns the chosen count and the rule's name. For onesigma
// and randomization it replaces stats[k].ScoreSE by SE_k above, the
// standard error those rules read; randomization also fills PValue.
func chooseComponents(ds *Dataset, in *inputs, stats []ComponentStats, cvPred [][]float64, sd []float64, seed uint64) (int, string) {
	if in.fixed {
		return in.amax, inference.RuleFixed
	}
	switch in.rule {
	case inference.RuleOneSigma:
		setResidualSE(ds, stats, cvPred, sd)
		return oneSigma(stats), in.rule
	case inference.RuleRandomization:
		setResidualSE(ds, stats, cvPred, sd)
		return randomization(ds, stats, cvPred, sd, seed), in.rule
	}
	return oneStandardError(stats), inference.RuleOneStandardError
}

// setResidualSE sets stats[k].ScoreSE to SE_k of the onesigma rule.
func setResidualSE(ds *Dataset, stats []ComponentStats, cvPred [][]float64, sd []float64) {
	n, q := ds.Len(), ds.NumTargets()
	for k := range stats {
		se := 0.0
		for j := 0; j < q; j++ {
			mean := 0.0
			for i := 0; i < n; i++ {
				mean += cvPred[k][i*q+j] - ds.Labels(i)[j]
			}
			mean /= float64(n)
			ss := 0.0
			for i := 0; i < n; i++ {
				d := cvPred[k][i*q+j] - ds.Labels(i)[j] - mean
				ss += d * d
			}
			se += math.Sqrt(ss/float64(n-1)) / (sd[j] * math.Sqrt(float64(n)))
		}
		stats[k].ScoreSE = se / float64(q)
	}
}

// oneSigma applies the onesigma rule to scores whose ScoreSE is SE_k.
func oneSigma(stats []ComponentStats) int {
	best := minScore(stats) - 1
	for k := range stats {
		if stats[k].Score-stats[k].ScoreSE < stats[best].Score {
			return k + 1
		}
	}
	return best + 1
}

// randomization applies the randomization rule, recording each tested
// count's p-value in stats[k].PValue (NaN for counts not tested).
func randomization(ds *Dataset, stats []ComponentStats, cvPred [][]float64, sd []float64, seed uint64) int {
	for k := range stats {
		stats[k].PValue = math.NaN()
	}
	best := minScore(stats) - 1
	n, q := ds.Len(), ds.NumTargets()
	rng := rand.New(rand.NewPCG(seed, signSeedStream))
	d := make([]float64, n)
	chosen := best + 1
	for k := 0; k < best; k++ {
		for i := 0; i < n; i++ {
			d[i] = 0
			for j, y := range ds.Labels(i) {
				e, ref := cvPred[k][i*q+j]-y, cvPred[best][i*q+j]-y
				d[i] += (e*e - ref*ref) / (sd[j] * sd[j])
			}
		}
		stats[k].PValue = signFlipPValue(d, RandomizationPermutations, rng)
		if stats[k].PValue > RandomizationAlpha && chosen == best+1 {
			chosen = k + 1
		}
	}
	return chosen
}

// signFlipPValue is the one-sided p-value of mean(d) > 0 under random
// sign flips of each d_i: (c + 0.5) / (perms + 1), c the flips whose
// mean is >= mean(d) (equality counts against the difference, as in R
// pls).
func signFlipPValue(d []float64, perms int, rng *rand.Rand) float64 {
	sum := 0.0
	for _, v := range d {
		sum += v
	}
	observed := sum / float64(len(d))
	count := 0
	for range perms {
		flipped := 0.0
		var word uint64
		for i, v := range d {
			if i%64 == 0 {
				word = rng.Uint64()
			}
			if word&1 == 1 {
				flipped += v
			} else {
				flipped -= v
			}
			word >>= 1
		}
		if flipped/float64(len(d)) >= observed {
			count++
		}
	}
	return (float64(count) + 0.5) / float64(perms+1)
}
