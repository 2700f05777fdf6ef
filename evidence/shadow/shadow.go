// Package shadow scores a second model (the shadow, a candidate for
// promotion) on the spectra the active model answers, off the reply path,
// and keeps live statistics of how the two differ.
//
// The hot path calls Scorer.Offer after the active model has answered: it
// copies the spectrum and the active prediction into a pooled buffer, hands
// it to a bounded queue and returns; it never waits. When the queue is full
// the spectrum is dropped and counted. One worker goroutine predicts with
// the shadow, updates the comparison and hands both predictions to a Sink
// (the prediction log, through an adapter in the server).
//
// One worker, not a pool: the server has two cores, and the active
// predicts must keep them. One worker caps the shadow at one core whatever
// the load, needs a few tens of microseconds a spectrum (tens of thousands
// a second, far above the rig's rate), keeps the records in the order of
// the predicts, and leaves the comparison a single writer.
//
// The shadow predicts through the model's own Predict, on an exact copy of
// the spectrum, with the options it was built with: what it records is
// bit-identical to what it returns once promoted.
//
// Set and Clear act on the spectra offered after them. A spectrum already
// queued is scored by the shadow it was offered under and recorded with
// that shadow's version (its record is true; its figures go to that
// shadow's comparison, no longer reported). Close scores what is queued.
//
// The scorer does not know the registry: which version is the shadow, and
// that it survives a restart, is the caller's to persist (Status.Version
// says what to store; Set it again at start-up). Refusing a shadow equal to
// the active model, and clearing the shadow when it is promoted, are the
// caller's too: the scorer sees the active model only through Offer.
package shadow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"ramanserve/platform/idlecpu"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/inference"
)

// Defaults of Options.
const (
	// DefaultQueueSize is the number of spectra that may wait for the
	// shadow. At 1,000 predicts/s it absorbs a 128 ms stall of the worker
	// (a descheduled goroutine on a busy two-core machine, a slow sink)
	// without a drop; the worker itself needs tens of microseconds a
	// spectrum, so the queue is nearly always empty.
	DefaultQueueSize = 128
	// DefaultMaxPoints bounds the spectra the scorer copies (four times
	// the 2048-point axis of the rig). Only spectra the active model
	// accepted are offered, so their length is the active model's axis;
	// the bound caps the scorer's memory at QueueSize * MaxPoints * 16
	// bytes (16 MiB with the defaults, 4 MiB with 2048 points) whatever
	// model is loaded.
	DefaultMaxPoints = 8192
)

// PredictionID names one spectrum's predictions (the prediction log's id,
// a UUID). It is an alias of the array so that a uuid.UUID is assignable
// to it without a conversion.
type PredictionID = [16]byte

// Result is one spectrum scored by the shadow, as handed to the Sink.
type Result struct {
	PredictionID PredictionID
	// Time is the time of the active prediction, as offered.
	Time          time.Time
	ActiveVersion string
	ShadowVersion string
	Active        inference.Prediction
	Shadow        inference.Prediction
	// Context is the scan context offered with the spectrum (zero when
	// none was), so that the shadow's record carries it too.
	Context inference.ScanContext
}

// Sink receives the scored spectra: the server adapts the prediction log
// to it (a shadow record beside the active one, with the same
// PredictionID).
type Sink interface {
	// RecordShadow is called by the worker, one result at a time. r is
	// valid only during the call (the worker reuses it); copy what you
	// keep. It should not block: while it runs, the queue fills and
	// spectra are dropped. ctx ends when Close gives up waiting.
	RecordShadow(ctx context.Context, r *Result)
}

// Options configure a Scorer.
type Options struct {
	// Sink receives every scored spectrum; nil: only the statistics are
	// kept.
	Sink Sink
	// QueueSize is the number of spectra offered and not yet scored, the
	// one the worker is scoring included; see DefaultQueueSize. 0 means
	// the default.
	QueueSize int
	// MaxPoints: see DefaultMaxPoints; 0 means the default. A longer
	// spectrum is dropped (and counted).
	MaxPoints int
	Logger    *slog.Logger
	// Now stamps Status.Since; nil means time.Now.
	Now func() time.Time
	// IdlePriority runs the worker on a thread of its own at idle CPU
	// priority (package idlecpu): the shadow then scores only on CPU the
	// active model's replies leave idle, and drops (counted) while the
	// cores stay busy.
	IdlePriority bool
}

