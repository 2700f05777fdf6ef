// Package synth generates seeded, realistic synthetic Raman spectra of
// omega-3 ethyl-ester mixtures (EPA, DHA, DPA) in an ethanol/hexane mobile
// phase, as sampled after a purification column, together with their
// "HPLC" labels in g/L. Tests, benchmarks and the demo train on it.
//
// Each spectrum is the sum of
//   - the three esters' Raman bands (=C-H stretch ~3012, CH2/CH3 stretches
//     2850-2960, C=O 1740, C=C 1655, CH2 scissor 1440, cis =C-H rock 1265,
//     CH2 twist 1300 and skeletal bands), with per-molecule intensities
//     built from each ester's group counts (number of cis double bonds,
//     CH2 groups) and its molar mass, and slightly different positions and
//     widths;
//   - ethanol and hexane bands (the solvent ratio varies per sample);
//   - a fluorescence baseline (polynomial plus exponential, random per
//     sample);
//   - a multiplicative laser-power drift of the Raman part;
//   - an axis jitter (a common shift of all bands, ~0.25 cm-1 rms);
//   - shot noise (Gaussian with variance equal to the counts, i.e. the
//     Poisson limit) plus read noise;
//   - optionally (Config.Faults, for test spectra) acquisition faults:
//     cosmic-ray spikes in a fraction of the spectra, a laser-power change,
//     a stronger fluorescence.
//
// The concentrations follow two latent variables: the elution position f
// drives all three strongly (pairwise correlation about 0.8-0.9, as on a
// real column), a selectivity variable s shifts DHA against DPA, and each
// analyte has a small independent part. The data therefore has about 3
// chemical degrees of freedom plus solvent (1-2), baseline (3-4), drift
// and jitter (1-2): a PLS model needs roughly 6 to 14 components.
package synth

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"

	"ramanserve/trainer"
	"ramanserve/trainer/csvdata"
)

// Axis returns the generator's (and the trainer's default) wavenumber
// axis: 2048 points, 200..3200 cm-1, linear.
func Axis() []float64 { return trainer.DefaultWavenumbers() }

// Sample is one generated spectrum with its labels.
type Sample struct {
	ScanID      string
	Intensities []float64  // counts, on Axis()
	Conc        [3]float64 // EPA, DHA, DPA in g/L
	// Spikes is the number of points changed by injected cosmic-ray
	// spikes (Config.Faults.SpikeFraction); 0 for a clean spectrum.
	Spikes int
}

// Anomaly selects an out-of-domain spectrum for tests of the model's
// diagnostics.
type Anomaly int

const (
	// Contaminant adds a toluene-like aromatic contaminant (sharp ring
	// band at 1003 cm-1, 1030, 786, 3057 cm-1) absent from training.
	Contaminant Anomaly = iota + 1
	// HeavyBaseline multiplies the fluorescence baseline by 8 (a coloured
	// impurity).
	HeavyBaseline
	// Saturated overexposes the detector: counts clip at 65535.
	Saturated
)

// Config tunes the generator. The zero value (apart from Seed) gives the
// defaults described in the package comment.
type Config struct {
	Seed uint64
	// NoiseScale multiplies shot and read noise; 0 means 1.
	NoiseScale float64
	// JitterCm is the rms axis shift in cm-1; 0 means 0.25, negative
	// means none.
	JitterCm float64
	// LaserDrift is the relative rms of the multiplicative laser-power
	// drift; 0 means 0.01, negative means none.
	LaserDrift float64
	// Faults are injected into every sample this generator draws (the
	// zero value injects none). Use them for test spectra only: a model
	// is meant to be trained on clean data and tested on faulty data.
	Faults Faults
}

