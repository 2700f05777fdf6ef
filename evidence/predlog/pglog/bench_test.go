package pglog_test

import (
	"context"
	"math"
	"testing"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/platform/pgtest"
)

// BenchmarkAppend appends batches of 1024 records, the writer's default
// BatchMax, without spectra and with a 2048-point spectrum each (all on
// one axis, as from one rig), and reports records/s.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name   string
		points int
	}{{"no spectra", 0}, {"spectra 2048", 2048}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, pgtest.Open(b, newDatabase(b)), "bench")
			batch := benchBatch(predlog.DefaultBatchMax, c.points)
			b.ResetTimer()
			for b.Loop() {
				if err := s.Append(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "records/s")
			b.StopTimer()
			if size, err := s.Size(ctx); err == nil {
				b.ReportMetric(float64(size.Bytes)/float64(b.N*len(batch)), "bytes/record")
			}
		})
	}
}

// benchBatch is n records, each with a spectrum of points (none for 0)
// shaped like a Raman scan: a smooth baseline and peaks under noise.
func benchBatch(n, points int) []*predlog.Record {
	var axis []float32
	if points > 0 {
		axis = make([]float32, points)
		for k := range axis {
			axis[k] = 200 + float32(k)*0.8
		}
	}
	recs := make([]*predlog.Record, n)
	for i := range recs {
		rec := predlogtest.Record(i, "B", false)
		if points > 0 {
			rec.Spectrum, rec.Wavenumbers = make([]float32, points), axis
			for k := range rec.Spectrum {
				peak := 4000 * math.Exp(-math.Pow(float64(k-700)/15, 2))
				noise := float64((i*7919+k*104729)%1000) / 50
				rec.Spectrum[k] = float32(1500 + 0.2*float64(k) + peak + noise)
			}
		}
		recs[i] = rec
	}
	return recs
}