// Scorer runs the shadow model beside the active one. Offer, Set, Clear
// and Status are safe for concurrent use.
type Scorer struct {
	sink      Sink
	maxPoints int
	idle      bool // run the worker at idle CPU priority
	log       *slog.Logger
	now       func() time.Time

	// current is the shadow in force; nil when none is set. Offer reads
	// it with one atomic load.
	current atomic.Pointer[generation]

	// queue holds the offered spectra in order. free holds the items not
	// in the queue, LIFO, so that the few buffers in use stay in cache.
	// There are exactly cap(queue) items, so a send on queue never
	// blocks. mu guards free and closing; a send on queue happens under
	// mu, so that none happens after Close has set closing.
	queue   chan *item
	mu      sync.Mutex
	free    []*item
	closing bool

	closed  chan struct{} // closed by Close: drain the queue and stop
	abandon context.CancelFunc
	done    chan struct{} // closed by the worker when it returns
	// thread is the worker's thread at idle priority, when it can be
	// raised: Close raises it, since a worker left at idle priority on a
	// busy machine would not even see that it is closing.
	thread atomic.Pointer[idlecpu.Thread]

	scored, dropped, failed atomic.Uint64

	// Worker-owned, reused for every spectrum (a local would escape to
	// the heap through the Model and Sink interfaces).
	spectrum inference.Spectrum
	result   Result
}

// item is one offered spectrum, a pooled buffer.
type item struct {
	gen    *generation
	id     PredictionID
	at     time.Time
	active inference.Model
	pred   inference.Prediction
	scan   inference.ScanContext
	wn, in []float64
}

// New starts a Scorer with no shadow set. Close stops it.
func New(opts Options) *Scorer {
	s, ctx := newScorer(opts)
	go s.run(ctx)
	return s
}

// newScorer builds a Scorer without starting its worker; the context is
// the worker's, cancelled when Close gives up.
func newScorer(opts Options) (*Scorer, context.Context) {
	if opts.QueueSize <= 0 {
		opts.QueueSize = DefaultQueueSize
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = DefaultMaxPoints
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scorer{
		sink:      opts.Sink,
		maxPoints: opts.MaxPoints,
		idle:      opts.IdlePriority,
		log:       opts.Logger,
		now:       opts.Now,
		queue:     make(chan *item, opts.QueueSize),
		free:      make([]*item, opts.QueueSize),
		closed:    make(chan struct{}),
		abandon:   cancel,
		done:      make(chan struct{}),
	}
	for i := range s.free {
		s.free[i] = new(item)
	}
	return s, ctx
}

// ErrNoModel is returned by Set for a nil model.
var ErrNoModel = errors.New("shadow: no model")

// Set makes m the shadow, replacing any previous one, and starts its
// comparison from zero. It takes effect for the spectra offered after it
// returns; spectra already queued are scored by the model they were
// offered under (their records are true, and their statistics go to that
// model's comparison, which is no longer reported).
func (s *Scorer) Set(m inference.Model) error {
	if m == nil {
		return ErrNoModel
	}
	s.current.Store(&generation{model: m, version: m.Metadata().Version, since: s.now()})
	return nil
}

// Clear stops shadow scoring; spectra already queued are still scored (see
// Set). Clearing without a shadow does nothing.
func (s *Scorer) Clear() {
	s.current.Store(nil)
}

// Offer hands one answered spectrum to the shadow: id names the
// prediction, at is its time, active is the model that answered with p,
// c (nil: none) the scan context, handed back in the Result.
// It copies spec and p (the caller may reuse them at once) and returns
// whether the spectrum was queued: false when no shadow is set, the
// scorer is closing, or the queue is full or the spectrum too long (both
// counted as dropped). It never blocks and, once the pooled buffers have
// grown to the spectra's length, does not allocate.
func (s *Scorer) Offer(id PredictionID, at time.Time, active inference.Model, spec *inference.Spectrum, p *inference.Prediction, c *inference.ScanContext) bool {
	g := s.current.Load()
	if g == nil || active == nil {
		return false
	}
	if len(spec.Intensities) > s.maxPoints || len(spec.Wavenumbers) > s.maxPoints {
		s.drop(g)
		return false
	}
	it, closing := s.take()
	if it == nil {
		if !closing {
			s.drop(g)
		}
		return false
	}
	it.gen, it.id, it.at, it.active, it.pred = g, id, at, active, *p
	it.scan = inference.ScanContext{}
	if c != nil {
		it.scan = *c
	}
	it.wn = append(it.wn[:0], spec.Wavenumbers...)
	it.in = append(it.in[:0], spec.Intensities...)
	return s.enqueue(it)
}

func (s *Scorer) drop(g *generation) {
	g.dropped.Add(1)
	s.dropped.Add(1)
}

// take pops a free item; nil when there is none (the queue is full) or
// the scorer is closing.
func (s *Scorer) take() (it *item, closing bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, true
	}
	n := len(s.free)
	if n == 0 {
		return nil, false
	}
	it = s.free[n-1]
	s.free = s.free[:n-1]
	return it, false
}

