// Package batches turns the prediction log's records of one batch into
// its trajectory (concentrations, confidence, T² and Q against the
// batch's maturity), and the trajectories of reference batches, the ones
// people marked as good, into control bands: at each maturity, the mean
// of the reference batches ± 3 standard deviations.
//
// Alignment: each reference batch is interpolated linearly onto one
// common grid of GridPoints maturities, evenly spaced from the smallest
// to the largest maturity any reference reaches. A batch contributes to
// a grid point only inside its own range (no extrapolation), and a band
// exists at a grid point where at least MinBandBatches batches
// contribute. A point of the batch under review is compared with the
// band interpolated linearly between the two grid points around its
// maturity; outside the band's range it is not judged.
//
// Everything is bounded: a trajectory holds at most MaxPoints points,
// at most MaxReferences batches are marked, and the bands are built from
// one reference trajectory at a time, keeping only its series.
//
// The reference marks are kept in a ReferenceStore; referencetest is the
// contract every implementation passes.
package batches

import (
	"errors"
	"math"
	"slices"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/inference"
)

// Bounds.
const (
	// MaxPoints is the most points a trajectory holds: the first
	// MaxPoints active records of the batch (about 3 MB read).
	MaxPoints = predlog.MaxPageLimit
	// GridPoints is the size of the common maturity grid of the bands.
	GridPoints = 200
	// MinBandBatches is how many reference batches must cover a maturity
	// for the band to exist there: a standard deviation needs two.
	MinBandBatches = 2
	// BandWidth is the band's half-width in standard deviations.
	BandWidth = 3
)

// ErrBatchNotFound means the log holds no active record of the batch.
var ErrBatchNotFound = errors.New("batch not found in the prediction log")

// Maturity is how far a batch has come at a point.
type Maturity uint8

const (
	// ByTime: seconds since the batch's first spectrum.
	ByTime Maturity = iota
	// ByScanSeq: the scan_seq the rig sent (points without one are left
	// out).
	ByScanSeq
)

// String is the contract's name of m.
func (m Maturity) String() string {
	if m == ByScanSeq {
		return "scan_seq"
	}
	return "time"
}

// ParseMaturity maps a contract name to a Maturity ("" is ByTime).
func ParseMaturity(name string) (Maturity, bool) {
	switch name {
	case "", "time":
		return ByTime, true
	case "scan_seq":
		return ByScanSeq, true
	}
	return 0, false
}

// Series are the quantities a trajectory follows and a band bounds.
type Series int

const (
	SeriesEPA Series = iota
	SeriesDHA
	SeriesDPA
	SeriesT2
	SeriesQ
	NumSeries
)

// String names the series as the page and the contract do.
func (s Series) String() string {
	switch s {
	case SeriesEPA, SeriesDHA, SeriesDPA:
		return inference.Analyte(s).String()
	case SeriesT2:
		return "T2"
	case SeriesQ:
		return "Q"
	}
	return "unknown"
}

// Point is one active record of the batch.
type Point struct {
	PredictionID predlog.PredictionID
	Time         time.Time
	Maturity     float64
	ModelVersion string
	// Values holds the series (concentrations in g/L, reduced T² and Q);
	// Has says which the record carries.
	Values     [NumSeries]float64
	Has        [NumSeries]bool
	Confidence inference.Breakdown
	ScanSeq    float64
	HasScanSeq bool
}

// Trajectory is a batch's points in maturity order.
type Trajectory struct {
	BatchID  string
	Maturity Maturity
	// Start is the time of the batch's first spectrum.
	Start  time.Time
	Points []Point
	// Truncated: the batch has more than MaxPoints active records; the
	// trajectory holds the first MaxPoints.
	Truncated bool
	// Unplaced counts records left out for want of a maturity (no
	// scan_seq under ByScanSeq).
	Unplaced int
}

// FromRecords builds the trajectory of batchID from its active records
// in time order (a predlog page).
func FromRecords(batchID string, m Maturity, recs []predlog.Record, truncated bool) Trajectory {
	t := Trajectory{BatchID: batchID, Maturity: m, Truncated: truncated, Points: make([]Point, 0, len(recs))}
	if len(recs) > 0 {
		t.Start = recs[0].Time
	}
	for i := range recs {
		r := &recs[i]
		p := Point{PredictionID: r.PredictionID, Time: r.Time, ModelVersion: r.ModelVersion,
			Confidence: r.Confidence, ScanSeq: r.ScanSeq, HasScanSeq: r.HasScanSeq}
		switch m {
		case ByScanSeq:
			if !r.HasScanSeq {
				t.Unplaced++
				continue
			}
			p.Maturity = r.ScanSeq
		default:
			p.Maturity = r.Time.Sub(t.Start).Seconds()
		}
		for a := range inference.NumAnalytes {
			p.Values[a], p.Has[a] = r.Concentrations.Value[a], r.Concentrations.Valid[a]
		}
		p.Values[SeriesT2], p.Has[SeriesT2] = r.ReducedT2, r.HasReducedT2
		p.Values[SeriesQ], p.Has[SeriesQ] = r.ReducedQ, r.HasReducedQ
		for s := range NumSeries {
			if p.Has[s] && !finite(p.Values[s]) {
				p.Has[s] = false
			}
		}
		t.Points = append(t.Points, p)
	}
	// Records come in time order; a scan_seq need not follow it.
	slices.SortStableFunc(t.Points, func(a, b Point) int {
		switch {
		case a.Maturity < b.Maturity:
			return -1
		case a.Maturity > b.Maturity:
			return 1
		}
		return 0
	})
	return t
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
