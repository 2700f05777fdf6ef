package metrics

import (
	"testing"
	"time"

	"ramanserve/platform/cputime"
	"ramanserve/server/codec"
)

// BenchmarkRecordPredict is what metrics add to one successful predict:
// the request counted by type and code, its latency histogram, reduced
// T2 and Q, three confidences, the domain check (goal: at most 1 us, no
// allocation).
func BenchmarkRecordPredict(b *testing.B) {
	r := New(Sources{}).Channel()
	p := prediction(0.4, 1.2)
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		r.Predicted(p)
		r.Answered(codec.TypePredict, "", 35*time.Microsecond)
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkRecordPredictParallel is BenchmarkRecordPredict from every
// core at once: prediction connections record into the same series, so
// this includes what sharing their cache lines costs.
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

// BenchmarkRecordHTTPRequest is what metrics add to one management
// request.
func BenchmarkRecordHTTPRequest(b *testing.B) {
	r := New(Sources{}).HTTP()
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		r.Request("/model/{version}", "GET", 200, 3*time.Millisecond)
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
}
