// Package evidence gathers the evidence a model is judged on from the predictions
// the server answers: every active prediction becomes a record of the
// prediction log, and its spectrum is offered to the shadow model, whose
// predictions become records of the log too, under the same PredictionID.
//
// The Collector sits on the prediction channel's hot path, after the
// reply is encoded. It never blocks and takes no lock the management side
// holds: the log and the scorer both hand work to bounded queues and drop
// (and count) what does not fit. It allocates the record itself; with
// spectra logging, the spectrum's float32 copy comes from a pool and goes
// back to it when the log releases the record (committed, failed or
// dropped), so a steady stream of predictions reuses the same buffers;
// the wavenumber axis, the same for every spectrum of a rig, is converted
// once and shared. A
// reply's contributions are copied onto the record; a prediction above
// its T2 or Q limit without them also costs a float64 copy of its
// spectrum, for the log's writer to compute them from.
package evidence

import (
	"bytes"
	"context"
	"sync/atomic"
	"time"
	"unsafe"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/shadow"
	"ramanserve/inference"
)

// MaxLoggedPoints bounds the spectra a record carries (four times the
// rig's 2048 points, as the shadow's bound): only spectra the active model
// accepted are logged, so their length is its axis's; the bound caps the
// memory the log's queue can hold whatever model is loaded. A longer
// spectrum's record is logged without it.
const MaxLoggedPoints = shadow.DefaultMaxPoints

// Shadow is the shadow scorer as the Collector sees it (*shadow.Scorer).
type Shadow interface {
	Offer(id shadow.PredictionID, at time.Time, active inference.Model, spec *inference.Spectrum, p *inference.Prediction, c *inference.ScanContext) bool
}

// Options configure a Collector.
type Options struct {
	// Log receives the records; nil logs nothing (the server's
	// -prediction-log=false), and the shadow is still offered every
	// spectrum.
	Log predlog.Recorder
	// Shadow is offered every spectrum; nil: no shadow scoring.
	Shadow Shadow
	// LogSpectra stores each active prediction's spectrum (as float32) so
	// that a model can be re-scored on it later.
	LogSpectra bool
	// ExplainExceedances: a prediction whose T2 or Q is above its 95 %
	// limit, and whose reply carried no contributions, gets its
	// contributions (ExceedanceTop variables) computed by the log's
	// writer and stored with its record.
	ExplainExceedances bool
}

// ExceedanceTop is the K of the contributions stored for an exceedance:
// enough to name the bands behind an alarm (a band is a few points
// wide), few enough that the record grows by well under a kB per
// statistic beside the region sums.
const ExceedanceTop = 10

// MaxPendingExplains bounds the exceedances whose spectrum waits in the
// log's queue for the writer to compute their contributions: each holds
// a float64 copy of its spectrum and axis (at most 16 x MaxLoggedPoints
// bytes, 128 KiB), so at most 32 MiB wait at once. Past it an exceedance
// is logged without contributions (counted: ExplainsSkipped).
const MaxPendingExplains = 256

// Collector records the predictions of the active model and of the
// shadow. It is safe for concurrent use.
type Collector struct {
	log        predlog.Recorder
	shadow     Shadow
	logSpectra bool
	explain    bool
	// pending counts the Explain requests queued and not yet computed;
	// skipped the exceedances logged without, pending being full.
	pending, skipped atomic.Int64
	// axis is the axis of the latest logged spectrum, as it came and as
	// float32: records of spectra on the same axis share the float32 one
	// (the log treats it as read-only).
	axis atomic.Pointer[loggedAxis]
	// spectra holds float32 buffers the log has released, at most
	// SpectrumPool of them (nil without LogSpectra).
	spectra chan []float32
	// release is releaseSpectrum as a func value, made once: every record
	// with a pooled spectrum carries it.
	release func(*predlog.Record)
}

// New returns a Collector. Its shadow, when set, must be told of it
// through the scorer's Sink (Collector implements shadow.Sink).
func New(opts Options) *Collector {
	c := &Collector{log: opts.Log, shadow: opts.Shadow, logSpectra: opts.LogSpectra, explain: opts.ExplainExceedances}
	if c.logSpectra {
		c.spectra = make(chan []float32, SpectrumPool)
		c.release = c.releaseSpectrum
	}
	return c
}

// SetShadow sets the scorer the spectra are offered to. It is meant for
// wiring, before the first prediction: the scorer needs the Collector as
// its Sink, and the Collector the scorer.
func (c *Collector) SetShadow(s Shadow) { c.shadow = s }

// Logged records the prediction p that the active model m made for spec
// at time at, with the rig's scan context sc (nil: none) and the
// contributions its reply carried (nil: none), and offers the spectrum
// to the shadow under the same PredictionID. spec, p, sc and ct may be
// reused by the caller as soon as it returns.
//
// A prediction without contributions costs what it did before they
// existed, unless its T2 or Q exceeds its limit: then, with
// ExplainExceedances, the record carries a copy of the spectrum and the
// model for the log's writer to compute them.
func (c *Collector) Logged(at time.Time, m inference.Model, spec *inference.Spectrum, p *inference.Prediction, sc *inference.ScanContext, ct *inference.Contributions) {
	id := predlog.NewPredictionID()
	if c.log != nil {
		rec := c.activeRecord(id, at, m, spec, p, sc)
		switch {
		case ct != nil:
			rec.Contributions = predlog.CloneContributions(ct)
		case c.explain && exceeds(&p.Diagnostics):
			rec.Explain = c.explainRequest(m, spec)
		}
		if !c.log.Record(rec) && rec.Explain != nil && rec.Explain.Done != nil {
			rec.Explain.Done()
		}
	}
	if c.shadow != nil {
		c.shadow.Offer(id, at, m, spec, p, sc)
	}
}

