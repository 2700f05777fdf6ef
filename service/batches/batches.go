// Package batches holds the use cases of batch trajectories: listing the
// batches the prediction log has seen, a batch's trajectory, marking and
// unmarking reference batches, and a batch's report against the control
// bands of the references. The transports call it; it knows nothing of
// HTTP.
package batches

import (
	"context"
	"errors"
	"fmt"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/predlog"
)

// Log is what the service reads of the prediction log.
type Log interface {
	Page(ctx context.Context, f predlog.Filter) (predlog.Page, error)
	predlog.BatchLister
}

// Service is the batch use cases over the log and the reference marks.
type Service struct {
	log  Log
	refs batches.ReferenceStore
	now  func() time.Time
}

// New returns the service over log and refs.
func New(log Log, refs batches.ReferenceStore) *Service {
	return &Service{log: log, refs: refs, now: time.Now}
}

// Batch is a batch as listed: the log's summary and whether it is a
// reference.
type Batch struct {
	predlog.BatchSummary
	Reference bool
}

// Page is one page of batches.
type Page struct {
	Batches []Batch
	Next    string
}

// List lists the log's batches, a page at a time.
func (s *Service) List(ctx context.Context, f predlog.BatchFilter) (Page, error) {
	page, err := s.log.Batches(ctx, f)
	if err != nil {
		return Page{}, err
	}
	marked, err := s.marked(ctx)
	if err != nil {
		return Page{}, err
	}
	out := Page{Batches: make([]Batch, len(page.Batches)), Next: page.Next}
	for i, b := range page.Batches {
		out.Batches[i] = Batch{BatchSummary: b, Reference: marked[b.BatchID]}
	}
	return out, nil
}

// marked is the set of marked batch ids.
func (s *Service) marked(ctx context.Context) (map[string]bool, error) {
	refs, err := s.refs.References(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(refs))
	for _, r := range refs {
		out[r.BatchID] = true
	}
	return out, nil
}

// Trajectory is a batch's trajectory and whether it is a reference.
type Trajectory struct {
	batches.Trajectory
	Reference bool
}

// Trajectory returns batchID's trajectory against maturity m;
// batches.ErrBatchNotFound when the log holds no active record of it.
func (s *Service) Trajectory(ctx context.Context, batchID string, m batches.Maturity) (Trajectory, error) {
	t, err := s.trajectory(ctx, batchID, m)
	if err != nil {
		return Trajectory{}, err
	}
	marked, err := s.marked(ctx)
	if err != nil {
		return Trajectory{}, err
	}
	return Trajectory{Trajectory: t, Reference: marked[batchID]}, nil
}

// trajectory reads the batch's first batches.MaxPoints active records:
// one page along the log's batch index.
func (s *Service) trajectory(ctx context.Context, batchID string, m batches.Maturity) (batches.Trajectory, error) {
	page, err := s.log.Page(ctx, predlog.Filter{BatchID: batchID, HasBatchID: true, Role: predlog.RoleActive, Limit: batches.MaxPoints})
	if err != nil {
		return batches.Trajectory{}, err
	}
	if len(page.Records) == 0 {
		return batches.Trajectory{}, fmt.Errorf("%w: %q", batches.ErrBatchNotFound, batchID)
	}
	return batches.FromRecords(batchID, m, page.Records, page.Next != ""), nil
}

// Mark marks batchID as a reference batch, by the named caller; the
// batch must be in the log (batches.ErrBatchNotFound otherwise). Marking
// a marked batch keeps its first mark.
func (s *Service) Mark(ctx context.Context, batchID, by string) (batches.Reference, bool, error) {
	page, err := s.log.Page(ctx, predlog.Filter{BatchID: batchID, HasBatchID: true, Role: predlog.RoleActive, Limit: 1})
	if err != nil {
		return batches.Reference{}, false, err
	}
	if len(page.Records) == 0 {
		return batches.Reference{}, false, fmt.Errorf("%w: %q", batches.ErrBatchNotFound, batchID)
	}
	return s.refs.Mark(ctx, batches.Reference{BatchID: batchID, MarkedAt: s.now().UTC(), MarkedBy: by})
}

// Unmark removes batchID's reference mark; removing none is no error
// (removed false).
func (s *Service) Unmark(ctx context.Context, batchID string) (removed bool, err error) {
	return s.refs.Unmark(ctx, batchID)
}

// Report is a batch against the control bands of the reference batches.
type Report struct {
	Trajectory Trajectory
	// References are every marked batch; Bands are made of those of them
	// in the log other than the batch itself (nil when none has a
	// point).
	References []batches.Reference
	Bands      *batches.Bands
	Judgement  batches.Judgement
}

// Report returns batchID's trajectory against the bands of the reference
// batches (the batch itself left out of them, so that a reference is
// judged by the others). The references are read one at a time, each
// reduced to its series before the next.
func (s *Service) Report(ctx context.Context, batchID string, m batches.Maturity) (Report, error) {
	t, err := s.trajectory(ctx, batchID, m)
	if err != nil {
		return Report{}, err
	}
	refs, err := s.refs.References(ctx)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Trajectory: Trajectory{Trajectory: t}, References: refs}
	builder := batches.NewBandBuilder(m)
	for _, r := range refs {
		if r.BatchID == batchID {
			rep.Trajectory.Reference = true
			continue
		}
		rt, err := s.trajectory(ctx, r.BatchID, m)
		if err != nil {
			if isNotFound(err) { // marked, then gone from the log (retention)
				continue
			}
			return Report{}, err
		}
		builder.Add(rt)
	}
	rep.Bands = builder.Build()
	rep.Judgement = batches.Judge(&rep.Trajectory.Trajectory, rep.Bands)
	return rep, nil
}

func isNotFound(err error) bool { return errors.Is(err, batches.ErrBatchNotFound) }
