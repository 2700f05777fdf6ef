package predlog

import (
	"context"
	"errors"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/idlecpu"
	"ramanserve/platform/storeerr"
	"ramanserve/platform/unixnano"
)

// writer is the goroutine that commits queued records to the store in
// batches and runs retention between batches.
type writer struct {
	l     *Writer
	batch []*Record
	// batchBytes is recordBytes summed over the batch.
	batchBytes int64

	lastRetention time.Time
	// lastFailureLog and failedSinceLog rate-limit the error log of failed
	// batches: a full disk would otherwise log ten lines a second.
	lastFailureLog time.Time
	failedSinceLog int
	// storeRetry is the pause before the next try of a batch while the
	// store is unavailable.
	storeRetry time.Duration
}

// failureLogEvery is the least time between two logged batch failures.
const failureLogEvery = time.Minute

func newWriter(l *Writer) *writer {
	return &writer{l: l, batch: make([]*Record, 0, l.opts.BatchMax)}
}

// maxPoll is the longest the writer leaves queued records untaken: a
// full batch commits within it.
const maxPoll = 10 * time.Millisecond

// run is the writer's loop. It takes the queued records every poll (a
// tenth of the commit interval, at most maxPoll), commits when the batch
// is full and at every tick of the commit interval, and checks retention
// every RetentionEvery. It polls rather than wait on the queue: a
// receiver waiting on the channel would make every Record on the hot path
// wake this goroutine (a scheduler hand-off, often a futex call, per
// prediction); polled, Record is a buffered send that wakes no one.
func (w *writer) run() {
	defer close(w.l.done)
	if w.l.opts.IdlePriority {
		// The store's work runs on this goroutine, so on this thread.
		if thread, err := idlecpu.EnterRaisable(); err != nil {
			w.l.opts.Logger.Warn("prediction log: the writer runs at normal priority", "err", err)
		} else {
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				w.l.keepPromise(thread, stop)
			}()
			// The thread ends with this goroutine, raised (End): its
			// exit must not wait for idle CPU.
			defer func() { close(stop); <-stopped; thread.End() }()
		}
	}
	ticker := time.NewTicker(w.l.opts.CommitInterval)
	defer ticker.Stop()
	poll := time.NewTicker(min(max(w.l.opts.CommitInterval/10, time.Millisecond), maxPoll))
	defer poll.Stop()
	w.lastRetention = time.Now()
	w.updateSize(context.Background())
	for {
		select {
		case <-poll.C:
			w.take()
		case <-ticker.C:
			tick := time.Now()
			w.take()
			w.flush()
			w.settle(tick)
			if time.Since(w.lastRetention) >= w.l.opts.RetentionEvery {
				w.lastRetention = time.Now()
				w.retain(0)
			}
		case <-w.l.stop:
			w.drain()
			return
		}
	}
}

// settle updates the time of the oldest waiting record after a commit
// cycle that began at tick: every record taken was committed (or counted
// as failed), so what still waits in the queues arrived after tick. When
// nothing waits it is cleared, then set again if a record arrived in
// between (Record sets it only from 0, and may have seen the old value).
func (w *writer) settle(tick time.Time) {
	if len(w.l.queue)+len(w.l.background) > 0 {
		w.l.oldestWaiting.Store(unixnano.Of(tick))
		return
	}
	w.l.oldestWaiting.Store(0)
	if len(w.l.queue)+len(w.l.background) > 0 {
		w.l.oldestWaiting.CompareAndSwap(0, unixnano.Of(tick))
	}
}

// take moves the records queued now, the hot path's and RecordWait's,
// into the batch, committing each time it fills.
func (w *writer) take() {
	for range len(w.l.queue) {
		w.add(<-w.l.queue)
	}
	for range len(w.l.background) {
		w.add(<-w.l.background)
	}
}

// add puts rec in the batch, committing a full batch: BatchMax records
// or, under a size bound, 1/batchBytesShare of it. A record without a
// time is stamped with the log's clock: the zero time has no place in the
// time order.
func (w *writer) add(rec *Record) {
	if rec.Time.IsZero() {
		rec.Time = w.l.opts.Now()
	}
	if rec.Explain != nil {
		w.explain(rec)
	}
	w.batch = append(w.batch, rec)
	w.batchBytes += recordBytes(rec)
	if len(w.batch) >= w.l.opts.BatchMax || (w.l.opts.MaxBytes > 0 && w.batchBytes >= w.l.opts.MaxBytes/batchBytesShare) {
		w.flush()
	}
}

// batchBytesShare: under a size bound a batch holds at most 1/16 of it by
// recordBytes. The embedded store's accounting of the bound (package
// sqlitelog) leaves one transaction an eighth; the estimate leaves the
// other half for the pages and index entries a batch adds beyond its
// records' bytes. Without it, a batch of BatchMax spectra (about 5 MB)
// would pass the smallest bound on its own.
const batchBytesShare = 16

// recordBytes overestimates what rec adds to the store: its fixed fields,
// its strings, its spectrum uncompressed and its contributions.
func recordBytes(rec *Record) int64 {
	return 256 + int64(len(rec.ModelVersion)+len(rec.BatchID)+len(rec.Port)+4*len(rec.Spectrum)+ContributionsBytes(rec.Contributions))
}

