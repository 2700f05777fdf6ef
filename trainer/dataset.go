// Package trainer fits PLS2 models from labelled Raman spectra: the data
// set store filled by the streaming CSV reader (package trainer/csvdata),
// NIPALS PLS that reproduces scikit-learn's PLSRegression, component
// selection by K-fold cross-validation. The job queue that runs it is
// package trainer/jobs. It knows nothing of HTTP; package server/contract
// maps its errors to codes.
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
// (128 x 2048 x 8 B = 2 MiB). Labels and scan ids grow in blocks of the
// same rows, for the same reason.
const rowsPerBlock = 128

// Charger is what a data set charges its memory to before allocating it:
// a shared budget, or an upload's share of one. TryAcquire charges n bytes
// and reports false, charging nothing, when they do not fit.
type Charger interface {
	TryAcquire(n int64) bool
}

// Dataset holds n labelled spectra: X (n x p intensities), Y (n x q
// labels) and the scan ids, all in fixed-size row blocks. It is filled
// once (by the CSV reader or a test) and read-only afterwards; Train never
// modifies it.
type Dataset struct {
	p, q     int
	n        int
	blocks   [][]float64 // rowsPerBlock*p intensities each
	lblocks  [][]float64 // rowsPerBlock*q labels each, row-major
	idblocks [][]string  // rowsPerBlock scan ids each

	charger Charger
	charged int64
}

// NewDataset returns an empty data set with p features and q targets whose
// memory is not charged anywhere (tests, synthetic data).
func NewDataset(p, q int) *Dataset {
	if p <= 0 || q <= 0 {
		panic(fmt.Sprintf("trainer.NewDataset: bad shape p=%d q=%d", p, q))
	}
	return &Dataset{p: p, q: q}
}

// NewChargedDataset returns an empty data set that charges c before every
// allocation (see ChargePerRow), so an upload can be refused as soon as
// its matrix would cross the budget, before the memory is taken.
func NewChargedDataset(p, q int, c Charger) *Dataset {
	d := NewDataset(p, q)
	d.charger = c
	return d
}

// Per-row allowances beyond the numbers: a scan id's string header in its
// block, and a reader's duplicate index entry (map slot and hash bucket
// share). The id's own bytes are charged as they come.
const (
	idHeaderBytes = 16
	idIndexBytes  = 64
)

// ChargePerRow is what a charged data set charges for each row beyond the
// scan id's bytes: the row's storage (8 bytes per intensity and label, the
// id's header and index entry) and what one training fit needs for it
// (FitBytesPerRow), so that a data set that was accepted can always be
// trained. It is charged a block of rowsPerBlock rows at a time.
func ChargePerRow(p, q int) int64 {
	return int64(p+q)*8 + idHeaderBytes + idIndexBytes + FitBytesPerRow(p, q)
}

// Len is the number of rows n.
func (d *Dataset) Len() int { return d.n }

// Features is the number of intensity columns p.
func (d *Dataset) Features() int { return d.p }

// NumTargets is the number of label columns q.
func (d *Dataset) NumTargets() int { return d.q }

// Charged is the number of bytes the data set has charged to its Charger;
// whoever owns the data set releases them when it is dropped.
func (d *Dataset) Charged() int64 { return d.charged }

// Append adds one row and returns the slices to fill with its p
// intensities and q labels. The slices stay valid and are owned by the data
// set; callers fill them before the next Append. It panics when a charged
// data set is refused memory; readers of untrusted input use TryAppend.
func (d *Dataset) Append(scanID string) (x, y []float64) {
	x, y, err := d.TryAppend(scanID)
	if err != nil {
		panic(err)
	}
	return x, y
}

// TryAppend is Append for a charged data set: when the Charger refuses the
// memory the row needs, nothing is allocated and it returns a
// *MemoryBudgetError.
func (d *Dataset) TryAppend(scanID string) (x, y []float64, err error) {
	blk, off := d.n/rowsPerBlock, d.n%rowsPerBlock
	if err := d.charge(int64(len(scanID))); err != nil {
		return nil, nil, err
	}
	if blk == len(d.blocks) {
		if err := d.charge(rowsPerBlock * ChargePerRow(d.p, d.q)); err != nil {
			return nil, nil, err
		}
		d.blocks = append(d.blocks, make([]float64, rowsPerBlock*d.p))
		d.lblocks = append(d.lblocks, make([]float64, rowsPerBlock*d.q))
		d.idblocks = append(d.idblocks, make([]string, rowsPerBlock))
	}
	d.n++
	d.idblocks[blk][off] = scanID
	return d.blocks[blk][off*d.p : (off+1)*d.p : (off+1)*d.p], d.lblocks[blk][off*d.q : (off+1)*d.q : (off+1)*d.q], nil
}

func (d *Dataset) charge(n int64) error {
	if d.charger == nil || n == 0 {
		return nil
	}
	if !d.charger.TryAcquire(n) {
		e := &MemoryBudgetError{Rows: d.n, Charged: d.charged, Need: n}
		if l, ok := d.charger.(interface{ Limit() int64 }); ok {
			e.Limit = l.Limit()
		}
		return e
	}
	d.charged += n
	return nil
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
	blk, off := i/rowsPerBlock, i%rowsPerBlock
	return d.lblocks[blk][off*d.q : (off+1)*d.q : (off+1)*d.q]
}

// ScanID returns the scan id of row i.
func (d *Dataset) ScanID(i int) string { return d.idblocks[i/rowsPerBlock][i%rowsPerBlock] }

// NumericBytes is the size of the numeric matrix proper, (p+q)*n*8 bytes.
func (d *Dataset) NumericBytes() int64 {
	return int64(d.n) * int64(d.p+d.q) * 8
}
