package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/evidence/predlog/sqlitelog"
)

// BenchmarkGetBatch100k: GET /batches/{batch_id} over real HTTP from a
// server whose prediction log holds 100,000 predictions: 90 batches of
// 1,000 spectra and one of 10,000 (the trajectory's bound), one after
// the other as a plant runs them. Sub-benchmarks read a batch of 1,000,
// the batch of 10,000, its page against three reference batches, and the
// first page of GET /batches (100 batches).
func BenchmarkGetBatch100k(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "registry")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	store, err := sqlitelog.Open(ctx, dir, sqlitelog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	appendBatch := func(id string, n int) {
		for start := 0; start < n; start += 1000 {
			recs := make([]*predlog.Record, 0, 1000)
			for range min(1000, n-start) {
				recs = append(recs, predlogtest.Record(i, id, false))
				i++
			}
			if err := store.Append(ctx, recs); err != nil {
				b.Fatal(err)
			}
		}
	}
	for k := range 90 {
		appendBatch(fmt.Sprintf("B-%03d", k), 1000)
	}
	appendBatch("BIG", 10_000)
	if err := store.Close(ctx); err != nil {
		b.Fatal(err)
	}
	app, err := Start(ctx, Config{HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	base := "http://" + app.HTTPAddr()
	get := func(b *testing.B, path string) int64 {
		resp, err := http.Get(base + path)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return n
	}
	for _, id := range []string{"B-001", "B-002", "B-003"} {
		req, _ := http.NewRequest(http.MethodPut, base+"/batches/"+id+"/reference", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("PUT reference: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	for _, c := range []struct{ name, path string }{
		{"batch=1000", "/batches/B-050"},
		{"batch=10000", "/batches/BIG"},
		{"report=1000", "/batches/B-050/report"},
		{"list", "/batches"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var bytes int64
			for b.Loop() {
				bytes = get(b, c.path)
			}
			b.ReportMetric(float64(bytes), "bytes/response")
		})
	}
}
