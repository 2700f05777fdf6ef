package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"ramanserve/evidence/reconcile"
)

// countingLab is a LabService that matches every record and stores
// nothing, so that a benchmark of a lab post measures the HTTP layer and
// the parsing, not SQLite or the prediction log.
type countingLab struct{ LabService }

func (countingLab) Post(_ context.Context, records []reconcile.LabRecord) (reconcile.PostResult, error) {
	return reconcile.PostResult{Matched: len(records)}, nil
}

// largeLabPostJSON is a JSON lab post of reconcile.MaxRecords records,
// every field present and the ids near their longest, padded with spaces
// to just under reconcile.MaxInputBytes: the largest post the route takes.
func largeLabPostJSON(tb testing.TB) []byte {
	tb.Helper()
	long := strings.Repeat("S", 110)
	var b bytes.Buffer
	b.WriteString("[")
	for i := range reconcile.MaxRecords {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"lab_sample_id":"HPLC-%s-%05d","batch_id":"B-%s-%03d","scan_seq":%d,"sampled_at":"2026-11-23T08:%02d:%02d.123456789Z","EPA":%g,"DHA":%g,"DPA":%g}`,
			long, i, long, i/100, i, (i/60)%60, i%60, 180+float64(i%97)/8, 90+float64(i%89)/16, 20+float64(i%83)/32)
	}
	pad := reconcile.MaxInputBytes - b.Len() - 1
	if pad < 0 {
		tb.Fatalf("the post is %d bytes, over the %d-byte limit", b.Len()+1, reconcile.MaxInputBytes)
	}
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteString("]")
	return b.Bytes()
}

// heapPeak samples the heap's object bytes until stopped and reports the
// highest sample: what the heap reached while a request was served,
// garbage not yet collected included (as the process's memory sees it).
type heapPeak struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{stop: make(chan struct{}), peak: heapObjectBytes()}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			h.peak = max(h.peak, heapObjectBytes())
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// end stops sampling and returns the peak.
func (h *heapPeak) end() uint64 {
	close(h.stop)
	h.done.Wait()
	return max(h.peak, heapObjectBytes())
}

// BenchmarkLabPost4MiB posts the largest JSON lab post through the whole
// management handler (web layer, body limits, request validation, the
// route's parser) to a LabService that stores nothing. B/op is what one
// post allocates; peak-heap-B the most the heap grew above its live size
// before the post while the post was served.
func BenchmarkLabPost4MiB(b *testing.B) {
	body := largeLabPostJSON(b)
	h, err := newHTTPHandler(&API{Lab: countingLab{}}, HTTPConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	var peak uint64
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		base := heapObjectBytes()
		hp := startHeapPeak()
		req := httptest.NewRequest(http.MethodPost, "/lab-results", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		b.StartTimer()
		h.ServeHTTP(rec, req)
		b.StopTimer()
		if top := hp.end(); top > base {
			peak = max(peak, top-base)
		}
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), fmt.Sprintf(`"received":%d`, reconcile.MaxRecords)) {
			b.Fatalf("post: %d %.300s", rec.Code, rec.Body.String())
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak), "peak-heap-B")
}
