// Package predlog is the prediction log: every prediction the server makes
// (active model, shadow model, or a re-scoring job) is recorded with its
// context, so that a candidate model can be compared with the active one and
// both can be reconciled with the lab's HPLC results hours later.
//
// Callers see two small interfaces: Recorder for the hot path (hand a record
// to a bounded queue, never block) and Reader for the management endpoints.
// Writer implements both over a Store, the storage: package sqlitelog keeps
// it in one embedded SQLite file; a fleet may put another store
// (PostgreSQL) behind the same interface, which predlogtest checks.
//
// The path of a record: Record puts a pointer on a bounded channel (no
// allocation, no wait; a full queue drops the record and counts it). One
// writer goroutine hands the queued records to the store in batches
// (BatchMax records, or whatever arrived within CommitInterval, 100 ms by
// default), each batch one Store.Append, and between batches deletes old
// records in chunks of DeleteChunk for the age and size bounds. Readers go
// to the store directly.
//
// What kill -9 keeps: every batch whose Append returned, that is every
// record accepted more than CommitInterval plus one commit's time before
// the kill, as far as the store keeps what it committed (sqlitelog does).
package predlog

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"ramanserve/inference"
)

// Role says on whose behalf a record was made.
type Role uint8

// The roles of a record. The values are stored in the database: never
// renumber them.
const (
	// RoleActive: the active model answered the rig with this prediction.
	RoleActive Role = 1
	// RoleShadow: the shadow model scored the same spectrum off the reply
	// path; its record carries the active record's PredictionID.
	RoleShadow Role = 2
	// RoleRescore: a re-scoring job applied a staged or archived model to a
	// logged spectrum; its record carries the original PredictionID and
	// the original Time.
	RoleRescore Role = 3
)

// String returns the contract name of the role.
func (r Role) String() string {
	switch r {
	case RoleActive:
		return "active"
	case RoleShadow:
		return "shadow"
	case RoleRescore:
		return "rescore"
	}
	return "unknown"
}

// ParseRole maps a contract name back to a Role.
func ParseRole(name string) (Role, bool) {
	switch name {
	case "active":
		return RoleActive, true
	case "shadow":
		return RoleShadow, true
	case "rescore":
		return RoleRescore, true
	}
	return 0, false
}

// PredictionID names one spectrum's predictions: the active record, the
// shadow record and any re-scoring records of the same spectrum share it.
// NewPredictionID makes time-ordered (version 7) UUIDs, which keep the
// index on it appending at its right edge.
type PredictionID = uuid.UUID

// NewPredictionID returns a fresh PredictionID: a version 7 UUID of the
// current Unix millisecond and 74 random bits. It runs on the prediction
// channel's hot path, so it neither allocates nor locks: the random bits
// come from the runtime's per-thread generator (math/rand/v2, seeded from
// the system), unlike uuid.NewV7, which reads through an interface under a
// global lock. Ids made in the same millisecond are not ordered among
// themselves; the log orders records by time and row id, not by this id.
func NewPredictionID() PredictionID {
	var id PredictionID
	ms := uint64(time.Now().UnixMilli())
	binary.BigEndian.PutUint64(id[0:8], ms<<16) // 48 bits of time, then 16 overwritten below
	binary.BigEndian.PutUint16(id[6:8], 0x7000|uint16(rand.Uint32())&0x0fff)
	binary.BigEndian.PutUint64(id[8:16], 0x8000000000000000|rand.Uint64()&0x3fffffffffffffff)
	return id
}

