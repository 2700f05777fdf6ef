package metrics

import (
	"testing"
	"time"

	"ramanserve/server/codec"
)

// BenchmarkRecordPredict is what metrics add to one successful predict:
// the request counted under its type and under predictions, two latency
// histograms, reduced T2 and Q, three confidences, the domain check
// (goal: at most 1 us, no allocation).
func BenchmarkRecordPredict(b *testing.B) {
	r := New(Sources{}).Channel()
	p := prediction(0.4, 1.2)
	b.ReportAllocs()
	for b.Loop() {
		r.Predicted(p)
		r.Answered(codec.TypePredict, "", 35*time.Microsecond)
	}
}

// BenchmarkRecordPredictParallel is BenchmarkRecordPredict from every
// core at once: prediction connections record into the same series.
func BenchmarkRecordPredictParallel(b *testing.B) {
	r := New(Sources{}).Channel()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		p := prediction(0.4, 1.2)
		for pb.Next() {
			r.Predicted(p)
			r.Answered(codec.TypePredict, "", 35*time.Microsecond)
		}
	})
}