// enqueue queues a filled item, unless Close came in between.
func (s *Scorer) enqueue(it *item) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		s.putLocked(it)
		return false
	}
	s.queue <- it // never blocks: there are only cap(queue) items
	return true
}

// recycle returns a scored (or abandoned) item to the free list.
func (s *Scorer) recycle(it *item) {
	s.mu.Lock()
	s.putLocked(it)
	s.mu.Unlock()
}

func (s *Scorer) putLocked(it *item) {
	// Let the models go: an item may sit in the free list for long.
	it.gen, it.active = nil, nil
	s.free = append(s.free, it)
}

// Close stops accepting spectra, scores those queued, and stops the
// worker. When ctx ends first, the worker abandons the rest (counted as
// dropped) and Close returns ctx's error without waiting further; the
// worker returns as soon as the model or the sink in progress does.
// Calling Close again returns at once with nil, or waits as the first.
func (s *Scorer) Close(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	s.mu.Unlock()
	if first {
		close(s.closed)
		if th := s.thread.Load(); th != nil {
			s.raise(th)
		}
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		s.abandon()
		return fmt.Errorf("shadow: closing: %w", ctx.Err())
	}
}

// run is the worker: it scores the queue in order until Close, then
// scores what is left, unless ctx (cancelled when Close gives up) ends.
func (s *Scorer) run(ctx context.Context) {
	if s.idle {
		s.enterIdle()
	}
	defer func() {
		if th := s.thread.Load(); th != nil {
			th.End() // its exit must not wait for idle CPU either
		}
		close(s.done)
	}()
	poll := time.NewTicker(pollInterval)
	defer poll.Stop()
	for {
		select {
		case <-poll.C:
			s.drain(ctx)
		case <-s.closed:
			// No send can happen any more (Close set closing under
			// mu): what is queued now is all there will be.
			s.drain(ctx)
			return
		}
	}
}

// enterIdle puts the worker's thread at idle priority, and keeps it in
// s.thread when Close can raise it again. Where the process may not raise a thread
// (idlecpu.ErrCannotRaise) the worker stays at idle priority all the
// same: the scorer promises nothing, and its queue is dropped (counted)
// if a busy machine keeps it from finishing within the shutdown grace.
func (s *Scorer) enterIdle() {
	th, err := idlecpu.EnterRaisable()
	if err == nil {
		s.mu.Lock()
		s.thread.Store(th)
		closing := s.closing
		s.mu.Unlock()
		if closing { // Close looked for the thread before it was stored
			s.raise(th)
		}
		return
	}
	if errors.Is(err, idlecpu.ErrCannotRaise) {
		err = idlecpu.Enter()
	}
	if err != nil {
		s.log.Warn("shadow: the worker runs at normal priority", "err", err)
	}
}

func (s *Scorer) raise(th *idlecpu.Thread) {
	if err := th.Raise(); err != nil {
		s.log.Warn("shadow: cannot raise the worker's priority to close", "err", err)
	}
}

// pollInterval is how often the worker looks at its queue. It polls
// rather than wait on the queue so that Offer, a buffered send, never
// wakes a goroutine (waking one costs the hot path a futex call and puts
// the worker on a core at once); a spectrum waits at most this long.
const pollInterval = time.Millisecond

