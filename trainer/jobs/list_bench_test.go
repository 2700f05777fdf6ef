package jobs_test

import (
	"testing"

	"ramanserve/trainer/jobs"
)

// BenchmarkListPage: one page of 50 from the middle of 20,000 job
// records (the cost of GET /training is one pass over the jobs).
func BenchmarkListPage(b *testing.B) {
	dir := b.TempDir()
	writeRecords(b, dir, 20000)
	m, err := start(dir, jobs.Options{Publish: (&publisher{}).publish})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(b.Context())
	first, err := m.List("", 200, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p, err := m.List("", 50, first.Next); err != nil || len(p.Jobs) != 50 {
			b.Fatal(err)
		}
	}
}
