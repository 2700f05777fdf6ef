// Package trainer fits PLS2 models from labelled Raman spectra: the data
// set store filled by the streaming CSV reader (package trainer/csvdata),
// NIPALS PLS that reproduces scikit-learn's PLSRegression, component
// selection by K-fold cross-validation, and the asynchronous job manager.
// It knows nothing of HTTP; package server maps its errors to codes.
package trainer

import (
	"fmt"

	"ramanserve/inference"
)

// NumWavenumbers is the number of intensity columns of the contract's
// training CSV (wn_0 .. wn_2047).
const NumWavenumbers = 2048

// DefaultTargets are the label columns of the training CSV, in order.
var defaultTargets = [...]inference.Analyte{inference.EPA, inference.DHA, inference.DPA}

// DefaultTargets returns EPA, DHA, DPA: the label columns of the training
// CSV in order.
func DefaultTargets() []inference.Analyte {
	return append([]inference.Analyte(nil), defaultTargets[:]...)
}

// Default axis of the instrument: the CSV carries only column names
// (wn_0..wn_2047), not wavenumbers, so the axis is configuration. The
// synthetic generator uses the same axis.
const (
	DefaultAxisLow  = 200.0  // cm-1, wn_0
	DefaultAxisHigh = 3200.0 // cm-1, wn_2047
)

// LinearAxis returns n wavenumbers evenly spaced from lo to hi inclusive.
func LinearAxis(lo, hi float64, n int) []float64 {
	axis := make([]float64, n)
	if n == 1 {
		axis[0] = lo
		return axis
	}
	step := (hi - lo) / float64(n-1)
	for i := range axis {
		axis[i] = lo + step*float64(i)
	}
	axis[n-1] = hi
	return axis
}

// DefaultWavenumbers returns the default 2048-point axis, 200..3200 cm-1.
func DefaultWavenumbers() []float64 {
	return LinearAxis(DefaultAxisLow, DefaultAxisHigh, NumWavenumbers)
}

// rowsPerBlock is the number of spectra per storage block. Blocks of fixed
// size let the data set grow without the 2x copy of append's doubling: the
// memory held is the numeric matrix plus at most one partly filled block
// (128 x 2048 x 8 B = 2 MiB).
const rowsPerBlock = 128

// Dataset holds n labelled spectra: X (n x p intensities) in fixed-size
// row blocks, Y (n x q labels) and the scan ids. It is filled once (by the
// CSV reader or a test) and read-only afterwards; Train never modifies it.
type Dataset struct {
	p, q    int
	n       int
	blocks  [][]float64
	labels  []float64 // n*q, row-major
	scanIDs []string
}

// NewDataset returns an empty data set with p features and q targets.
func NewDataset(p, q int) *Dataset {
	if p <= 0 || q <= 0 {
		panic(fmt.Sprintf("trainer.NewDataset: bad shape p=%d q=%d", p, q))
	}
	return &Dataset{p: p, q: q}
}

// Len is the number of rows n.
func (d *Dataset) Len() int { return d.n }

// Features is the number of intensity columns p.
func (d *Dataset) Features() int { return d.p }

// NumTargets is the number of label columns q.
func (d *Dataset) NumTargets() int { return d.q }

// Append adds one row and returns the slices to fill with its p
// intensities and q labels. The slices stay valid and are owned by the data
// set; callers fill them before the next Append.
func (d *Dataset) Append(scanID string) (x, y []float64) {
	blk, off := d.n/rowsPerBlock, d.n%rowsPerBlock
	if blk == len(d.blocks) {
		d.blocks = append(d.blocks, make([]float64, rowsPerBlock*d.p))
	}
	d.n++
	d.labels = append(d.labels, make([]float64, d.q)...)
	d.scanIDs = append(d.scanIDs, scanID)
	return d.blocks[blk][off*d.p : (off+1)*d.p : (off+1)*d.p], d.labels[(d.n-1)*d.q : d.n*d.q : d.n*d.q]
}

// AppendRow copies x (length p) and y (length q) into a new row.
func (d *Dataset) AppendRow(scanID string, x, y []float64) {
	if len(x) != d.p || len(y) != d.q {
		panic(fmt.Sprintf("trainer.Dataset.AppendRow: got %d features and %d labels, want %d and %d", len(x), len(y), d.p, d.q))
	}
	dx, dy := d.Append(scanID)
	copy(dx, x)
	copy(dy, y)
}

// Row returns the intensities of row i (read-only view).
func (d *Dataset) Row(i int) []float64 {
	blk, off := i/rowsPerBlock, i%rowsPerBlock
	return d.blocks[blk][off*d.p : (off+1)*d.p : (off+1)*d.p]
}

// Labels returns the labels of row i (read-only view).
func (d *Dataset) Labels(i int) []float64 {
	return d.labels[i*d.q : (i+1)*d.q : (i+1)*d.q]
}

// ScanID returns the scan id of row i.
func (d *Dataset) ScanID(i int) string { return d.scanIDs[i] }

// NumericBytes is the size of the numeric matrix proper, (p+q)*n*8 bytes:
// the yardstick for the upload memory budget.
func (d *Dataset) NumericBytes() int64 {
	return int64(d.n) * int64(d.p+d.q) * 8
}