// activeRecord is the log's record of the active model's prediction.
func (c *Collector) activeRecord(id predlog.PredictionID, at time.Time, m inference.Model, spec *inference.Spectrum, p *inference.Prediction, sc *inference.ScanContext) *predlog.Record {
	rec := &predlog.Record{
		PredictionID: id,
		Time:         at,
		ModelVersion: m.Metadata().Version,
		Role:         predlog.RoleActive,
	}
	rec.SetPrediction(p)
	if sc != nil {
		rec.ScanContext = *sc
	}
	if c.logSpectra && len(spec.Intensities) <= MaxLoggedPoints {
		rec.Spectrum = c.spectrumCopy(spec.Intensities)
		rec.Wavenumbers = c.axisOf(spec.Wavenumbers)
		rec.Release = c.release
	}
	return rec
}

// SpectrumPool bounds the spectrum buffers a Collector keeps for reuse
// once the log has released them: a full batch of the log's
// (predlog.DefaultBatchMax records) returns its buffers together. They
// hold 8 MiB for 2048-point spectra, 32 MiB at MaxLoggedPoints; buffers
// in flight (queued or in a batch) are the log's queue's bound.
const SpectrumPool = predlog.DefaultBatchMax

// spectrumCopy is x as float32, in a released buffer when one is at hand
// (a buffer too short for x, from a model with a shorter axis, is left to
// the garbage collector).
func (c *Collector) spectrumCopy(x []float64) []float32 {
	var out []float32
	select {
	case buf := <-c.spectra:
		if cap(buf) >= len(x) {
			out = buf[:len(x)]
		}
	default:
	}
	if out == nil {
		out = make([]float32, len(x))
	}
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// releaseSpectrum is a logged record's Release: the log is through with
// it, so its spectrum goes back to the pool, unless the pool is full.
func (c *Collector) releaseSpectrum(rec *predlog.Record) {
	if rec.Spectrum == nil {
		return
	}
	select {
	case c.spectra <- rec.Spectrum[:0]:
	default:
	}
	rec.Spectrum = nil
}

// exceeds reports whether T2 or Q is above its 95 % limit.
func exceeds(d *inference.Diagnostics) bool {
	return d.HasT2 && d.ReducedT2 > 1 || d.HasQ && d.HasQLim && d.ReducedQ > 1
}

// explainRequest asks the log's writer for the contributions of m's
// prediction on spec; nil when m cannot give them, the spectrum is
// longer than the log keeps, or MaxPendingExplains are waiting.
func (c *Collector) explainRequest(m inference.Model, spec *inference.Spectrum) *predlog.Explain {
	cm, ok := m.(inference.ContributionModel)
	if !ok || cm.CanExplain() != nil || len(spec.Intensities) > MaxLoggedPoints {
		return nil
	}
	if c.pending.Add(1) > MaxPendingExplains {
		c.pending.Add(-1)
		c.skipped.Add(1)
		return nil
	}
	return &predlog.Explain{
		Model: cm,
		Top:   ExceedanceTop,
		Spectrum: inference.Spectrum{
			Wavenumbers: append([]float64(nil), spec.Wavenumbers...),
			Intensities: append([]float64(nil), spec.Intensities...),
		},
		Done: c.explained,
	}
}

// explained releases a pending Explain request.
func (c *Collector) explained() { c.pending.Add(-1) }

// ExplainsSkipped counts the exceedances logged without contributions
// because MaxPendingExplains were waiting.
func (c *Collector) ExplainsSkipped() int64 { return c.skipped.Load() }

// RecordShadow implements shadow.Sink: the shadow's prediction becomes a
// record beside the active one, with its PredictionID, time and context.
// The spectrum is not stored again: the active record holds it.
func (c *Collector) RecordShadow(_ context.Context, r *shadow.Result) {
	if c.log == nil {
		return
	}
	rec := &predlog.Record{
		PredictionID: r.PredictionID,
		Time:         r.Time,
		ModelVersion: r.ShadowVersion,
		Role:         predlog.RoleShadow,
	}
	rec.SetPrediction(&r.Shadow)
	rec.ScanContext = r.Context
	c.log.Record(rec)
}

// loggedAxis is an axis as it came (float64) and as the log stores it.
type loggedAxis struct {
	wn    []byte // the float64 values' bytes
	float []float32
}

// axisOf returns the float32 axis of wn, shared with the previous
// spectrum's when it is the same: the same bytes, compared as bytes (a
// rig sends the same axis with every scan, and a byte comparison costs a
// fraction of a float conversion).
func (c *Collector) axisOf(wn []float64) []float32 {
	b := floatBytes(wn)
	if a := c.axis.Load(); a != nil && bytes.Equal(a.wn, b) {
		return a.float
	}
	a := &loggedAxis{wn: bytes.Clone(b), float: toFloat32(wn)}
	c.axis.Store(a)
	return a.float
}

// floatBytes is x's memory as bytes, for comparison only.
func floatBytes(x []float64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
