package shadow_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"ramanserve/evidence/shadow"
	"ramanserve/inference"
)

// benchInput is one 2048-point spectrum answered by the active model.
func benchInput(b *testing.B) (active, candidate *inference.PLSModel, spec inference.Spectrum, pred inference.Prediction) {
	active, candidate = models(b)
	spec = spectra(1, 50)[0]
	pred = predict(b, active, &spec)
	return active, candidate, spec, pred
}

// BenchmarkOffer times the hot path's hand-off of a 2048-point spectrum
// in a burst that fills the queue: the copy of the spectrum (both axes)
// and the prediction into a pooled buffer, and the queue send, each into
// another buffer (the worst case for the cache: DefaultQueueSize buffers
// of 32 KiB in turn). The worker's part (taking the buffers back) is
// outside the timer, a queue-full at a time.
func BenchmarkOffer(b *testing.B) {
	active, candidate, spec, pred := benchInput(b)
	s := shadow.NewIdle(shadow.Options{})
	if err := s.Set(candidate); err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	// Warm the buffers: the first use of each grows it to the spectrum.
	for range shadow.DefaultQueueSize {
		s.Offer(id(0), at, active, &spec, &pred, nil)
	}
	for range shadow.DefaultQueueSize {
		s.Discard()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(shadow.DefaultQueueSize, b.N-i)
		for k := range n {
			if !s.Offer(id(i+k), at, active, &spec, &pred, nil) {
				b.Fatal("dropped with room in the queue")
			}
		}
		b.StopTimer()
		for range n {
			s.Discard()
		}
		b.StartTimer()
		i += n
	}
}

// BenchmarkOfferSteady times the hand-off when the worker keeps up (the
// rig's 1,000 predicts/s against a shadow good for tens of thousands): the
// queue is empty at each offer and the same pooled buffer comes back, warm
// in the cache. Each iteration also takes the buffer back (the worker's
// part, tens of nanoseconds), so this is an upper bound.
func BenchmarkOfferSteady(b *testing.B) {
	active, candidate, spec, pred := benchInput(b)
	s := shadow.NewIdle(shadow.Options{})
	if err := s.Set(candidate); err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	s.Offer(id(0), at, active, &spec, &pred, nil)
	s.Discard()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if !s.Offer(id(i), at, active, &spec, &pred, nil) {
			b.Fatal("dropped with an empty queue")
		}
		s.Discard()
	}
}

// BenchmarkOfferParallel is BenchmarkOffer from GOMAXPROCS goroutines at
// once (the prediction channel's sessions), each also taking a buffer
// back: the contention on the free list and the queue.
func BenchmarkOfferParallel(b *testing.B) {
	active, candidate, spec, pred := benchInput(b)
	s := shadow.NewIdle(shadow.Options{})
	if err := s.Set(candidate); err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if s.Offer(id(0), at, active, &spec, &pred, nil) {
				s.Discard()
			}
		}
	})
}

// BenchmarkOfferQueueFull times the hand-off when the shadow is behind:
// the spectrum is dropped and counted.
func BenchmarkOfferQueueFull(b *testing.B) {
	active, candidate, spec, pred := benchInput(b)
	s := shadow.NewIdle(shadow.Options{})
	if err := s.Set(candidate); err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	for s.Offer(id(0), at, active, &spec, &pred, nil) {
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if s.Offer(id(i), at, active, &spec, &pred, nil) {
			b.Fatal("queued with the queue full")
		}
	}
}

// BenchmarkOfferNoShadow times the hand-off with no shadow set: one
// atomic load.
func BenchmarkOfferNoShadow(b *testing.B) {
	active, _, spec, pred := benchInput(b)
	s := shadow.NewIdle(shadow.Options{})
	at := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Offer(id(i), at, active, &spec, &pred, nil)
	}
}

// BenchmarkWorker measures the worker's throughput with the recipe model
// (savgol + snv) as shadow and a sink that keeps nothing: b.N spectra
// offered as fast as the queue takes them, timed until the last is
// scored. predicts/s is the shadow's capacity on this machine.
func BenchmarkWorker(b *testing.B) {
	benchWorker(b, false)
}

// BenchmarkWorkerRaw is BenchmarkWorker with the raw model as shadow.
func BenchmarkWorkerRaw(b *testing.B) {
	benchWorker(b, true)
}

type discardSink struct{}

func (discardSink) RecordShadow(_ context.Context, _ *shadow.Result) {}

func benchWorker(b *testing.B, raw bool) {
	active, candidate, spec, pred := benchInput(b)
	shadowModel := candidate
	if raw {
		shadowModel = active
	}
	s := shadow.New(shadow.Options{Sink: discardSink{}})
	if err := s.Set(shadowModel); err != nil {
		b.Fatal(err)
	}
	at := time.Now()
	offer := func(n int) {
		target := s.Totals().Scored + uint64(n)
		for i := range n {
			for !s.Offer(id(i), at, active, &spec, &pred, nil) {
				runtime.Gosched()
			}
		}
		for s.Totals().Scored < target {
			runtime.Gosched()
		}
	}
	// Warm up: every pooled buffer grown, the model's scratch pooled.
	offer(2 * shadow.DefaultQueueSize)
	if err := s.Set(shadowModel); err != nil { // a fresh comparison
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	began := time.Now()
	offer(b.N)
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "predicts/s")
	b.StopTimer()
	if c := s.Status().Comparison; c.N != int64(b.N) || c.Failed != 0 {
		b.Fatalf("scored %d of %d", c.N, b.N)
	}
	closeScorer(b, s)
}

// BenchmarkOfferAt1000PerSecond offers at the rig's full rate, 1,000
// spectra a second (one every millisecond, the active predict done
// beforehand), to the recipe model as shadow with a sink that copies each
// result, and reports the spectra dropped: the issue wants 0 at this rate.
// Run it with -benchtime 5000x (five seconds).
func BenchmarkOfferAt1000PerSecond(b *testing.B) {
	active, candidate := models(b)
	specs := spectra(64, 51)
	preds := make([]inference.Prediction, len(specs))
	for i := range specs {
		preds[i] = predict(b, active, &specs[i])
	}
	sink := &collector{}
	s := shadow.New(shadow.Options{Sink: sink})
	if err := s.Set(candidate); err != nil {
		b.Fatal(err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		k := i % len(specs)
		s.Offer(id(i), time.Now(), active, &specs[k], &preds[k], nil)
	}
	b.StopTimer()
	closeScorer(b, s)
	c := s.Status().Comparison
	b.ReportMetric(float64(c.Dropped), "dropped")
	b.ReportMetric(float64(c.N), "scored")
	if c.N+c.Dropped != int64(b.N) {
		b.Fatalf("%d scored and %d dropped of %d", c.N, c.Dropped, b.N)
	}
}
