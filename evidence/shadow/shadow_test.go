package shadow_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ramanserve/evidence/shadow"
	"ramanserve/inference"
)

// offerAll answers every spectrum with active and offers it, waiting for
// room when the queue is full (the tests want every spectrum scored; the
// hot path never waits). It returns the active predictions.
func offerAll(t *testing.T, s *shadow.Scorer, active inference.Model, specs []inference.Spectrum, first int) []inference.Prediction {
	t.Helper()
	preds := make([]inference.Prediction, len(specs))
	at := time.Unix(1_700_000_000, 0)
	for i := range specs {
		preds[i] = predict(t, active, &specs[i])
		deadline := time.Now().Add(10 * time.Second)
		for !s.Offer(id(first+i), at.Add(time.Duration(i)*time.Millisecond), active, &specs[i], &preds[i], nil) {
			if time.Now().After(deadline) {
				t.Fatalf("spectrum %d never queued", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return preds
}

// TestShadowParity is the domain half of the "shadow parity": the
// prediction the scorer records for the shadow is bit-identical to what
// the same model returns through its own Predict, as it would once
// promoted. Both the raw model (direct centring) and the recipe model
// (copied spectrum, pooled pipeline scratch) are checked, as shadow of the
// other and as shadow of themselves.
func TestShadowParity(t *testing.T) {
	raw, recipe := models(t)
	specs := spectra(200, 31)
	for _, tc := range []struct {
		name           string
		active, shadow *inference.PLSModel
	}{
		{"recipe shadows raw", raw, recipe},
		{"raw shadows recipe", recipe, raw},
		{"raw shadows itself", raw, raw},
		{"recipe shadows itself", recipe, recipe},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &collector{}
			s := shadow.New(shadow.Options{Sink: sink})
			if err := s.Set(tc.shadow); err != nil {
				t.Fatal(err)
			}
			activePreds := offerAll(t, s, tc.active, specs, 0)
			closeScorer(t, s)

			results := sink.all()
			if len(results) != len(specs) {
				t.Fatalf("%d results for %d spectra", len(results), len(specs))
			}
			for k, r := range results {
				i := index(r.PredictionID)
				if i != k {
					t.Fatalf("result %d is spectrum %d: the worker must keep the order", k, i)
				}
				promoted := predict(t, tc.shadow, &specs[i])
				if !identical(&r.Shadow, &promoted) {
					t.Fatalf("spectrum %d: shadow recorded %+v, the model as active returns %+v", i, r.Shadow, promoted)
				}
				if !identical(&r.Active, &activePreds[i]) {
					t.Fatalf("spectrum %d: active recorded %+v, offered %+v", i, r.Active, activePreds[i])
				}
				if r.ShadowVersion != tc.shadow.Metadata().Version || r.ActiveVersion != tc.active.Metadata().Version {
					t.Fatalf("versions %q/%q", r.ShadowVersion, r.ActiveVersion)
				}
				if want := time.Unix(1_700_000_000, 0).Add(time.Duration(i) * time.Millisecond); !r.Time.Equal(want) {
					t.Fatalf("time %v, want %v", r.Time, want)
				}
			}
			if tc.active == tc.shadow {
				c := s.Status().Comparison
				for a, ac := range c.Analytes {
					if ac.N != int64(len(specs)) || ac.MeanDifference != 0 || ac.RMSD != 0 || ac.DisagreeShare != 0 {
						t.Fatalf("%v: a model against itself: %+v", inference.Analyte(a), ac)
					}
				}
			}
		})
	}
}

// TestComparisonMatchesTwoPass checks the running statistics against a
// direct two-pass computation over the recorded predictions, with a
// tolerance from the active model's options small enough that some
// spectra disagree and some do not.
func TestComparisonMatchesTwoPass(t *testing.T) {
	rawP, _ := params(t)
	_, recipe := models(t)
	var tol inference.Breakdown
	tol.Set(inference.EPA, 0.3)
	tol.Set(inference.DHA, 0.2)
	tol.Set(inference.DPA, 0.1)
	active := newModel(t, rawP, inference.ModelOptions{Tolerance: tol})

	sink := &collector{}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	// A queue longer than the spectra: none is dropped.
	s := shadow.New(shadow.Options{Sink: sink, QueueSize: 1024, Now: func() time.Time { return now }})
	defer closeScorer(t, s)
	if st := s.Status(); st.Version != "" || st.Comparison.N != 0 {
		t.Fatalf("status before Set: %+v", st)
	}
	if err := s.Set(recipe); err != nil {
		t.Fatal(err)
	}
	specs := spectra(400, 32)
	offerAll(t, s, active, specs, 0)
	waitScored(t, s, len(specs))

	st := s.Status()
	if st.Version != "recipe-1" || !st.Since.Equal(now) {
		t.Fatalf("status names %q since %v", st.Version, st.Since)
	}
	c := st.Comparison
	if c.N != int64(len(specs)) || c.Dropped != 0 || c.Failed != 0 {
		t.Fatalf("comparison counts %+v", c)
	}
	results := sink.all()
	someAgree, someDisagree := false, false
	for a := range inference.NumAnalytes {
		// Two passes: the mean, then the squares.
		n := float64(len(results))
		var sum float64
		for _, r := range results {
			sum += r.Shadow.Concentrations.Value[a] - r.Active.Concentrations.Value[a]
		}
		mean := sum / n
		var sq float64
		var disagree int
		for _, r := range results {
			d := r.Shadow.Concentrations.Value[a] - r.Active.Concentrations.Value[a]
			sq += d * d
			if math.Abs(d) > tol.Value[a] {
				disagree++
			}
		}
		rmsd := math.Sqrt(sq / n)
		share := float64(disagree) / n
		got := c.Analytes[a]
		if got.N != int64(len(results)) || got.Tolerance != tol.Value[a] {
			t.Fatalf("%v: n %d tolerance %v", inference.Analyte(a), got.N, got.Tolerance)
		}
		if !close12(got.MeanDifference, mean) || !close12(got.RMSD, rmsd) || got.DisagreeShare != share {
			t.Fatalf("%v: running mean %v rmsd %v share %v; two-pass %v %v %v",
				inference.Analyte(a), got.MeanDifference, got.RMSD, got.DisagreeShare, mean, rmsd, share)
		}
		someAgree = someAgree || disagree < len(results)
		someDisagree = someDisagree || disagree > 0
		t.Logf("%v: mean %.4f rmsd %.4f disagree %.3f (tol %v)", inference.Analyte(a), mean, rmsd, share, tol.Value[a])
	}
	if !someAgree || !someDisagree {
		t.Fatal("the test needs spectra on both sides of the tolerance")
	}
}

// close12 compares to 1e-12, relative to the magnitude (absolute below 1).
func close12(got, want float64) bool {
	return math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want))
}