// Faults are acquisition faults of in-line Raman injected into generated
// spectra, for robustness tests and benchmarks. The zero value is a clean
// acquisition.
//
// Two generators with the same Seed draw the same mixtures, baselines,
// drifts and noise variates whatever their Faults: the faults draw from a
// random stream of their own. A clean and a faulty test set of one seed
// therefore differ by the faults alone (and by the shot noise's dependence
// on the counts).
type Faults struct {
	// SpikeFraction is the fraction of spectra, in [0, 1], that receive
	// cosmic-ray spikes. An affected spectrum gets 1 to 3 spikes at random
	// positions; a spike is 1 or 2 adjacent points (a second point at 20
	// to 60 % of the first: the charge of one event spreads over at most
	// two pixels), of height log-uniform in [SpikeMinCounts,
	// SpikeMaxCounts] above the spectrum. Those heights are 0.1 to 1.5
	// times the tallest band and 100 to 1000 times the noise: narrow,
	// very tall points, as a cosmic ray leaves on a CCD exposure.
	SpikeFraction float64
	// LaserPower multiplies the Raman part of every spectrum (bands of
	// esters and solvents), not the fluorescence: 0.85 is a laser 15 %
	// below its nominal power (or a fouled window, a defocused probe).
	// 0 means 1.
	LaserPower float64
	// FluorescenceScale multiplies the fluorescence baseline (a more
	// fluorescent feed or a coloured impurity): 2.5 is x2.5. 0 means 1.
	FluorescenceScale float64
}

// Heights of the injected cosmic-ray spikes, counts.
const (
	SpikeMinCounts = 1500
	SpikeMaxCounts = 15000
)

// faultStream is the PCG stream of the fault draws ("FAULT").
const faultStream = 0x4641554c54

// accumulations is the number of exposures averaged into one spectrum, as
// process Raman analysers do (e.g. 64 x 0.5 s).
const accumulations = 64

// Generator produces samples deterministically from its seed. It is not
// safe for concurrent use.
type Generator struct {
	cfg    Config
	rng    *rand.Rand
	faults *rand.Rand // draws of Config.Faults only
	axis   []float64
	pure   [numComponents]pureSpectrum
	next   int
	scaled []float64 // scratch for baseline abscissa
}

// component indexes the pure spectra.
const (
	compEPA = iota
	compDHA
	compDPA
	compEthanol
	compHexane
	compToluene
	numComponents
)

// pureSpectrum is a component's spectrum on the axis and its first two
// derivatives with respect to wavenumber, so that a shift by d is
// S(v-d) ~= S - d S' + d^2/2 S” (error O(d^3 S”'), negligible for
// d ~ 0.25 cm-1 against band widths >= 6 cm-1).
type pureSpectrum struct{ s0, s1, s2 []float64 }

// band is one Raman band: pseudo-Voigt with the given centre, full width
// at half maximum and Lorentzian fraction; height is the peak counts per
// unit amount (mol/L for the esters, volume fraction for the solvents).
type band struct {
	centre, fwhm, height, lorentz float64
}

// Molar masses of the ethyl esters, g/mol: EPA-EE C22H34O2, DHA-EE
// C24H36O2, DPA-EE (n-3) C24H38O2.
var molarMass = [3]float64{330.5, 356.5, 358.6}

// esterGroups counts the groups that carry each band: cis C=C double
// bonds, olefinic =C-H, CH2 groups (including bis-allylic and the ethyl
// CH2), of which bis-allylic.
type esterGroups struct{ doubleBonds, olefinicCH, ch2, bisAllylic float64 }

var groups = [3]esterGroups{
	{5, 10, 9, 4},  // EPA 20:5 n-3
	{6, 12, 9, 5},  // DHA 22:6 n-3
	{5, 10, 11, 4}, // DPA 22:5 n-3
}

// Positions (cm-1) of the bands that move between the esters: more
// conjugation-free cis bonds push nu(C=C) and nu(=C-H) up slightly, a
// longer saturated segment lowers nu(C=O) less. Values follow published
// spectra of omega-3 ethyl esters to within a few cm-1.
var (
	posCH   = [3]float64{3013, 3015, 3010}
	posCC   = [3]float64{1658, 1660, 1654.5}
	posCO   = [3]float64{1738.5, 1739.5, 1740}
	posScis = [3]float64{1441.5, 1442.5, 1440.5}
	posRock = [3]float64{1266, 1267.5, 1265}
	widthCC = [3]float64{19, 17.5, 20}
	widthCH = [3]float64{22, 20, 23}
)