// Record is one logged prediction. Optional context fields have a Has*
// flag, as on the prediction channel; unknown analytes are left invalid in
// Concentrations and Confidence and stored as NULL.
type Record struct {
	// ID is the store's row id, set when the record is read back (0 before).
	ID int64

	PredictionID PredictionID
	Time         time.Time
	ModelVersion string
	Role         Role

	Concentrations inference.Breakdown
	Confidence     inference.Breakdown

	// ReducedT2 and ReducedQ are the diagnostics divided by their 95 %
	// limits; Has* false when the model cannot compute them.
	ReducedT2    float64
	ReducedQ     float64
	HasReducedT2 bool
	HasReducedQ  bool

	// ScanContext is where and how the rig took the spectrum (batch_id,
	// port, column_index, scan_seq, channel, integration_ms).
	inference.ScanContext

	// Spectrum holds the intensities when spectra logging is on, on the
	// active record only (the shadow record of the same PredictionID
	// refers to it). Wavenumbers is the axis; both are stored as float32.
	// Nil when not logged, or when a query did not ask for it.
	Spectrum    []float32
	Wavenumbers []float32

	// Contributions are the prediction's T2 and Q contributions, as the
	// reply carried them or as the writer computed them for an
	// exceedance (Explain); nil when none are stored. Stores keep them
	// as one blob (EncodeContributions); ByPrediction reads them back,
	// the other reads leave them nil.
	Contributions *inference.Contributions

	// Explain, when set, asks the log's writer to compute Contributions
	// before it stores the record, off the reply path. It is not stored.
	Explain *Explain

	// Release, when set, is called once by the log when it is through
	// with the record: after the batch holding it committed or failed, or
	// when it was dropped (by Record, by Close). Nothing in the log reads
	// the record or its slices after that, so the caller may take back
	// buffers it lent the record (a pooled Spectrum). A record RecordWait
	// refused is still its caller's, and is not released. It is not
	// stored.
	Release func(*Record)
}

// release calls rec.Release, if set.
func release(rec *Record) {
	if rec.Release != nil {
		rec.Release(rec)
	}
}

// Explain is what the writer needs to compute a record's contributions:
// the model that made the prediction (held, so a model swapped out since
// is still at hand) and a copy of the spectrum it predicted on.
type Explain struct {
	Model    inference.ContributionModel
	Top      int
	Spectrum inference.Spectrum
	// Done, when set, is called once the writer is through with the
	// request (computed or failed): the caller bounds how many wait.
	Done func()
}

// Recorder is the hot path: Record hands rec to a bounded queue and returns
// at once. The store owns rec from then on (the caller must not modify it
// or its slices, and gets them back through rec.Release). Record returns
// false when the record was dropped because the queue was full or the log
// is closing (rec.Release has then been called); Dropped counts those.
type Recorder interface {
	Record(rec *Record) bool
	Dropped() uint64
}

// Filter selects records for Page. Zero fields do not filter. The time
// range is half-open: Since <= Time < Until.
type Filter struct {
	BatchID      string
	HasBatchID   bool
	ModelVersion string
	Role         Role // 0: every role
	Since, Until time.Time
	// Limit caps the page; 0 or more than MaxPageLimit means MaxPageLimit
	// (MaxSpectraPageLimit with WithSpectra).
	Limit int
	// Cursor continues after the last record of an earlier page with the
	// same filter ("" for the first page). It is opaque to callers.
	Cursor string
	// WithSpectra reads the logged spectra too (for re-scoring); records
	// without one are skipped. Records of one page that share an axis
	// share its Wavenumbers slice: treat it as read-only.
	WithSpectra bool
	// WithContributions reads the stored contributions too (a copy of
	// the whole log needs them; a listing does not).
	WithContributions bool
}

// MaxPageLimit is the largest page Page returns; MaxSpectraPageLimit the
// largest with spectra (8 kB each decoded, for 2048 points), so that one
// request cannot make the server hold more than a few MB of spectra.
const (
	MaxPageLimit        = 10000
	MaxSpectraPageLimit = 500
)

// Page is one page of records in (Time, ID) order. Next is the cursor of
// the following page, "" when this was the last.
type Page struct {
	Records []Record
	Next    string
}

