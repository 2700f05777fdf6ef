package shadow_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/shadow"
	"ramanserve/inference"
	"ramanserve/inference/preprocess"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// Two trained parameter sets, built once: a raw full-axis model and a model
// with a preprocessing recipe (its Predict copies the spectrum and runs a
// pipeline with pooled scratch, the other path through PLSModel.Predict).
var (
	trainOnce              sync.Once
	rawParams, recipeParam *inference.PLSParams
	trainErr               error
)

func params(t testing.TB) (raw, recipe *inference.PLSParams) {
	t.Helper()
	trainOnce.Do(func() {
		ds := synth.New(synth.Config{Seed: 11}).Dataset(120)
		res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1, MaxComponents: 12}, nil)
		if err != nil {
			trainErr = err
			return
		}
		res.Params.Meta.Version = "raw-1"
		rawParams = res.Params

		recipe := preprocess.Recipe{
			{Kind: preprocess.Savgol, Window: 15, PolyOrder: 2, Deriv: 1},
			{Kind: preprocess.SNV},
		}
		axis := synth.Axis()
		pl, err := preprocess.Compile(recipe, axis)
		if err != nil {
			trainErr = err
			return
		}
		ws := pl.NewWorkspace()
		g := synth.New(synth.Config{Seed: 12})
		ds = trainer.NewDataset(len(axis), 3)
		for range 120 {
			s := g.Next()
			x := slices.Clone(s.Intensities)
			if _, err := pl.Apply(x, ws); err != nil {
				trainErr = err
				return
			}
			ds.AppendRow(s.ScanID, x, s.Conc[:])
		}
		res, err = trainer.Train(context.Background(), ds, trainer.Options{Seed: 1, MaxComponents: 10}, nil)
		if err != nil {
			trainErr = err
			return
		}
		res.Params.Meta.Version = "recipe-1"
		res.Params.Preprocessing = recipe
		recipeParam = res.Params
	})
	if trainErr != nil {
		t.Fatal(trainErr)
	}
	return rawParams, recipeParam
}

// newModel builds a model from p with opts.
func newModel(t testing.TB, p *inference.PLSParams, opts inference.ModelOptions) *inference.PLSModel {
	t.Helper()
	m, err := inference.NewPLSModel(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// models returns the raw model (the active one in most tests) and the
// recipe model (the shadow).
func models(t testing.TB) (active, candidate *inference.PLSModel) {
	raw, recipe := params(t)
	return newModel(t, raw, inference.ModelOptions{}), newModel(t, recipe, inference.ModelOptions{})
}

// spectra returns n synthetic spectra on the model axis, a few of them with
// acquisition faults so that the diagnostics vary.
func spectra(n int, seed uint64) []inference.Spectrum {
	g := synth.New(synth.Config{Seed: seed, Faults: synth.Faults{SpikeFraction: 0.1}})
	axis := synth.Axis()
	out := make([]inference.Spectrum, n)
	for i := range out {
		out[i] = inference.Spectrum{Wavenumbers: axis, Intensities: g.Next().Intensities}
	}
	return out
}

// predict is the active path: the model's own Predict.
func predict(t testing.TB, m inference.Model, s *inference.Spectrum) inference.Prediction {
	t.Helper()
	var p inference.Prediction
	if err := m.Predict(s, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// bits is the exact binary image of a prediction: two predictions are
// bit-identical when their images are equal (NaN and -0 included).
func bits(p *inference.Prediction) []byte {
	b, err := binary.Append(nil, binary.LittleEndian, p)
	if err != nil {
		panic(err)
	}
	return b
}

func identical(a, b *inference.Prediction) bool { return bytes.Equal(bits(a), bits(b)) }

// id makes the prediction id of spectrum i.
func id(i int) shadow.PredictionID {
	var p shadow.PredictionID
	binary.BigEndian.PutUint64(p[8:], uint64(i))
	return p
}

func index(p shadow.PredictionID) int { return int(binary.BigEndian.Uint64(p[8:])) }

// collector is a Sink that keeps a copy of every result.
type collector struct {
	mu      sync.Mutex
	results []shadow.Result
}

func (c *collector) RecordShadow(_ context.Context, r *shadow.Result) {
	c.mu.Lock()
	c.results = append(c.results, *r)
	c.mu.Unlock()
}

func (c *collector) all() []shadow.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.results)
}

// gate is a Sink that holds the worker in RecordShadow until released
// (or its context ends), to fill the queue; entered receives once per call.
type gate struct {
	collector
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// newGate returns a closed gate; it opens at the end of the test at the
// latest, so that a failed test does not leave its worker behind.
func newGate(t testing.TB) *gate {
	g := &gate{entered: make(chan struct{}, 1024), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

// open lets the worker through, now and from now on.
func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) RecordShadow(ctx context.Context, r *shadow.Result) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.collector.RecordShadow(ctx, r)
}

// waitEntered waits until the worker is inside the gate's RecordShadow.
func (g *gate) waitEntered(t testing.TB) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(time.Minute): // generous: a machine busy with other tests
		t.Fatal("the worker never reached the sink")
	}
}

// closeScorer closes s and checks that its worker is gone.
func closeScorer(t testing.TB, s *shadow.Scorer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitNoWorker(t)
}

// waitNoWorker fails unless every Scorer's worker goroutine has returned
// (within a generous bound: it returns as soon as the sink does).
func waitNoWorker(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if !bytes.Contains(buf[:n], []byte("shadow.(*Scorer).run")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a shadow worker is still running:\n%s", buf[:n])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