// esterBands builds the band list of ester k; heights are counts per
// mol/L.
func esterBands(k int) []band {
	g := groups[k]
	const scale = 1e4 // counts per (mol/L x group cross-section unit)
	return []band{
		{posCH[k], widthCH[k], scale * 0.30 * g.olefinicCH, 0.5},
		{2960, 28, scale * 0.35 * 2, 0.4},                         // CH3 asym (ester + terminal)
		{2932, 34, scale * 0.42 * (g.ch2 + 1), 0.4},               // CH2 asym / CH3 Fermi
		{2874, 22, scale * 0.20 * 2, 0.4},                         // CH3 sym
		{2851, 24, scale * 0.36 * g.ch2, 0.5},                     // CH2 sym
		{posCO[k], 18, scale * 0.55, 0.6},                         // ester C=O
		{posCC[k], widthCC[k], scale * 0.95 * g.doubleBonds, 0.6}, // cis C=C
		{posScis[k], 24, scale * 0.30 * (g.ch2 + 1), 0.5},         // CH2 scissor
		{1302, 26, scale * 0.16 * (g.ch2 - g.bisAllylic), 0.5},    // CH2 twist (non-allylic)
		{posRock[k], 22, scale * 0.22 * g.olefinicCH, 0.5},        // cis =C-H rock
		{1085, 30, scale * 0.10 * g.ch2, 0.5},                     // C-C stretch
		{970 + float64(k), 25, scale * 0.06 * g.doubleBonds, 0.5}, // =C-H out of plane (weak)
		{600 + 3*float64(k), 40, scale * 0.05 * g.doubleBonds, 0.5},
	}
}

// Solvent bands, heights in counts per unit volume fraction.
var (
	ethanolBands = []band{
		{882, 14, 4200, 0.6}, {1052, 16, 1500, 0.6}, {1096, 18, 1200, 0.6},
		{1276, 20, 500, 0.5}, {1454, 22, 1600, 0.5}, {2878, 22, 3200, 0.5},
		{2928, 24, 4500, 0.5}, {2974, 20, 5600, 0.5}, {434, 30, 600, 0.5},
	}
	hexaneBands = []band{
		{895, 16, 2100, 0.6}, {1040, 18, 1300, 0.6}, {1078, 18, 1500, 0.6},
		{1303, 18, 2200, 0.6}, {1445, 20, 2800, 0.5}, {2855, 20, 5200, 0.5},
		{2873, 18, 5400, 0.5}, {2910, 22, 3600, 0.5}, {2935, 20, 4800, 0.5},
		{2962, 18, 4600, 0.5},
	}
	tolueneBands = []band{
		{1003, 7, 20000, 0.7}, {1030, 8, 7000, 0.7}, {786, 9, 6000, 0.7},
		{3057, 16, 8000, 0.6}, {1605, 10, 2400, 0.6}, {521, 12, 1800, 0.6},
	}
)

// New returns a generator for cfg.
func New(cfg Config) *Generator {
	if cfg.NoiseScale == 0 {
		cfg.NoiseScale = 1
	}
	if cfg.JitterCm == 0 {
		cfg.JitterCm = 0.25
	}
	if cfg.JitterCm < 0 {
		cfg.JitterCm = 0
	}
	if cfg.LaserDrift == 0 {
		cfg.LaserDrift = 0.01
	}
	if cfg.LaserDrift < 0 {
		cfg.LaserDrift = 0
	}
	if cfg.Faults.LaserPower == 0 {
		cfg.Faults.LaserPower = 1
	}
	if cfg.Faults.FluorescenceScale == 0 {
		cfg.Faults.FluorescenceScale = 1
	}
	g := &Generator{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		faults: rand.New(rand.NewPCG(cfg.Seed, faultStream)),
		axis:   Axis(),
	}
	for k := 0; k < 3; k++ {
		g.pure[k] = tabulate(g.axis, esterBands(k))
	}
	g.pure[compEthanol] = tabulate(g.axis, ethanolBands)
	g.pure[compHexane] = tabulate(g.axis, hexaneBands)
	g.pure[compToluene] = tabulate(g.axis, tolueneBands)
	g.scaled = make([]float64, len(g.axis))
	lo, hi := g.axis[0], g.axis[len(g.axis)-1]
	for i, v := range g.axis {
		g.scaled[i] = 2*(v-lo)/(hi-lo) - 1 // [-1, 1] for the polynomial baseline
	}
	return g
}

