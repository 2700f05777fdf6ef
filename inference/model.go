// Package inference holds the domain of prediction: models, spectra,
// diagnostics and the model artifact format. It knows nothing of HTTP,
// ZeroMQ or MessagePack; the transport layer in package server maps the
// errors defined here to contract codes.
package inference

import (
	"time"
)

// Analyte identifies one predicted component. The order EPA, DHA, DPA is the
// column order of the training CSV and of every three-target model.
type Analyte int

// The three analytes of the contract, in CSV column order.
const (
	EPA Analyte = iota
	DHA
	DPA
	NumAnalytes = 3
)

// String returns the contract name of the analyte ("EPA", "DHA", "DPA").
func (a Analyte) String() string {
	switch a {
	case EPA:
		return "EPA"
	case DHA:
		return "DHA"
	case DPA:
		return "DPA"
	}
	return "unknown"
}

// ParseAnalyte maps a contract name back to an Analyte.
func ParseAnalyte(name string) (Analyte, bool) {
	switch name {
	case "EPA":
		return EPA, true
	case "DHA":
		return DHA, true
	case "DPA":
		return DPA, true
	}
	return 0, false
}

// Breakdown holds one number per analyte. Valid[k] says whether Value[k] is
// known; unknown entries are left out of JSON and MessagePack replies.
type Breakdown struct {
	Value [NumAnalytes]float64
	Valid [NumAnalytes]bool
}

// Set stores v for analyte a and marks it valid.
func (b *Breakdown) Set(a Analyte, v float64) {
	b.Value[a] = v
	b.Valid[a] = true
}

// Spectrum is one Raman scan as received on the prediction channel.
// Wavenumbers are in cm-1 and must be strictly increasing.
type Spectrum struct {
	Wavenumbers []float64
	Intensities []float64
}

// Diagnostics are the per-prediction multivariate statistics that tell
// whether a spectrum lies inside the calibration domain. Fields whose
// Has* flag is false could not be computed for this model (for example Q
// limits for an imported scikit-learn file, which carries no calibration
// residuals) and are omitted from replies.
type Diagnostics struct {
	HasT2     bool
	T2        float64 // Hotelling T2 of the scores
	T2Limit   float64 // 95 % limit for a new observation
	ReducedT2 float64 // T2 / T2Limit
	Leverage  float64 // 1/n + T2/(n-1)

	HasQ     bool
	Q        float64 // squared prediction error of the spectrum's residual
	HasQLim  bool
	QLimit   float64 // 95 % limit
	ReducedQ float64 // Q / QLimit

	// HasScale: the model carries a scale check (scalecheck.go).
	HasScale     bool
	ReducedScale float64 // z^2 / chi2_0.95(1) of the Raman intensity against the prediction
}

// Prediction is the result of applying a model to one spectrum.
// Concentrations and Confidence are valid for the model's targets only.
type Prediction struct {
	Concentrations Breakdown
	Confidence     Breakdown
	Diagnostics    Diagnostics
}

// Metadata describes a model as reported by GET /model/info and the
// prediction channel's model_info reply.
type Metadata struct {
	Version          string
	Algorithm        string // e.g. "PLS2-NIPALS" or "sklearn.PLSRegression"
	LatentComponents int    // 0 when unknown
	TrainedAt        time.Time
	TrainedSamples   int // 0 when unknown
	RMSE             Breakdown
	R2               Breakdown
	// Wavenumbers is the model's axis (cm-1), one entry per point of the
	// spectrum (more than the model's features when it selects regions).
	Wavenumbers []float64
}

// WavenumberRange returns the lower and upper bound of the axis.
func (m *Metadata) WavenumberRange() (lo, hi float64, ok bool) {
	if len(m.Wavenumbers) == 0 {
		return 0, 0, false
	}
	return m.Wavenumbers[0], m.Wavenumbers[len(m.Wavenumbers)-1], true
}

// Model predicts concentrations from one spectrum. Implementations are
// immutable after construction and safe for concurrent use: the hot swap
// replaces the whole Model, never mutates it.
type Model interface {
	// Metadata returns the model's description. The returned value must
	// not be modified.
	Metadata() *Metadata
	// Targets lists the analytes the model predicts, in output order.
	Targets() []Analyte
	// Predict validates s against the model's axis and fills out. It
	// returns an error wrapping ErrInvalidSpectrum or
	// ErrSpectrumOutOfRange for inputs it cannot apply to.
	Predict(s *Spectrum, out *Prediction) error
}
