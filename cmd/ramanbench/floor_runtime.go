package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// runtimeSample is what ramanserve's /metrics says of its runtime at one
// moment: the counters whose difference over a measurement tells where a
// reply's time went (the scheduler, the GC, contended locks).
type runtimeSample struct {
	gcCycles   float64
	gcPauses   float64   // seconds, all stop-the-world pauses
	mutexWait  float64   // seconds
	schedLe    []float64 // go_sched_latencies_seconds bucket bounds
	schedCount []float64 // and their cumulative counts
}

func sampleRuntime(ctx context.Context, base string) (*runtimeSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	s := &runtimeSample{}
	first := func(name string) *dto.Metric {
		if f := families[name]; f != nil && len(f.Metric) > 0 {
			return f.Metric[0]
		}
		return nil
	}
	if m := first("go_gc_duration_seconds"); m != nil {
		s.gcCycles = float64(m.GetSummary().GetSampleCount())
	}
	if m := first("go_sched_pauses_total_gc_seconds"); m != nil {
		s.gcPauses = m.GetHistogram().GetSampleSum()
	}
	if m := first("go_sync_mutex_wait_total_seconds_total"); m != nil {
		s.mutexWait = m.GetCounter().GetValue()
	}
	if m := first("go_sched_latencies_seconds"); m != nil {
		for _, b := range m.GetHistogram().GetBucket() {
			s.schedLe = append(s.schedLe, b.GetUpperBound())
			s.schedCount = append(s.schedCount, float64(b.GetCumulativeCount()))
		}
	}
	return s, nil
}

// runtimeDelta is what happened between two samples.
type runtimeDelta struct {
	gcCycles, gcPauses, mutexWait float64
	// schedOver is the share of the goroutine wake-ups the runtime
	// sampled that waited for a core longer than schedBound (the first
	// bucket bound of the histogram at or above 50 us; Prometheus's
	// buckets of it are a decade apart).
	schedOver  float64
	schedBound float64
}

func (a *runtimeSample) to(b *runtimeSample) runtimeDelta {
	d := runtimeDelta{gcCycles: b.gcCycles - a.gcCycles, gcPauses: b.gcPauses - a.gcPauses, mutexWait: b.mutexWait - a.mutexWait}
	if len(a.schedCount) != len(b.schedCount) || len(b.schedCount) == 0 {
		return d
	}
	last := len(b.schedCount) - 1
	events := b.schedCount[last] - a.schedCount[last]
	for i, le := range b.schedLe {
		if le >= 50e-6 {
			within := b.schedCount[i] - a.schedCount[i]
			d.schedBound = le
			if events > 0 {
				d.schedOver = 1 - within/events
			}
			break
		}
	}
	return d
}

func (d runtimeDelta) String(over time.Duration) string {
	perSecond := func(v float64) float64 { return v / over.Seconds() }
	return fmt.Sprintf("GC %.1f cycles/s, stop-the-world pauses %.2f ms/s; mutex wait %.2f ms/s; %.2f %% of sampled goroutine wake-ups waited > %.0f us for a core",
		perSecond(d.gcCycles), 1e3*perSecond(d.gcPauses), 1e3*perSecond(d.mutexWait),
		100*d.schedOver, d.schedBound*1e6)
}
