// Package training is the training use case the transports call: the job
// queue (package jobs) with uploads that reserve their slot before their
// body is read. It knows nothing of HTTP.
package training

import (
	"context"

	"ramanserve/trainer"
	"ramanserve/trainer/jobs"
)

// Upload is one upload's queue slot. It is the memory budget's charger
// for the data set being parsed, becomes the job's slot on Submit, and is
// given back, with its memory, by Release when the upload fails (Release
// after Submit does nothing).
type Upload interface {
	trainer.Charger
	// Submit queues a job on the parsed data set.
	Submit(ctx context.Context, ds *trainer.Dataset, meta jobs.Meta) (jobs.Job, error)
	Release()
}

// Service is the job queue: Get, List and Cancel are the queue's own.
type Service struct{ *jobs.Manager }

// New returns the service over a job queue.
func New(queue *jobs.Manager) *Service { return &Service{Manager: queue} }

// Reserve takes a queue slot for an upload before its body is read. It
// fails at once with jobs.ErrQueueFull when none is free.
func (s *Service) Reserve(ctx context.Context) (Upload, error) {
	r, err := s.Manager.Reserve(ctx)
	if err != nil {
		return nil, err
	}
	return upload{Reservation: r, queue: s.Manager}, nil
}

type upload struct {
	*jobs.Reservation
	queue *jobs.Manager
}

func (u upload) Submit(ctx context.Context, ds *trainer.Dataset, meta jobs.Meta) (jobs.Job, error) {
	return u.queue.SubmitReserved(ctx, u.Reservation, ds, meta)
}
