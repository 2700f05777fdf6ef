package predlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/platform/unixnano"
)

// Defaults of Options.
const (
	DefaultQueueSize      = 8192
	DefaultBatchMax       = 1024
	DefaultCommitInterval = 100 * time.Millisecond
	DefaultRetentionEvery = time.Second
	// DeleteChunk is the rows one retention transaction deletes, so that
	// the writer commits new records between chunks and never stalls long.
	DeleteChunk = 1000
	// DefaultPromise is how long a record Record accepted may wait for its
	// commit: every record acknowledged more than this before a kill -9 is
	// in the store, or was counted as dropped or failed. The writer's
	// priority is raised while the oldest waiting record is past a quarter
	// of it (see keepPromise), and GET /health reads degraded past the
	// whole of it.
	DefaultPromise = time.Second
	// MinMaxBytes is the smallest size bound New accepts: one commit
	// batch and one chunk of deletions must each stay well under the
	// bound (see sqlitelog for how the embedded store spends it).
	MinMaxBytes = 4 << 20
)

// Options configure New. Zero values take the defaults.
type Options struct {
	// QueueSize is the bound of the hot path's queue, in records.
	QueueSize int
	// BatchMax commits a batch as soon as it holds this many records
	// (under MaxBytes, also once it holds about MaxBytes/16 by an
	// estimate that counts spectra uncompressed).
	BatchMax int
	// CommitInterval is the longest a record waits in a partial batch:
	// a record Record accepted is committed within CommitInterval plus the
	// time of one commit, unless the process is killed first. What a
	// crash keeps of the committed batches is the store's to say.
	CommitInterval time.Duration
	// Retention deletes records older than this (0 keeps them by age).
	Retention time.Duration
	// MaxBytes bounds the store's size (0: no bound): once the bytes
	// holding records exceed 5/8 of it, the oldest records are deleted,
	// in transactions of DeleteChunk, down to 1/2.
	MaxBytes int64
	// RetentionEvery is how often the writer checks age and size.
	RetentionEvery time.Duration
	// Logger receives write errors (slog.Default() when nil).
	Logger *slog.Logger
	// Now is the clock for age retention (time.Now when nil).
	Now func() time.Time
	// IdlePriority runs the writer on a thread of its own at idle CPU
	// priority (package idlecpu): it commits on CPU the rest of the
	// process leaves idle while it keeps up, and its thread is raised to
	// ordinary priority while the oldest waiting record is past a quarter
	// of Promise, and for good once Close begins. Where the process may
	// not raise a thread back (idlecpu.ErrCannotRaise), the writer runs
	// at ordinary priority.
	IdlePriority bool
	// Promise is DefaultPromise when 0.
	Promise time.Duration
	// AfterBatch, when set, is called on the writer goroutine after each
	// batch's commit and again after the retention it triggered, when
	// nothing else writes to the store: tests read the store's files
	// there. The writer waits for it.
	AfterBatch func()
}

