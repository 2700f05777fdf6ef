package pgjobs

import (
	"context"
	"io"
	"time"

	"ramanserve/platform/pgdb"
	"ramanserve/trainer/jobs"
)

// The exported methods classify their errors: a database that cannot be
// reached is storeerr.ErrUnavailable (pgdb.Classify), so that the server
// answers STORE_UNAVAILABLE, retryable, instead of a failure of the
// request itself. The work is done by the unexported methods.

// Claim is claim, its database failures classified (see classify).
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration, start func(*jobs.Job)) (*jobs.Job, error) {
	v, err := s.claim(ctx, owner, lease, start)
	return v, pgdb.Classify(err)
}

// Hold is hold, its database failures classified (see classify).
func (s *Store) Hold(ctx context.Context, j *jobs.Job, owner string, lease time.Duration) error {
	return pgdb.Classify(s.hold(ctx, j, owner, lease))
}

// Renew is renew, its database failures classified (see classify).
func (s *Store) Renew(ctx context.Context, id, owner string, lease time.Duration) error {
	return pgdb.Classify(s.renew(ctx, id, owner, lease))
}

// SaveLeased is saveLeased, its database failures classified (see classify).
func (s *Store) SaveLeased(ctx context.Context, j *jobs.Job, owner string) error {
	return pgdb.Classify(s.saveLeased(ctx, j, owner))
}

// Load is load, its database failures classified (see classify).
func (s *Store) Load(ctx context.Context, id string) (*jobs.Job, error) {
	v, err := s.load(ctx, id)
	return v, pgdb.Classify(err)
}

// Update is update, its database failures classified (see classify).
func (s *Store) Update(ctx context.Context, id string, change func(*jobs.Job) error) (*jobs.Job, error) {
	v, err := s.update(ctx, id, change)
	return v, pgdb.Classify(err)
}

// Save is save, its database failures classified (see classify).
func (s *Store) Save(ctx context.Context, j *jobs.Job) error {
	return pgdb.Classify(s.save(ctx, j))
}

// LoadAll is loadAll, its database failures classified (see classify).
func (s *Store) LoadAll(ctx context.Context) ([]*jobs.Job, []error, error) {
	a, b, err := s.loadAll(ctx)
	return a, b, pgdb.Classify(err)
}

// Put is put, its database failures classified (see classify).
func (s *Store) Put(ctx context.Context, id string, r io.Reader) error {
	return pgdb.Classify(s.put(ctx, id, r))
}

// Open is open, its database failures classified (see classify).
func (s *Store) Open(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	a, b, err := s.open(ctx, id)
	return a, b, pgdb.Classify(err)
}

// Remove is remove, its database failures classified (see classify).
func (s *Store) Remove(ctx context.Context, id string) error {
	return pgdb.Classify(s.remove(ctx, id))
}