// tabulate evaluates the bands and their first and second wavenumber
// derivatives (by central differences with h = 0.05 cm-1) on the axis.
func tabulate(axis []float64, bands []band) pureSpectrum {
	const h = 0.05
	ps := pureSpectrum{make([]float64, len(axis)), make([]float64, len(axis)), make([]float64, len(axis))}
	for i, v := range axis {
		f0, fp, fm := 0.0, 0.0, 0.0
		for _, b := range bands {
			f0 += b.at(v)
			fp += b.at(v + h)
			fm += b.at(v - h)
		}
		ps.s0[i] = f0
		ps.s1[i] = (fp - fm) / (2 * h)
		ps.s2[i] = (fp - 2*f0 + fm) / (h * h)
	}
	return ps
}

// at evaluates the pseudo-Voigt profile: height x (eta L + (1-eta) G),
// with L and G the unit-height Lorentzian and Gaussian of the same FWHM.
func (b band) at(v float64) float64 {
	x := (v - b.centre) / (b.fwhm / 2)
	lor := 1 / (1 + x*x)
	gau := math.Exp(-math.Ln2 * x * x)
	return b.height * (b.lorentz*lor + (1-b.lorentz)*gau)
}

// concentrations draws one column fraction's labels (g/L): EPA ~10-60,
// DHA ~5-40, DPA ~1-10.
func (g *Generator) concentrations() [3]float64 {
	f := g.rng.Float64() // elution position: drives all three
	s := g.rng.Float64() // selectivity: DHA against DPA
	c := [3]float64{
		10 + 50*f + 2.0*g.rng.NormFloat64(),
		5 + 35*(0.8*f+0.2*s) + 1.5*g.rng.NormFloat64(),
		1 + 9*(0.7*f+0.3*(1-s)) + 0.2*g.rng.NormFloat64(),
	}
	lo := [3]float64{8, 4, 0.5}
	hi := [3]float64{62, 42, 11}
	for k := range c {
		c[k] = math.Min(math.Max(c[k], lo[k]), hi[k])
	}
	return c
}

// Next returns the next sample in the seeded sequence.
func (g *Generator) Next() Sample {
	return g.sample(0)
}

// Anomalous returns the next sample of the sequence made out of domain by
// the given anomaly; its labels are those of the underlying mixture.
func (g *Generator) Anomalous(kind Anomaly) Sample {
	return g.sample(kind)
}

