package pglab

import (
	"context"
	"time"

	"ramanserve/evidence/reconcile"
	"ramanserve/platform/pgdb"
)

// The exported methods classify their errors: a database that cannot be
// reached is storeerr.ErrUnavailable (pgdb.Classify), so that the server
// answers STORE_UNAVAILABLE, retryable, instead of a failure of the
// request itself. The work is done by the unexported methods.

// Upsert is upsert, its database failures classified (see classify).
func (s *Store) Upsert(ctx context.Context, results []reconcile.LabResult) (int, error) {
	v, err := s.upsert(ctx, results)
	return v, pgdb.Classify(err)
}

// Range is rangeOf, its database failures classified (see classify).
func (s *Store) Range(ctx context.Context, since, until time.Time, limit int) ([]reconcile.LabResult, error) {
	v, err := s.rangeOf(ctx, since, until, limit)
	return v, pgdb.Classify(err)
}
