package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"ramanserve/evidence/predlog"
)

// LabResult is a lab record as kept: the record, and the spectrum it was
// matched to, or why it was not.
type LabResult struct {
	LabRecord
	// Matched reports whether the record was matched to a spectrum.
	Matched bool
	// PredictionID and SpectrumTime identify the matched spectrum (its
	// predictions share the PredictionID) and when it was logged (zero if
	// not matched).
	PredictionID predlog.PredictionID
	SpectrumTime time.Time
	// Reason says why the record was not matched ("" if it was).
	Reason Reason
}

// LabStore keeps lab results, one per lab_sample_id. Implementations must
// be safe for concurrent use; labstoretest.Run is their contract. The
// embedded one is package labstore.
type LabStore interface {
	// Upsert stores results (at most MaxRecords), each replacing any
	// stored result with the same LabSampleID, all or none of them. It
	// returns how many replaced a stored result.
	Upsert(ctx context.Context, results []LabResult) (replaced int, err error)
	// Range returns the first limit matched results whose SpectrumTime
	// is in [since, until) (a zero since or until leaves that side open),
	// ordered by SpectrumTime, then LabSampleID.
	Range(ctx context.Context, since, until time.Time, limit int) ([]LabResult, error)
}

// MemoryStore is a LabStore in memory, for tests and for running without
// a database. The zero value is ready to use.
type MemoryStore struct {
	mu      sync.Mutex
	results map[string]LabResult
}

// Upsert implements LabStore.
func (s *MemoryStore) Upsert(ctx context.Context, results []LabResult) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if len(results) > MaxRecords {
		return 0, fmt.Errorf("reconcile: %d results in one upsert, more than %d", len(results), MaxRecords)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.results == nil {
		s.results = make(map[string]LabResult)
	}
	replaced := 0
	for _, r := range results {
		if _, ok := s.results[r.LabSampleID]; ok {
			replaced++
		}
		s.results[r.LabSampleID] = r
	}
	return replaced, nil
}

// Range implements LabStore.
func (s *MemoryStore) Range(ctx context.Context, since, until time.Time, limit int) ([]LabResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []LabResult
	for _, r := range s.results {
		if r.Matched && inRange(r.SpectrumTime, since, until) {
			out = append(out, r)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b LabResult) int {
		return cmp.Or(a.SpectrumTime.Compare(b.SpectrumTime), cmp.Compare(a.LabSampleID, b.LabSampleID))
	})
	return out[:min(len(out), max(limit, 0))], nil
}

// inRange reports whether t is in [since, until), a zero bound being open.
func inRange(t, since, until time.Time) bool {
	return (since.IsZero() || !t.Before(since)) && (until.IsZero() || t.Before(until))
}