// explain computes rec's contributions from its Explain request, on the
// writer goroutine: the reply has long gone. A model that fails on the
// spectrum it accepted a moment ago (it cannot, short of a bug) leaves
// the record without contributions; the record is stored all the same.
func (w *writer) explain(rec *Record) {
	e := rec.Explain
	rec.Explain = nil // the record no longer holds the model
	if e.Done != nil {
		defer e.Done()
	}
	var (
		p inference.Prediction
		c inference.Contributions
	)
	if err := e.Model.PredictWithContributions(&e.Spectrum, &p, e.Top, &c); err != nil {
		w.l.explainFailed.Add(1)
		return
	}
	rec.Contributions = &c
	w.l.explained.Add(1)
}

// drain commits everything queued when Close was called, unless Close's
// ctx ends first.
func (w *writer) drain() {
	for {
		select {
		case <-w.l.abandon:
			w.l.dropped.Add(uint64(len(w.batch)))
			w.releaseBatch()
			return
		case rec := <-w.l.queue:
			w.add(rec)
		case rec := <-w.l.background:
			w.add(rec)
		default:
			w.flush()
			return
		}
	}
}

// flush commits the batch in one Append. A failed batch (full disk, I/O
// error) is rolled back by the store, logged and counted, and the writer
// goes on: the hot path never learns of it but through Stats. A store
// that cannot be reached (storeerr.ErrUnavailable: the fleet's database
// is down) is waited for instead: the batch is kept and tried again
// until it commits or Close gives up, while new records wait in the
// queue and, once it is full, are dropped and counted.
func (w *writer) flush() {
	n := len(w.batch)
	if n == 0 {
		return
	}
	err := w.l.store.Append(context.Background(), w.batch)
	for errors.Is(err, storeerr.ErrUnavailable) && w.waitForStore(err) {
		err = w.l.store.Append(context.Background(), w.batch)
	}
	w.l.storeDown.Store(false)
	w.releaseBatch()
	if err != nil {
		w.l.writeFailed.Add(uint64(n))
		w.logFailure(n, err)
		return
	}
	w.l.committed.Add(uint64(n))
	w.l.lastCommit.Store(unixnano.Of(w.l.opts.Now()))
	w.afterBatch()
	if w.l.opts.MaxBytes > 0 {
		w.retain(n)
		w.afterBatch()
	}
}

// releaseBatch empties the batch, committed, failed or dropped: its
// records are released (the store keeps none past Append) and forgotten.
func (w *writer) releaseBatch() {
	for _, rec := range w.batch {
		release(rec)
	}
	clear(w.batch)
	w.batch, w.batchBytes = w.batch[:0], 0
}

// Pauses between two tries of a batch while the store is unavailable.
const (
	storeRetryFirst = 50 * time.Millisecond
	storeRetryMax   = time.Second
)

// waitForStore pauses before the next try of a batch the store could not
// take, doubling the pause up to storeRetryMax. It returns false when
// Close's ctx has ended (the batch is then counted as failed).
func (w *writer) waitForStore(err error) bool {
	if !w.l.storeDown.Swap(true) {
		w.storeRetry = storeRetryFirst
		w.l.opts.Logger.Warn("prediction log: the store is unavailable; the batch waits and new records queue", "records", len(w.batch), "err", err)
	}
	select {
	case <-w.l.abandon:
		return false
	case <-time.After(w.storeRetry):
	}
	w.storeRetry = min(2*w.storeRetry, storeRetryMax)
	return true
}

// afterBatch calls Options.AfterBatch, if set.
func (w *writer) afterBatch() {
	if f := w.l.opts.AfterBatch; f != nil {
		f()
	}
}

// logFailure logs a failed batch, at most once per failureLogEvery with the
// records lost since the last line.
func (w *writer) logFailure(n int, err error) {
	w.failedSinceLog += n
	if time.Since(w.lastFailureLog) < failureLogEvery {
		return
	}
	w.l.opts.Logger.Error("prediction log: batches failed to commit; their records are lost",
		"records", w.failedSinceLog, "err", err)
	w.lastFailureLog, w.failedSinceLog = time.Now(), 0
}

// keepPromise watches the oldest waiting record while the writer runs at
// idle priority on thread: past a quarter of the promise it raises the
// thread to ordinary priority, so that a machine kept busy by the replies
// cannot starve the commits past the promise, and once the queue has
// stayed short for a whole check it lowers the thread again. It wakes
// every tenth of the promise, never per record, and ends when stop closes.
// When Close begins it raises the thread for good: the last commits are
// part of a shutdown that a busy machine must not hold past its grace.
func (l *Writer) keepPromise(thread *idlecpu.Thread, stop <-chan struct{}) {
	every := max(l.opts.Promise/10, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	raised := false
	for {
		select {
		case <-stop:
			return
		case <-l.stop:
			if err := thread.Raise(); err != nil {
				l.opts.Logger.Warn("prediction log: cannot raise the writer's priority to close", "err", err)
			}
			return
		case <-t.C:
		}
		wait := l.oldestWait(time.Now())
		switch {
		case !raised && wait > l.opts.Promise/4:
			if err := thread.Raise(); err != nil {
				l.opts.Logger.Warn("prediction log: cannot raise the writer's priority", "err", err)
				continue
			}
			raised = true
			l.raised.Add(1)
		case raised && wait <= every:
			if err := thread.Lower(); err == nil {
				raised = false
			}
		}
	}
}
