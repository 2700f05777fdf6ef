package predlog

import "testing"

// BenchmarkRecordAccept is the hot path when the queue has room: Record
// into the real queue, emptied between rounds with the timer stopped, so
// every call is accepted and the database work (BenchmarkRecordWithWriter)
// is left out. It shows what a predict pays: no allocation, no wait.
func BenchmarkRecordAccept(b *testing.B) {
	const round = 4096
	l := &Writer{queue: make(chan *Record, round)}
	rec := &Record{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%round == 0 && i > 0 {
			b.StopTimer()
			for range len(l.queue) {
				<-l.queue
			}
			b.StartTimer()
		}
		l.Record(rec)
	}
	b.StopTimer()
	if l.Dropped() != 0 {
		b.Fatalf("%d records dropped", l.Dropped())
	}
}
