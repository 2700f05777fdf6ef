package reconcile

import (
	"math"
	"time"

	"ramanserve/inference"
)

// Limits of a lab post. A post over any of them is refused as a whole
// before anything is stored: they bound what a client can make the
// parser allocate and what one post can make the matcher look up.
const (
	// MaxRecords is the most records one post may carry.
	MaxRecords = 10000
	// MaxInputBytes is the largest body the parsers read (about 400 bytes
	// per record at MaxRecords).
	MaxInputBytes = 4 << 20
	// MaxIDBytes bounds batch_id and lab_sample_id, in bytes of UTF-8.
	MaxIDBytes = inference.MaxContextTextBytes
	// MaxConcentration is the largest concentration accepted, in g/L: a
	// kilogram per millilitre, far beyond any real sample, low enough
	// that the statistics' sums of squares cannot overflow.
	MaxConcentration = 1e6
	// MaxScanSeq is the largest scan_seq accepted: 2^53, the largest
	// integer the prediction channel's float64 scan_seq carries exactly.
	MaxScanSeq = 1 << 53
)

// LabRecord is one lab result as posted: the sample's batch, the spectrum
// it belongs to (by scan_seq, or by the time the sample was drawn), the
// measured concentrations and the lab's own id for the sample.
type LabRecord struct {
	// BatchID is the batch_id of the predictions the sample belongs to.
	BatchID string
	// ScanSeq is the scan_seq of the spectrum taken of this sample; it
	// is meaningful only if HasScanSeq.
	ScanSeq    int64
	HasScanSeq bool
	// SampledAt is when the sample was drawn; the zero time if absent.
	SampledAt time.Time
	// Lab holds the measured concentrations in g/L (at least one valid).
	Lab inference.Breakdown
	// LabSampleID is the lab's id for the sample, unique within a post;
	// a later post with the same id replaces this record.
	LabSampleID string
}

// countValid is how many analytes of b are valid.
func countValid(b inference.Breakdown) int {
	n := 0
	for _, v := range b.Valid {
		if v {
			n++
		}
	}
	return n
}

// finiteConcentration reports whether x is a concentration a lab record
// may carry.
func finiteConcentration(x float64) bool {
	return !math.IsNaN(x) && x >= 0 && x <= MaxConcentration
}