// TestLargeOffset: a shadow far from the active model (its intercepts
// shifted by 1e6 g/L, so every spectrum disagrees and the differences are
// a large offset with a rounding-sized spread) is still summarised as the
// two-pass computation does.
func TestLargeOffset(t *testing.T) {
	rawP, _ := params(t)
	active := newModel(t, rawP, inference.ModelOptions{})
	shifted := *rawP
	shifted.Meta.Version = "shifted-1"
	shifted.Intercept = make([]float64, len(rawP.Intercept))
	for i, v := range rawP.Intercept {
		shifted.Intercept[i] = v + 1e6
	}
	candidate := newModel(t, &shifted, inference.ModelOptions{})

	sink := &collector{}
	s := shadow.New(shadow.Options{Sink: sink})
	defer closeScorer(t, s)
	if err := s.Set(candidate); err != nil {
		t.Fatal(err)
	}
	specs := spectra(300, 33)
	offerAll(t, s, active, specs, 0)
	waitScored(t, s, len(specs))
	results := sink.all()
	c := s.Status().Comparison
	for a := range inference.NumAnalytes {
		n := float64(len(results))
		var sum float64
		for _, r := range results {
			sum += r.Shadow.Concentrations.Value[a] - r.Active.Concentrations.Value[a]
		}
		mean := sum / n
		var sq float64
		for _, r := range results {
			d := r.Shadow.Concentrations.Value[a] - r.Active.Concentrations.Value[a]
			sq += d * d
		}
		got := c.Analytes[a]
		if !close12(got.MeanDifference, mean) || !close12(got.RMSD, math.Sqrt(sq/n)) || got.DisagreeShare != 1 {
			t.Fatalf("%v: running %v %v %v, two-pass %v %v", inference.Analyte(a), got.MeanDifference, got.RMSD, got.DisagreeShare, mean, math.Sqrt(sq/n))
		}
	}
}