// Reader answers the queries of the management endpoints.
type Reader interface {
	// Page lists records in time order, a page at a time.
	Page(ctx context.Context, f Filter) (Page, error)
	// Nearest returns the active record of batchID closest in time to at,
	// within window either side. found is false when there is none.
	Nearest(ctx context.Context, batchID string, at time.Time, window time.Duration) (rec Record, found bool, err error)
	// ByScanSeq returns the active record of batchID with that scan_seq
	// (the latest, if the rig reused the number).
	ByScanSeq(ctx context.Context, batchID string, scanSeq float64) (rec Record, found bool, err error)
	// ByPrediction returns every record of one spectrum: active, shadow
	// and re-scoring, in Role then ID order.
	ByPrediction(ctx context.Context, id PredictionID) ([]Record, error)
	// ByPredictions reads the records of many spectra in one query, for
	// a report over tens of thousands of them that would otherwise pay a
	// round trip each. It calls use once for each spectrum of ids the
	// store holds records of, with that spectrum's records in Role then
	// ID order; spectra come in no promised order, and an id given twice
	// is read once. The records carry ID, PredictionID, ModelVersion,
	// Role and Concentrations only: comparing models with the lab needs
	// no more, and every column is a cost per row at tens of thousands of
	// rows (Time, Confidence, the scan context and the diagnostics are
	// ByPrediction's). use must not
	// keep recs, which the store reuses; an error from use ends the read
	// and is returned. Records are handed over as they are read, so a
	// large read holds one spectrum's at a time.
	ByPredictions(ctx context.Context, ids []PredictionID, use func(recs []Record) error) error
}

// Log is the whole prediction log as the server holds it.
type Log interface {
	Recorder
	Reader
	Stats() Stats
	// Close stops accepting records, commits those queued, and releases
	// the store. It gives up when ctx ends (the queued records are then
	// counted as dropped).
	Close(ctx context.Context) error
}

// Stats are the log's counters since it was opened, for metrics and the
// health reply.
type Stats struct {
	Queued      int    // records waiting in the queue now
	QueueCap    int    // the queue's capacity
	Committed   uint64 // records committed to the store
	Dropped     uint64 // records refused because the queue was full or the log closing
	WriteFailed uint64 // records lost because their batch failed to commit (disk full, I/O error)
	Deleted     uint64 // records removed by retention
	SizeBytes   int64  // the store's size (Size.Bytes) after the last check
	// StoreDown: a batch is waiting for the store to come back (the
	// fleet's database cannot be reached); records queue meanwhile.
	StoreDown bool
	// LastCommitAt is when the latest batch committed (by the log's
	// clock); zero before the first.
	LastCommitAt time.Time
	// OldestWait is how long the oldest record not yet committed has
	// waited (0: none waits); past Promise the log is behind its promise.
	OldestWait time.Duration
	// Promise is Options.Promise: the longest a record should wait.
	Promise time.Duration
	// Raised counts the times the writer's thread was raised from idle to
	// ordinary priority to keep the promise.
	Raised uint64
	// Explained counts the records whose contributions the writer
	// computed (Record.Explain); ExplainFailed those it could not.
	Explained, ExplainFailed uint64
}

// Behind reports whether the oldest waiting record is past the promise.
func (s Stats) Behind() bool { return s.Promise > 0 && s.OldestWait > s.Promise }

// SetPrediction copies a model's prediction into rec: concentrations,
// confidence, and the reduced T² and Q when the model computes them.
func (rec *Record) SetPrediction(p *inference.Prediction) {
	rec.Concentrations = p.Concentrations
	rec.Confidence = p.Confidence
	d := &p.Diagnostics
	rec.ReducedT2, rec.HasReducedT2 = 0, false
	rec.ReducedQ, rec.HasReducedQ = 0, false
	if d.HasT2 {
		rec.ReducedT2, rec.HasReducedT2 = d.ReducedT2, true
	}
	if d.HasQ && d.HasQLim {
		rec.ReducedQ, rec.HasReducedQ = d.ReducedQ, true
	}
}

// ErrPredictionNotFound: the log holds no record of a prediction id
// (never logged, or deleted by retention).
var ErrPredictionNotFound = errors.New("prediction not found in the log")
