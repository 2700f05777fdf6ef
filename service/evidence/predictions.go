package evidence

import (
	"context"
	"errors"
	"fmt"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
	"ramanserve/registry"
)

// Models opens a registry version without serving it (the registry's
// OpenVersion), for the page of a spectrum it predicted.
type Models interface {
	OpenVersion(ctx context.Context, version string) (inference.Model, error)
}

// Predictions answers the questions about one logged spectrum.
type Predictions struct {
	log    predlog.Reader
	models Models
}

// NewPredictions returns the use cases over the log and the registry.
func NewPredictions(log predlog.Reader, models Models) *Predictions {
	return &Predictions{log: log, models: models}
}

// Spectrum is every logged record of one spectrum: the active record
// first (it holds the spectrum, when logged), then the shadow's and the
// re-scoring jobs'.
type Spectrum struct {
	ID      predlog.PredictionID
	Records []predlog.Record
}

// Logged returns the logged spectrum of the active record, nil when the
// log kept none.
func (s *Spectrum) Logged() *predlog.Record {
	for i := range s.Records {
		if r := &s.Records[i]; r.Spectrum != nil {
			return r
		}
	}
	return nil
}

// Get reads every record of one spectrum; predlog.ErrPredictionNotFound
// when the log holds none.
func (p *Predictions) Get(ctx context.Context, id predlog.PredictionID) (Spectrum, error) {
	recs, err := p.log.ByPrediction(ctx, id)
	if err != nil {
		return Spectrum{}, err
	}
	if len(recs) == 0 {
		return Spectrum{}, fmt.Errorf("%w: %s", predlog.ErrPredictionNotFound, id)
	}
	return Spectrum{ID: id, Records: recs}, nil
}

// SpectrumReport is what the page of one spectrum is drawn from: its
// records and, when the spectrum was logged and the model that predicted
// it is still in the registry, the prediction laid out variable by
// variable (recomputed from the logged float32 spectrum, so its figures
// may differ from the logged ones in the last digits). Missing says why
// there is no Explanation.
type SpectrumReport struct {
	Spectrum
	Explanation *inference.Explanation
	Limits      Limits
	Missing     string
}

// Limits are the model's 95 % limits of T2 and Q (Has* false when the
// model has none or could not be opened).
type Limits struct {
	T2, Q       float64
	HasT2, HasQ bool
}

// Report reads one spectrum's records and explains its active
// prediction; predlog.ErrPredictionNotFound when the log holds none.
func (p *Predictions) Report(ctx context.Context, id predlog.PredictionID) (SpectrumReport, error) {
	s, err := p.Get(ctx, id)
	if err != nil {
		return SpectrumReport{}, err
	}
	r := SpectrumReport{Spectrum: s}
	logged := s.Logged()
	version := s.Records[0].ModelVersion
	if logged != nil {
		version = logged.ModelVersion
	}
	m, err := p.models.OpenVersion(ctx, version)
	switch {
	case errors.Is(err, registry.ErrModelNotFound):
		r.Missing = fmt.Sprintf("Version %s is no longer in the registry: the spectrum cannot be laid out against its model.", version)
		return r, nil
	case err != nil:
		return SpectrumReport{}, err
	}
	if pm, ok := m.(interface {
		Limits() (float64, bool, float64, bool)
	}); ok {
		r.Limits.T2, r.Limits.HasT2, r.Limits.Q, r.Limits.HasQ = pm.Limits()
	}
	if logged == nil {
		r.Missing = "The log kept no spectrum of this prediction (the server runs without -log-spectra): the spectrum, its residual and the contribution of every variable cannot be drawn."
		return r, nil
	}
	ex, ok := m.(inference.SpectrumExplainer)
	if !ok || ex.CanExplain() != nil {
		r.Missing = fmt.Sprintf("Version %s cannot lay its predictions out variable by variable (it has no T2 nor Q, or no wavenumber axis).", version)
		return r, nil
	}
	spec := inference.Spectrum{Wavenumbers: toFloat64(logged.Wavenumbers), Intensities: toFloat64(logged.Spectrum)}
	e, err := ex.ExplainSpectrum(&spec)
	if err != nil {
		r.Missing = fmt.Sprintf("Version %s refuses the logged spectrum now: %v.", version, err)
		return r, nil
	}
	r.Explanation = e
	return r, nil
}

func toFloat64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}
