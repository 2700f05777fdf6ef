// Package training is the training use case the transports call: the job
// queue (package jobs) with uploads that reserve their slot before their
// body is read, and idempotency keys that make a retried upload find the
// job its first attempt created. It knows nothing of HTTP.
package training

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
)

// Once names an upload for an idempotent retry: the client's key and the
// digest of the request as received. The zero value is no key.
type Once struct {
	Key         string
	RequestHash string
}

// Upload is one upload's queue slot. It is the memory budget's charger
// for the data set being parsed, becomes the job's slot on Submit, and is
// given back, with its memory, by Release when the upload fails (Release
// after Submit does nothing).
type Upload interface {
	trainer.Charger
	// Submit queues a job on the parsed data set. With a key (once) that
	// an earlier request with the same digest used, it queues nothing
	// and returns that request's job; with another digest it fails with
	// jobs.ErrKeyReused, and jobs.ErrKeyInUse while the earlier request
	// has not recorded its job yet.
	Submit(ctx context.Context, ds *trainer.Dataset, meta jobs.Meta, once Once) (jobs.Job, error)
	Release()
}

// claimGrace is how long a claimed key may name a job not recorded yet
// before the claim is taken for one whose process died between the two
// writes: far longer than a job record takes to write.
const claimGrace = 30 * time.Second

// Service is the job queue: Get, List and Cancel are the queue's own.
type Service struct {
	*jobs.Manager
	keys   jobs.KeyStore
	limits jobs.KeyLimits
	now    func() time.Time
}

// New returns the service over a job queue and the store of its
// idempotency keys (nil: keys are ignored, every request queues a job).
func New(queue *jobs.Manager, keys jobs.KeyStore) *Service {
	return &Service{Manager: queue, keys: keys, limits: jobs.DefaultKeyLimits(), now: time.Now}
}

// Reserve takes a queue slot for an upload before its body is read. It
// fails at once with jobs.ErrQueueFull when none is free.
func (s *Service) Reserve(ctx context.Context) (Upload, error) {
	r, err := s.Manager.Reserve(ctx)
	if err != nil {
		return nil, err
	}
	return upload{Reservation: r, s: s}, nil
}

type upload struct {
	*jobs.Reservation
	s *Service
}

func (u upload) Submit(ctx context.Context, ds *trainer.Dataset, meta jobs.Meta, once Once) (jobs.Job, error) {
	if once.Key == "" || u.s.keys == nil {
		return u.s.SubmitReserved(ctx, u.Reservation, ds, meta)
	}
	// Two rounds: the second after taking over a claim whose job was
	// never recorded.
	for round := 0; round < 2; round++ {
		id := uuid.NewString()
		now := u.s.now()
		held, claimed, err := u.s.keys.ClaimKey(ctx, jobs.KeyRecord{Key: once.Key, RequestHash: once.RequestHash, JobID: id, CreatedAt: now}, u.s.limits)
		if err != nil {
			return jobs.Job{}, fmt.Errorf("idempotency key: %w", err)
		}
		if claimed {
			j, err := u.s.SubmitReservedAs(ctx, u.Reservation, ds, meta, id)
			if err != nil {
				// Nothing was queued: the key is free for the retry.
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if ferr := u.s.keys.ForgetKey(fctx, once.Key, id); ferr != nil {
					err = errors.Join(err, fmt.Errorf("idempotency key: %w", ferr))
				}
				return jobs.Job{}, err
			}
			return j, nil
		}
		if held.RequestHash != once.RequestHash {
			return jobs.Job{}, fmt.Errorf("%w: the key was used at %s for job %s, with a request whose content differs from this one; use a new key for a new request",
				jobs.ErrKeyReused, held.CreatedAt.UTC().Format(time.RFC3339), held.JobID)
		}
		j, err := u.s.Get(ctx, held.JobID)
		if err == nil {
			return j, nil
		}
		if !errors.Is(err, jobs.ErrJobNotFound) {
			return jobs.Job{}, err
		}
		if now.Sub(held.CreatedAt) < claimGrace {
			return jobs.Job{}, fmt.Errorf("%w: the request that first used it is still queueing job %s", jobs.ErrKeyInUse, held.JobID)
		}
		if err := u.s.keys.ForgetKey(ctx, once.Key, held.JobID); err != nil {
			return jobs.Job{}, fmt.Errorf("idempotency key: %w", err)
		}
	}
	return jobs.Job{}, fmt.Errorf("%w: another request took it over", jobs.ErrKeyInUse)
}
