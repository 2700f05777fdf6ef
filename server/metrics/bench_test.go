package metrics

import (
	"syscall"
	"testing"
	"time"

	"ramanserve/server/codec"
)

// cpuTime is the process's user + system CPU time: on a shared machine,
// CPU time per op (cpu-ns/op) leaves out the time other processes held
// the cores, which wall time per op counts.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRecordPredict is what metrics add to one successful predict:
// the request counted by type and code, its latency histogram, reduced
// T2 and Q, three confidences, the domain check (goal: at most 1 us, no
// allocation).
func BenchmarkRecordPredict(b *testing.B) {
	r := New(Sources{}).Channel()
	p := prediction(0.4, 1.2)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		r.Predicted(p)
		r.Answered(codec.TypePredict, "", 35*time.Microsecond)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
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