func (g *Generator) sample(kind Anomaly) Sample {
	g.next++
	out := Sample{ScanID: fmt.Sprintf("SYN-%d-%06d", g.cfg.Seed, g.next), Conc: g.concentrations()}
	var amount [numComponents]float64
	for k := 0; k < 3; k++ {
		amount[k] = out.Conc[k] / molarMass[k] // mol/L
	}
	ethanol := 0.80 + 0.15*g.rng.Float64() // volume fraction of the mobile phase
	amount[compEthanol] = ethanol
	amount[compHexane] = 0.97 - ethanol
	if kind == Contaminant {
		amount[compToluene] = 0.10 + 0.10*g.rng.Float64()
	}
	laser := (1 + g.cfg.LaserDrift*g.rng.NormFloat64()) * g.cfg.Faults.LaserPower // laser power / focus drift
	shift := g.cfg.JitterCm * g.rng.NormFloat64()

	// Fluorescence: a0 + a1 x + a2 x^2 + a3 x^3 on x in [-1, 1], plus a
	// decaying exponential from the red end, all positive-leaning.
	a0 := 2500 + 4000*g.rng.Float64()
	a1 := -1500 + 1000*g.rng.NormFloat64()
	a2 := 800 * g.rng.NormFloat64()
	a3 := 300 * g.rng.NormFloat64()
	expAmp := 2500 * g.rng.Float64()
	expLen := 300 + 900*g.rng.Float64()
	baseScale := g.cfg.Faults.FluorescenceScale
	if kind == HeavyBaseline {
		baseScale *= 8
	}
	exposure := 1.0
	if kind == Saturated {
		exposure = 6
	}

	out.Intensities = make([]float64, len(g.axis))
	for i, v := range g.axis {
		raman := 0.0
		for c := range amount {
			if amount[c] == 0 {
				continue
			}
			ps := &g.pure[c]
			raman += amount[c] * (ps.s0[i] - shift*ps.s1[i] + 0.5*shift*shift*ps.s2[i])
		}
		x := g.scaled[i]
		base := a0 + x*(a1+x*(a2+x*a3)) + expAmp*math.Exp(-(v-g.axis[0])/expLen)
		base = math.Max(base, 200) * baseScale
		counts := exposure * (laser*raman + base)
		// The spectrum is the mean of `accumulations` exposures. Shot
		// noise of one exposure is Poisson with mean "counts"
		// (approximated by a Gaussian of variance counts) plus 6 counts
		// rms read noise; averaging divides the variance.
		noise := (math.Sqrt(math.Max(counts, 0))*g.rng.NormFloat64() + 6*g.rng.NormFloat64()) / math.Sqrt(accumulations)
		val := counts + g.cfg.NoiseScale*noise
		if kind == Saturated {
			val = math.Min(val, 65535)
		}
		out.Intensities[i] = val
	}
	out.Spikes = g.addSpikes(out.Intensities)
	return out
}

// addSpikes injects the cosmic-ray spikes of Faults.SpikeFraction into x
// and returns the number of points changed. It draws from the fault
// stream only, and the same number of draws for every spectrum, so that
// the spikes of one spectrum do not depend on the others' faults.
func (g *Generator) addSpikes(x []float64) int {
	r := g.faults
	hit := r.Float64() < g.cfg.Faults.SpikeFraction
	count := 1 + r.IntN(3)
	changed := 0
	for s := 0; s < 3; s++ {
		pos := r.IntN(len(x) - 1)
		height := SpikeMinCounts * math.Pow(SpikeMaxCounts/SpikeMinCounts, r.Float64())
		wide := r.IntN(2) == 1
		second := 0.2 + 0.4*r.Float64()
		if !hit || s >= count {
			continue
		}
		x[pos] += height
		changed++
		if wide {
			x[pos+1] += second * height
			changed++
		}
	}
	return changed
}

// Dataset draws n samples into a trainer.Dataset (EPA, DHA, DPA labels).
func (g *Generator) Dataset(n int) *trainer.Dataset {
	ds := trainer.NewDataset(len(g.axis), 3)
	for i := 0; i < n; i++ {
		s := g.Next()
		ds.AppendRow(s.ScanID, s.Intensities, s.Conc[:])
	}
	return ds
}

// WriteCSV streams n samples in the contract's training-CSV format
// (header scan_id, wn_0..wn_2047, EPA_g_per_L, DHA_g_per_L, DPA_g_per_L)
// to w. Intensities carry 3 decimals and labels 4, so the file reads back
// to within 5e-4 counts and 5e-5 g/L.
func (g *Generator) WriteCSV(ctx context.Context, w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	header := csvdata.Header(len(g.axis))
	for i, h := range header {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(h)
	}
	bw.WriteByte('\n')
	num := make([]byte, 0, 32)
	for r := 0; r < n; r++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := g.Next()
		bw.WriteString(s.ScanID)
		for _, v := range s.Intensities {
			bw.WriteByte(',')
			bw.Write(strconv.AppendFloat(num[:0], v, 'f', 3, 64))
		}
		for _, c := range s.Conc {
			bw.WriteByte(',')
			bw.Write(strconv.AppendFloat(num[:0], c, 'f', 4, 64))
		}
		if err := bw.WriteByte('\n'); err != nil {
			return fmt.Errorf("synth: write CSV: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("synth: write CSV: %w", err)
	}
	return nil
}
