package synth_test

import (
	"math"
	"testing"

	"ramanserve/inference/preprocess"
	"ramanserve/trainer/synth"
)

// despikeFigures are the contract's default despike step's results on n
// spectra of one generator configuration.
type despikeFigures struct {
	spectra       int
	cleanRepaired int // points repaired on the clean spectra (false repairs)
	cleanTouched  int // clean spectra with at least one point repaired
	injected      int // points changed by the injected cosmic-ray spikes
	detected      int // of those, points the step repaired
	extra         int // points repaired on the spiky spectra that no spike changed
	worstResidual float64
}

// measureDespike applies step to n spectra of two generators of one
// seed, one clean and one with cosmic-ray spikes in every spectrum. Their
// spectra differ by the spikes alone (synth draws the faults from a
// stream of their own and adds them after the noise), so that the points
// a spike changed are those where the two differ.
func measureDespike(t *testing.T, cfg synth.Config, n int, step preprocess.Step) despikeFigures {
	t.Helper()
	axis := synth.Axis()
	p, err := preprocess.Compile(preprocess.Recipe{step}, axis)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.NewWorkspace()
	spikyCfg := cfg
	spikyCfg.Faults.SpikeFraction = 1
	clean, spiky := synth.New(cfg), synth.New(spikyCfg)
	f := despikeFigures{spectra: n}
	x := make([]float64, len(axis))
	for s := 0; s < n; s++ {
		c, k := clean.Next(), spiky.Next()
		copy(x, c.Intensities)
		st, err := p.Apply(x, ws)
		if err != nil {
			t.Fatal(err)
		}
		f.cleanRepaired += st.Repaired
		if st.Repaired > 0 {
			f.cleanTouched++
		}
		copy(x, k.Intensities)
		if _, err := p.Apply(x, ws); err != nil {
			t.Fatal(err)
		}
		injected := 0
		for i := range x {
			spike := k.Intensities[i] != c.Intensities[i]
			repaired := x[i] != k.Intensities[i]
			if spike {
				injected++
			}
			switch {
			case spike && repaired:
				f.detected++
				f.worstResidual = math.Max(f.worstResidual, math.Abs(x[i]-c.Intensities[i]))
			case repaired:
				f.extra++
			}
		}
		// Sample.Spikes counts a point twice when two spikes hit it.
		if injected > k.Spikes || (k.Spikes > 0) != (injected > 0) {
			t.Fatalf("spectrum %d: %d points differ from the clean one, synth reports %d spike points", s, injected, k.Spikes)
		}
		f.injected += injected
	}
	return f
}

// The contract's default despike (threshold 6, width 2) on synth's
// spectra, which have a signal-to-noise ratio of several hundred: it must
// leave clean spectra alone (the Whitaker & Hayes rule repaired about 330
// of their 2048 points, the flanks of every strong band) and repair the
// injected cosmic-ray spikes (1 or 2 points, 1500 to 15000 counts).
func TestDefaultDespikeOnSyntheticSpectra(t *testing.T) {
	const spectra = 300
	step := preprocess.Step{Kind: preprocess.Despike, Threshold: 6, Width: 2}
	for _, c := range []struct {
		name string
		cfg  synth.Config
	}{
		{"default config", synth.Config{Seed: 11}},
		{"3 % laser drift (the robustness study's)", synth.Config{Seed: 12, LaserDrift: 0.03}},
	} {
		f := measureDespike(t, c.cfg, spectra, step)
		rate := float64(f.detected) / float64(f.injected)
		t.Logf("%s: clean spectra: %d points repaired in %d of %d spectra; spiky spectra: %d of %d spike points repaired (%.1f %%), %d other points repaired, largest error left at a spike point %.0f counts",
			c.name, f.cleanRepaired, f.cleanTouched, f.spectra, f.detected, f.injected, 100*rate, f.extra, f.worstResidual)
		if f.cleanRepaired > 2 {
			t.Errorf("%s: %d points repaired on %d clean spectra, want at most 2", c.name, f.cleanRepaired, spectra)
		}
		if rate < 0.95 {
			t.Errorf("%s: %.1f %% of the spike points repaired, want at least 95 %%", c.name, 100*rate)
		}
		if f.extra > f.injected/20 {
			t.Errorf("%s: %d points repaired beside the %d spike points, want at most 5 %%", c.name, f.extra, f.injected)
		}
	}
}
