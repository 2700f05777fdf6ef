package server

import (
	"fmt"
	"sync"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/gen"
)

// PredictionLogStats gives the prediction log's counters (*predlog.Writer).
type PredictionLogStats interface {
	Stats() predlog.Stats
}

// lossDegradedFor is how long GET /health stays degraded after the
// prediction log last lost records to a failed commit: long enough for a
// monitor polling every few minutes to see it, short enough that a full
// disk, once freed, stops being reported on its own.
const lossDegradedFor = 10 * time.Minute

// lossWatch remembers when a counter of lost records last grew.
type lossWatch struct {
	mu       sync.Mutex
	seen     uint64
	lastLoss time.Time
}

// observe takes the counter's value now and reports when it last grew
// (zero: never since start).
func (w *lossWatch) observe(n uint64, now time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n > w.seen {
		w.seen, w.lastLoss = n, now
	}
	return w.lastLoss
}

// predictionLogHealth is the log's part of GET /health, and a degraded
// reason while it is losing records to failed commits ("" when not).
func (a *API) predictionLogHealth(now time.Time) (*gen.PredictionLogHealth, string) {
	if a.PredictionLog == nil {
		return nil, ""
	}
	st := a.PredictionLog.Stats()
	h := &gen.PredictionLogHealth{
		Recorded:    int64(st.Committed),
		Dropped:     int64(st.Dropped),
		WriteFailed: ptr(int64(st.WriteFailed)),
		QueueDepth:  ptr(st.Queued),
		SizeBytes:   ptr(st.SizeBytes),
	}
	if !st.LastCommitAt.IsZero() {
		h.LastCommitAt = ptr(st.LastCommitAt.UTC())
	}
	h.OldestWaitSeconds = ptr(st.OldestWait.Seconds())
	h.PromiseSeconds = ptr(st.Promise.Seconds())
	if st.Behind() {
		return h, fmt.Sprintf("prediction_log_behind: the oldest record waiting for the prediction log has waited %v, past its %v promise (the writer cannot keep up: see its queue and the server's CPU)",
			st.OldestWait.Round(time.Millisecond), st.Promise)
	}
	last := a.logLosses.observe(st.WriteFailed, now)
	if last.IsZero() || now.Sub(last) >= lossDegradedFor {
		return h, ""
	}
	return h, fmt.Sprintf("the prediction log lost %d records to failed commits since start (full disk or I/O error; see the server log), the last %s ago",
		st.WriteFailed, now.Sub(last).Round(time.Second))
}
