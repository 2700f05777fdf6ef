// Package evidence gathers the evidence a model is judged on from the predictions
// the server answers: every active prediction becomes a record of the
// prediction log, and its spectrum is offered to the shadow model, whose
// predictions become records of the log too, under the same PredictionID.
//
// The Collector sits on the prediction channel's hot path, after the
// reply is encoded. It never blocks and takes no lock the management side
// holds: the log and the scorer both hand work to bounded queues and drop
// (and count) what does not fit. It allocates the record itself, and,
// with spectra logging, the spectrum's float32 copy; the wavenumber axis,
// the same for every spectrum of a rig, is converted once and shared.
package evidence

import (
	"context"
	"sync/atomic"
	"time"

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
}

// Collector records the predictions of the active model and of the
// shadow. It is safe for concurrent use.
type Collector struct {
	log        predlog.Recorder
	shadow     Shadow
	logSpectra bool
	// axis is the float32 axis of the latest logged spectrum: records of
	// spectra on the same axis share it (the log treats it as read-only).
	axis atomic.Pointer[[]float32]
}

// New returns a Collector. Its shadow, when set, must be told of it
// through the scorer's Sink (Collector implements shadow.Sink).
func New(opts Options) *Collector {
	return &Collector{log: opts.Log, shadow: opts.Shadow, logSpectra: opts.LogSpectra}
}

// SetShadow sets the scorer the spectra are offered to. It is meant for
// wiring, before the first prediction: the scorer needs the Collector as
// its Sink, and the Collector the scorer.
func (c *Collector) SetShadow(s Shadow) { c.shadow = s }

// Logged records the prediction p that the active model m made for spec
// at time at, with the rig's scan context sc (nil: none), and offers the
// spectrum to the shadow under the same PredictionID. spec, p and sc may
// be reused by the caller as soon as it returns.
func (c *Collector) Logged(at time.Time, m inference.Model, spec *inference.Spectrum, p *inference.Prediction, sc *inference.ScanContext) {
	id := predlog.NewPredictionID()
	if c.log != nil {
		c.log.Record(c.activeRecord(id, at, m, spec, p, sc))
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
		rec.Spectrum = toFloat32(spec.Intensities)
		rec.Wavenumbers = c.axisOf(spec.Wavenumbers)
	}
	return rec
}

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

// axisOf returns the float32 axis of wn, shared with the previous
// spectrum's when it is the same.
func (c *Collector) axisOf(wn []float64) []float32 {
	if p := c.axis.Load(); p != nil && sameAxis(*p, wn) {
		return *p
	}
	a := toFloat32(wn)
	c.axis.Store(&a)
	return a
}

func sameAxis(a []float32, wn []float64) bool {
	if len(a) != len(wn) {
		return false
	}
	for i, w := range wn {
		if a[i] != float32(w) {
			return false
		}
	}
	return true
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