func (o Options) withDefaults() Options {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.BatchMax <= 0 {
		o.BatchMax = DefaultBatchMax
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = DefaultCommitInterval
	}
	if o.RetentionEvery <= 0 {
		o.RetentionEvery = DefaultRetentionEvery
	}
	if o.Promise <= 0 {
		o.Promise = DefaultPromise
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Writer is the prediction log over a Store: the hot path's bounded
// queue, RecordWait's queue, one goroutine that commits both in batches
// (Store.Append) and applies retention between batches, and the counters.
// Reads go straight to the store. It implements Log.
type Writer struct {
	opts  Options
	store Store
	queue chan *Record
	// background is RecordWait's queue, apart from the hot path's so that
	// a re-scoring job never takes the room live predictions need.
	background chan *Record

	closing atomic.Bool
	stop    chan struct{} // closed by Close: drain the queue, then exit
	abandon chan struct{} // closed when Close's ctx ends: exit after the current transaction
	done    chan struct{} // closed by the writer when it has exited
	once    sync.Once

	committed   atomic.Uint64
	lastCommit  atomic.Int64 // unixnano.Of of the latest commit; 0 before the first
	dropped     atomic.Uint64
	writeFailed atomic.Uint64
	storeDown   atomic.Bool // a batch waits for the store to come back
	deleted     atomic.Uint64
	sizeBytes   atomic.Int64
	// oldestWaiting is when (unixnano.Of) the oldest record not yet
	// committed was queued, or a moment before; 0 when none waits. Record
	// sets it from 0, the writer after each commit cycle (settle).
	oldestWaiting atomic.Int64
	raised        atomic.Uint64 // times the writer's thread was raised to ordinary priority
	// explained and explainFailed count the Explain requests the writer
	// computed and those whose model failed.
	explained     atomic.Uint64
	explainFailed atomic.Uint64
}

var _ Log = (*Writer)(nil)

// New starts the log's writer over store, which it owns from then on:
// Close closes it.
func New(ctx context.Context, store Store, opts Options) (*Writer, error) {
	opts = opts.withDefaults()
	if opts.MaxBytes != 0 && opts.MaxBytes < MinMaxBytes {
		return nil, fmt.Errorf("predlog: a size bound of %d bytes is below the minimum of %d", opts.MaxBytes, MinMaxBytes)
	}
	if opts.Retention < 0 || opts.MaxBytes < 0 {
		return nil, errors.New("predlog: retention and size bound must not be negative")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := &Writer{
		opts:       opts,
		store:      store,
		queue:      make(chan *Record, opts.QueueSize),
		background: make(chan *Record, opts.BatchMax),
		stop:       make(chan struct{}),
		abandon:    make(chan struct{}),
		done:       make(chan struct{}),
	}
	go newWriter(l).run()
	return l, nil
}

// Record hands rec to the writer without blocking. It never allocates.
func (l *Writer) Record(rec *Record) bool {
	if rec == nil {
		return false
	}
	if l.closing.Load() {
		l.dropped.Add(1)
		release(rec)
		return false
	}
	select {
	case l.queue <- rec:
		// One clock read per stretch of waiting records, not per record:
		// the first record after the writer emptied the queue sets it.
		if l.oldestWaiting.Load() == 0 {
			l.oldestWaiting.CompareAndSwap(0, unixnano.Of(time.Now()))
		}
		return true
	default:
		l.dropped.Add(1)
		release(rec)
		return false
	}
}

// Dropped counts the records Record refused.
func (l *Writer) Dropped() uint64 { return l.dropped.Load() }

// Stats returns the log's counters.
func (l *Writer) Stats() Stats {
	return Stats{
		Queued:        len(l.queue),
		QueueCap:      cap(l.queue),
		Committed:     l.committed.Load(),
		LastCommitAt:  lastCommitAt(l.lastCommit.Load()),
		Dropped:       l.dropped.Load(),
		WriteFailed:   l.writeFailed.Load(),
		StoreDown:     l.storeDown.Load(),
		Deleted:       l.deleted.Load(),
		SizeBytes:     l.sizeBytes.Load(),
		Explained:     l.explained.Load(),
		ExplainFailed: l.explainFailed.Load(),
		OldestWait:    l.oldestWait(time.Now()),
		Promise:       l.opts.Promise,
		Raised:        l.raised.Load(),
	}
}

// oldestWait is how long the oldest record not yet committed has waited
// at now; 0 when none waits.
func (l *Writer) oldestWait(now time.Time) time.Duration {
	since := l.oldestWaiting.Load()
	if since == 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, since)), 0)
}

// Close stops accepting records, lets the writer commit what is queued,
// and closes the store. When ctx ends first the writer stops after its
// current transaction and the records still queued are counted as
// dropped; the store is closed all the same.
func (l *Writer) Close(ctx context.Context) error {
	var err error
	l.once.Do(func() {
		l.closing.Store(true)
		close(l.stop)
		select {
		case <-l.done:
		case <-ctx.Done():
			err = fmt.Errorf("predlog: close: %w", ctx.Err())
			close(l.abandon)
			<-l.done
		}
		// A Record that passed the closing check just before Close may
		// have queued after the writer's last drain: count it.
		for range len(l.queue) {
			release(<-l.queue)
			l.dropped.Add(1)
		}
		for range len(l.background) {
			release(<-l.background)
			l.dropped.Add(1)
		}
		if cerr := l.store.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = fmt.Errorf("predlog: close: %w", cerr)
		}
	})
	return err
}

// lastCommitAt is Stats.LastCommitAt of a stored Unix time in ns.
func lastCommitAt(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// Page implements Reader through the store.
func (l *Writer) Page(ctx context.Context, f Filter) (Page, error) { return l.store.Page(ctx, f) }

// Nearest implements Reader through the store.
func (l *Writer) Nearest(ctx context.Context, batchID string, at time.Time, window time.Duration) (Record, bool, error) {
	return l.store.Nearest(ctx, batchID, at, window)
}

// ByScanSeq implements Reader through the store.
func (l *Writer) ByScanSeq(ctx context.Context, batchID string, scanSeq float64) (Record, bool, error) {
	return l.store.ByScanSeq(ctx, batchID, scanSeq)
}

// ByPrediction implements Reader through the store.
func (l *Writer) ByPrediction(ctx context.Context, id PredictionID) ([]Record, error) {
	return l.store.ByPrediction(ctx, id)
}

// ByPredictions implements Reader through the store.
func (l *Writer) ByPredictions(ctx context.Context, ids []PredictionID, use func(recs []Record) error) error {
	return l.store.ByPredictions(ctx, ids, use)
}

// Batches implements BatchLister through the store.
func (l *Writer) Batches(ctx context.Context, f BatchFilter) (BatchPage, error) {
	return l.store.Batches(ctx, f)
}