// drain scores what is queued now.
func (s *Scorer) drain(ctx context.Context) {
	for {
		select {
		case it := <-s.queue:
			s.process(ctx, it)
		default:
			return
		}
	}
}

// process scores it unless the scorer was abandoned, and recycles it.
func (s *Scorer) process(ctx context.Context, it *item) {
	defer s.recycle(it)
	if ctx.Err() != nil {
		s.drop(it.gen)
		return
	}
	s.score(ctx, it)
}

// score predicts with the item's shadow, updates its comparison and
// hands both predictions to the sink. A panicking model costs one
// spectrum (counted as failed), not the process.
func (s *Scorer) score(ctx context.Context, it *item) {
	g := it.gen
	r := &s.result
	defer func() {
		if p := recover(); p != nil {
			s.fail(g, fmt.Errorf("panic: %v", p))
		}
	}()
	s.spectrum = inference.Spectrum{Wavenumbers: it.wn, Intensities: it.in}
	if err := g.model.Predict(&s.spectrum, &r.Shadow); err != nil {
		s.fail(g, err)
		return
	}
	g.record(&it.pred, &r.Shadow, toleranceOf(it.active))
	s.scored.Add(1)
	if s.sink == nil {
		return
	}
	r.PredictionID, r.Time = it.id, it.at
	r.ActiveVersion, r.ShadowVersion = it.active.Metadata().Version, g.version
	r.Active, r.Context = it.pred, it.scan
	s.deliver(ctx, g, r)
}

// deliver hands r to the sink. A panicking sink loses that record only;
// the first panic of each shadow is logged.
func (s *Scorer) deliver(ctx context.Context, g *generation, r *Result) {
	defer func() {
		if p := recover(); p != nil && g.firstSinkPanic() {
			s.log.Error("shadow sink panicked; the record is lost, later panics are not logged",
				"shadow", g.version, "panic", p)
		}
	}()
	s.sink.RecordShadow(ctx, r)
}

// fail counts a spectrum the shadow could not score, and logs the first
// of each shadow (a shadow on another axis fails every spectrum: one line
// says why, the count says how often).
func (s *Scorer) fail(g *generation, err error) {
	s.failed.Add(1)
	if g.fail() {
		s.log.Warn("shadow model cannot score a spectrum the active model answered; later failures are only counted",
			"shadow", g.version, "err", err)
	}
}

// tolerancer is implemented by models that know their tolerance
// (inference.PLSModel).
type tolerancer interface {
	Tolerance() inference.Breakdown
}

// toleranceOf returns the active model's tolerance per analyte, with
// DefaultTolerance for what it does not set.
func toleranceOf(m inference.Model) inference.Breakdown {
	var tol inference.Breakdown
	if t, ok := m.(tolerancer); ok {
		tol = t.Tolerance()
	}
	for a := range inference.NumAnalytes {
		if !tol.Valid[a] {
			tol.Set(inference.Analyte(a), inference.DefaultTolerance)
		}
	}
	return tol
}

// Status is the shadow and its comparison with the active model.
type Status struct {
	// Version is the shadow's version, "" when none is set: what the
	// caller persists to set the same shadow again after a restart.
	Version string
	// Since is when the shadow was set; the comparison counts from here.
	Since      time.Time
	Comparison Comparison
}

// Status returns the current shadow and a consistent snapshot of its
// comparison; the zero Status when none is set.
func (s *Scorer) Status() Status {
	g := s.current.Load()
	if g == nil {
		return Status{}
	}
	return Status{Version: g.version, Since: g.since, Comparison: g.snapshot()}
}

// Totals are the scorer's counters since New, over every shadow, for
// metrics and health.
type Totals struct {
	Scored, Dropped, Failed uint64
	Queued, QueueCap        int
}

// Totals returns the counters since New.
func (s *Scorer) Totals() Totals {
	return Totals{
		Scored:   s.scored.Load(),
		Dropped:  s.dropped.Load(),
		Failed:   s.failed.Load(),
		Queued:   len(s.queue),
		QueueCap: cap(s.queue),
	}
}