// waitScored waits until the scorer's worker has scored n spectra in all.
func waitScored(t *testing.T, s *shadow.Scorer, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.Totals().Scored+s.Totals().Failed < uint64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("scored %+v of %d", s.Totals(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestQueueFullDrops: with the worker held in a slow sink, Offer takes
// exactly QueueSize spectra (the one in the worker's hands included), then
// drops and counts the rest without
// waiting; released, the worker scores every queued one.
func TestQueueFullDrops(t *testing.T) {
	active, candidate := models(t)
	sink := newGate(t)
	const queue = 4
	s := shadow.New(shadow.Options{Sink: sink, QueueSize: queue})
	if err := s.Set(candidate); err != nil {
		t.Fatal(err)
	}
	specs := spectra(20, 34)
	preds := make([]inference.Prediction, len(specs))
	for i := range specs {
		preds[i] = predict(t, active, &specs[i])
	}
	at := time.Now()
	if !s.Offer(id(0), at, active, &specs[0], &preds[0], nil) {
		t.Fatal("the first spectrum was not queued")
	}
	sink.waitEntered(t) // the worker holds spectrum 0 and waits in the sink

	accepted := 1
	for i := 1; i < len(specs); i++ {
		began := time.Now()
		ok := s.Offer(id(i), at, active, &specs[i], &preds[i], nil)
		// The worker waits in the sink until the test lets it go: an
		// Offer that waited for room would wait for good.
		if took := time.Since(began); took > 10*time.Second {
			t.Fatalf("Offer waited %v with the queue full", took)
		}
		if ok != (i < queue) {
			t.Fatalf("spectrum %d: queued %v with %d queued before", i, ok, accepted-1)
		}
		if ok {
			accepted++
		}
	}
	wantDropped := int64(len(specs) - accepted)
	if c := s.Status().Comparison; c.Dropped != wantDropped {
		t.Fatalf("dropped %d, want %d", c.Dropped, wantDropped)
	}
	if tot := s.Totals(); tot.Dropped != uint64(wantDropped) || tot.Queued != queue-1 || tot.QueueCap != queue {
		t.Fatalf("totals %+v", tot)
	}

	sink.open()
	closeScorer(t, s)
	results := sink.all()
	if len(results) != accepted {
		t.Fatalf("%d recorded, %d queued", len(results), accepted)
	}
	for k, r := range results {
		if index(r.PredictionID) != k {
			t.Fatalf("result %d is spectrum %d", k, index(r.PredictionID))
		}
	}
	if c := s.Status().Comparison; c.N != int64(accepted) || c.Dropped != wantDropped {
		t.Fatalf("after the drain: %+v", c)
	}
}

// TestSetResetsAndQueuedSpectraKeepTheirModel: a Set while spectra wait
// starts the comparison from zero; the waiting spectra are scored by the
// model they were offered under (and recorded with its version), the
// later ones by the new shadow.
func TestSetResetsAndQueuedSpectraKeepTheirModel(t *testing.T) {
	active, candidate := models(t)
	sink := newGate(t)
	s := shadow.New(shadow.Options{Sink: sink, QueueSize: 16})
	if err := s.Set(candidate); err != nil {
		t.Fatal(err)
	}
	specs := spectra(10, 35)
	preds := make([]inference.Prediction, len(specs))
	for i := range specs {
		preds[i] = predict(t, active, &specs[i])
	}
	for i := range 5 {
		if !s.Offer(id(i), time.Now(), active, &specs[i], &preds[i], nil) {
			t.Fatalf("spectrum %d not queued", i)
		}
	}
	sink.waitEntered(t)
	if err := s.Set(active); err != nil { // the active model shadows itself
		t.Fatal(err)
	}
	if st := s.Status(); st.Version != "raw-1" || st.Comparison.N != 0 || st.Comparison.Dropped != 0 {
		t.Fatalf("after Set: %+v", st)
	}
	for i := 5; i < len(specs); i++ {
		if !s.Offer(id(i), time.Now(), active, &specs[i], &preds[i], nil) {
			t.Fatalf("spectrum %d not queued", i)
		}
	}
	sink.open()
	closeScorer(t, s)

	results := sink.all()
	if len(results) != len(specs) {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		i := index(r.PredictionID)
		want, m := "recipe-1", inference.Model(candidate)
		if i >= 5 {
			want, m = "raw-1", active
		}
		promoted := predict(t, m, &specs[i])
		if r.ShadowVersion != want || !identical(&r.Shadow, &promoted) {
			t.Fatalf("spectrum %d scored by %q, want %q (or not as that model predicts)", i, r.ShadowVersion, want)
		}
	}
	c := s.Status().Comparison
	if c.N != 5 || c.Analytes[inference.EPA].N != 5 || c.Analytes[inference.EPA].RMSD != 0 {
		t.Fatalf("the new shadow's comparison counts the old one's spectra: %+v", c)
	}
}

// TestClear: after Clear nothing is offered or counted, and Status is the
// zero value.
func TestClear(t *testing.T) {
	active, candidate := models(t)
	sink := &collector{}
	s := shadow.New(shadow.Options{Sink: sink})
	defer closeScorer(t, s)
	specs := spectra(1, 36)
	p := predict(t, active, &specs[0])
	if s.Offer(id(0), time.Now(), active, &specs[0], &p, nil) {
		t.Fatal("queued without a shadow")
	}
	if err := s.Set(candidate); err != nil {
		t.Fatal(err)
	}
	s.Clear()
	s.Clear() // idempotent
	if s.Offer(id(0), time.Now(), active, &specs[0], &p, nil) {
		t.Fatal("queued after Clear")
	}
	if st := s.Status(); st != (shadow.Status{}) {
		t.Fatalf("status after Clear: %+v", st)
	}
	if tot := s.Totals(); tot.Dropped != 0 || tot.Scored != 0 {
		t.Fatalf("totals %+v", tot)
	}
	if err := s.Set(nil); !errors.Is(err, shadow.ErrNoModel) {
		t.Fatalf("Set(nil): %v", err)
	}
}

// TestShadowThatRefuses: a shadow that refuses the spectra (here it takes
// them as saturated) fails them, counted apart from N, with nothing
// recorded.
func TestShadowThatRefuses(t *testing.T) {
	rawP, _ := params(t)
	active := newModel(t, rawP, inference.ModelOptions{})
	strict := newModel(t, rawP, inference.ModelOptions{SaturationLevel: 1, SaturationRun: 1})
	sink := &collector{}
	s := shadow.New(shadow.Options{Sink: sink})
	if err := s.Set(strict); err != nil {
		t.Fatal(err)
	}
	specs := spectra(5, 37)
	offerAll(t, s, active, specs, 0)
	closeScorer(t, s)
	c := s.Status().Comparison
	if c.N != 0 || c.Failed != int64(len(specs)) || len(sink.all()) != 0 {
		t.Fatalf("comparison %+v, %d recorded", c, len(sink.all()))
	}
	if tot := s.Totals(); tot.Failed != uint64(len(specs)) || tot.Scored != 0 {
		t.Fatalf("totals %+v", tot)
	}
}

// TestTooLongSpectrumIsDropped: the copy is bounded by MaxPoints.
func TestTooLongSpectrumIsDropped(t *testing.T) {
	active, candidate := models(t)
	s := shadow.New(shadow.Options{MaxPoints: 1000})
	defer closeScorer(t, s)
	if err := s.Set(candidate); err != nil {
		t.Fatal(err)
	}
	specs := spectra(1, 38)
	p := predict(t, active, &specs[0])
	if s.Offer(id(0), time.Now(), active, &specs[0], &p, nil) {
		t.Fatal("a 2048-point spectrum was queued with MaxPoints 1000")
	}
	if c := s.Status().Comparison; c.Dropped != 1 {
		t.Fatalf("dropped %d", c.Dropped)
	}
}

// TestCloseDrainsAndRefuses: Close scores what is queued, then Offer
// refuses without counting a drop, and a second Close returns at once.
func TestCloseDrainsAndRefuses(t *testing.T) {
	active, candidate := models(t)
	sink := newGate(t)
	s := shadow.New(shadow.Options{Sink: sink, QueueSize: 8})
	if err := s.Set(candidate); err != nil {
		t.Fatal(err)
	}
	specs := spectra(8, 39)
	preds := make([]inference.Prediction, len(specs))
	for i := range specs {
		preds[i] = predict(t, active, &specs[i])
		if !s.Offer(id(i), time.Now(), active, &specs[i], &preds[i], nil) {
			t.Fatalf("spectrum %d not queued", i)
		}
		if i == 0 {
			sink.waitEntered(t)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with the sink still holding the worker", err)
	case <-time.After(20 * time.Millisecond):
	}
	if s.Offer(id(99), time.Now(), active, &specs[0], &preds[0], nil) {
		t.Fatal("queued while closing")
	}
	sink.open()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	waitNoWorker(t)
	if n := len(sink.all()); n != len(specs) {
		t.Fatalf("%d of %d queued spectra scored by Close", n, len(specs))
	}
	if s.Offer(id(100), time.Now(), active, &specs[0], &preds[0], nil) {
		t.Fatal("queued after Close")
	}
	if tot := s.Totals(); tot.Dropped != 0 {
		t.Fatalf("closing counted as dropping: %+v", tot)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCloseGivesUp: when ctx ends before the queue drains, Close returns
// its error, the sink's context ends, the rest is dropped and counted, and
// the worker does not leak.
func TestCloseGivesUp(t *testing.T) {
	active, candidate := models(t)
	sink := newGate(t) // never released: only the context frees the worker
	s := shadow.New(shadow.Options{Sink: sink, QueueSize: 8})
	if err := s.Set(candidate); err != nil {
		t.Fatal(err)
	}
	specs := spectra(6, 40)
	offerAll(t, s, active, specs[:1], 0)
	sink.waitEntered(t)
	offerAll(t, s, active, specs[1:], 1)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v", err)
	}
	waitNoWorker(t)
	if c := s.Status().Comparison; c.Dropped != int64(len(specs)-1) || c.N != 1 {
		t.Fatalf("after giving up: %+v", c)
	}
}

// TestConcurrentSetClearWhileScoring: clients offer while the shadow is
// set, replaced and cleared and Status is read, all at once (run with
// -race). Every record must still be exactly what the model it names
// predicts, and the counters must add up.
func TestConcurrentSetClearWhileScoring(t *testing.T) {
	active, candidate := models(t)
	byVersion := map[string]inference.Model{"raw-1": active, "recipe-1": candidate}
	sink := &collector{}
	s := shadow.New(shadow.Options{Sink: sink, QueueSize: 8})
	specs := spectra(16, 41)
	preds := make([]inference.Prediction, len(specs))
	for i := range specs {
		preds[i] = predict(t, active, &specs[i])
	}

	var stop atomic.Bool
	var offered, queued atomic.Int64
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for k := c; !stop.Load(); k += 4 {
				i := k % len(specs)
				offered.Add(1)
				if s.Offer(id(k), time.Now(), active, &specs[i], &preds[i], nil) {
					queued.Add(1)
				}
				if k%32 == c {
					// Leave the worker some of the two cores.
					time.Sleep(20 * time.Microsecond)
				}
			}
		})
	}
	wg.Go(func() {
		for k := 0; !stop.Load(); k++ {
			switch k % 3 {
			case 0:
				_ = s.Set(candidate)
			case 1:
				_ = s.Set(active)
			case 2:
				s.Clear()
			}
			time.Sleep(200 * time.Microsecond)
		}
	})
	wg.Go(func() {
		for !stop.Load() {
			st := s.Status()
			c := st.Comparison
			for _, a := range c.Analytes {
				if a.N > c.N || a.DisagreeShare < 0 || a.DisagreeShare > 1 || a.RMSD < 0 {
					t.Errorf("inconsistent snapshot %+v", st)
				}
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for s.Totals().Scored < 200 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	closeScorer(t, s)

	tot := s.Totals()
	results := sink.all()
	if tot.Scored < 200 || uint64(len(results)) != tot.Scored || tot.Failed != 0 {
		t.Fatalf("totals %+v, %d recorded", tot, len(results))
	}
	if uint64(queued.Load()) != tot.Scored {
		t.Fatalf("%d queued, %d scored: Close must score every queued spectrum", queued.Load(), tot.Scored)
	}
	for _, r := range results {
		i := index(r.PredictionID) % len(specs)
		m := byVersion[r.ShadowVersion]
		if m == nil {
			t.Fatalf("unknown shadow %q", r.ShadowVersion)
		}
		promoted := predict(t, m, &specs[i])
		if !identical(&r.Shadow, &promoted) || !identical(&r.Active, &preds[i]) {
			t.Fatalf("spectrum %d as scored by %q differs from its Predict", i, r.ShadowVersion)
		}
	}
	t.Logf("offered %d, queued %d, dropped %d, scored %d", offered.Load(), queued.Load(), tot.Dropped, tot.Scored)
}

// panicky is a real model that panics on every third spectrum it scores:
// a bug in a model must cost that spectrum, not the worker.
type panicky struct {
	*inference.PLSModel
	calls atomic.Int64
}

func (p *panicky) Predict(s *inference.Spectrum, out *inference.Prediction) error {
	if p.calls.Add(1)%3 == 0 {
		panic("model bug")
	}
	return p.PLSModel.Predict(s, out)
}

// panickySink panics on every second record.
type panickySink struct {
	collector
	calls atomic.Int64
}

func (p *panickySink) RecordShadow(ctx context.Context, r *shadow.Result) {
	if p.calls.Add(1)%2 == 0 {
		panic("sink bug")
	}
	p.collector.RecordShadow(ctx, r)
}

// TestPanicsCostOneSpectrum: a panicking model fails that spectrum, a
// panicking sink loses that record; the worker goes on.
func TestPanicsCostOneSpectrum(t *testing.T) {
	active, candidate := models(t)
	sink := &panickySink{}
	s := shadow.New(shadow.Options{Sink: sink})
	if err := s.Set(&panicky{PLSModel: candidate}); err != nil {
		t.Fatal(err)
	}
	specs := spectra(12, 42)
	offerAll(t, s, active, specs, 0)
	closeScorer(t, s)
	c := s.Status().Comparison
	if c.N != 8 || c.Failed != 4 {
		t.Fatalf("comparison %+v: want 8 scored and 4 failed", c)
	}
	if n := len(sink.all()); n != 4 {
		t.Fatalf("%d recorded, want 4 (every second of the 8 scored)", n)
	}
}
