package batches

import (
	"context"
	"errors"
	"time"
)

// MaxReferences is the most batches marked as references at once. The
// bands read each reference's trajectory (at most MaxPoints records, one
// at a time) and keep its series (80 bytes a point): at most about 16 MB
// for one page of bands.
const MaxReferences = 20

// ErrReferencesFull means a mark would take the store past
// MaxReferences; nothing was stored.
var ErrReferencesFull = errors.New("reference batches: as many batches as allowed are marked")

// Reference is a batch people marked as good.
type Reference struct {
	BatchID  string
	MarkedAt time.Time
	// MarkedBy is the name of the token that marked it ("" without
	// authentication).
	MarkedBy string
}

// ReferenceStore keeps the reference marks. A mark survives a restart
// and kill -9 once Mark has returned. Implementations are safe for
// concurrent use, also by other processes (replicas) on the same
// storage; referencetest.Run is the contract.
type ReferenceStore interface {
	// Mark records ref. Marking a marked batch again keeps the first
	// mark (its time and name) and returns it with created false. A mark
	// that would take the store past MaxReferences fails with
	// ErrReferencesFull.
	Mark(ctx context.Context, ref Reference) (stored Reference, created bool, err error)
	// Unmark removes batchID's mark; removed is false when it had none.
	Unmark(ctx context.Context, batchID string) (removed bool, err error)
	// References lists the marks in byte order of their batch ids.
	References(ctx context.Context) ([]Reference, error)
}
