package predlog

import (
	"context"
	"encoding/base64"
	"time"
	"unicode/utf8"

	"ramanserve/inference"
)

// BatchLister is what a store adds to Reader for the batch views: the
// batch ids the log has seen, a page at a time. A batch's own records
// are a Page with its BatchID and RoleActive.
type BatchLister interface {
	Batches(ctx context.Context, f BatchFilter) (BatchPage, error)
}

// BatchSummary is one batch as the log has seen it.
type BatchSummary struct {
	BatchID string
	// First and Last are the times of the batch's first and last active
	// record; Count is how many active records it has (the spectra the
	// rig sent for it).
	First, Last time.Time
	Count       int64
	// Models are the versions that scored the batch in any role (active,
	// shadow, re-scoring), in byte order, at most MaxBatchModels of them;
	// MoreModels counts those left out.
	Models     []string
	MoreModels int
}

// BatchFilter selects a page of batches.
type BatchFilter struct {
	// Limit caps the page; 0 or more than MaxBatchPageLimit means
	// MaxBatchPageLimit.
	Limit int
	// Cursor continues after the last batch of an earlier page ("" for
	// the first page).
	Cursor string
}

// BatchPage is one page of batches in byte order of their ids, only
// batches with at least one active record. Next is the cursor of the
// following page, "" when this was the last.
type BatchPage struct {
	Batches []BatchSummary
	Next    string
}

const (
	// MaxBatchPageLimit is the most batches one page lists.
	MaxBatchPageLimit = 1000
	// MaxBatchModels is the most versions a BatchSummary names: a batch
	// re-scored by many versions still costs a page a bounded amount.
	MaxBatchModels = 16
)

// BatchPageLimit is f's limit as every store applies it.
func BatchPageLimit(f BatchFilter) int {
	if f.Limit <= 0 || f.Limit > MaxBatchPageLimit {
		return MaxBatchPageLimit
	}
	return f.Limit
}

// A batch cursor is the id of a page's last batch behind a format byte,
// in unpadded base64url: every store orders batches by their ids' bytes,
// so one text serves them all. Decoding is strict: one text per
// position, anything else is ErrBadCursor.
const batchCursorFormat = 'b'

var batchCursorEncoding = base64.RawURLEncoding.Strict()

// MaxBatchCursorLen bounds a batch cursor's text: a format byte and a
// batch id of at most inference.MaxContextTextBytes, in unpadded base64
// (4 characters per 3 bytes, rounded up).
const MaxBatchCursorLen = (4*(1+inference.MaxContextTextBytes) + 2) / 3

// EncodeBatchCursor is the cursor of the page after batchID.
func EncodeBatchCursor(batchID string) string {
	b := make([]byte, 0, 1+len(batchID))
	b = append(b, batchCursorFormat)
	return batchCursorEncoding.EncodeToString(append(b, batchID...))
}

// DecodeBatchCursor returns the batch id a cursor continues after.
func DecodeBatchCursor(text string) (string, error) {
	if len(text) == 0 || len(text) > MaxBatchCursorLen {
		return "", ErrBadCursor
	}
	b, err := batchCursorEncoding.DecodeString(text)
	if err != nil || len(b) < 2 || b[0] != batchCursorFormat || len(b)-1 > inference.MaxContextTextBytes || !utf8.Valid(b[1:]) {
		return "", ErrBadCursor
	}
	// The decoder skips line breaks, even when strict: a text that does
	// not encode back to itself was not made here.
	id := string(b[1:])
	if EncodeBatchCursor(id) != text {
		return "", ErrBadCursor
	}
	return id, nil
}

// BatchRow is one row of the stores' batch query: a batch's figures
// for one model version (First, Last and Count over its active records).
// AddBatchRow folds rows, in batch then version order, into summaries.
type BatchRow struct {
	BatchID, ModelVersion string
	First, Last           int64 // Unix ns; valid when Count > 0
	Count                 int64
}

// AddBatchRow folds r into out, whose last summary it extends when r is
// of the same batch.
func AddBatchRow(out []BatchSummary, r BatchRow) []BatchSummary {
	n := len(out)
	if n == 0 || out[n-1].BatchID != r.BatchID {
		out = append(out, BatchSummary{BatchID: r.BatchID})
		n++
	}
	s := &out[n-1]
	if r.Count > 0 {
		first, last := time.Unix(0, r.First).UTC(), time.Unix(0, r.Last).UTC()
		if s.Count == 0 || first.Before(s.First) {
			s.First = first
		}
		if s.Count == 0 || last.After(s.Last) {
			s.Last = last
		}
		s.Count += r.Count
	}
	if len(s.Models) < MaxBatchModels {
		s.Models = append(s.Models, r.ModelVersion)
	} else {
		s.MoreModels++
	}
	return out
}

// FinishBatchPage turns the summaries of up to limit+1 batches, in id
// order, into a page: the one past limit only says that a page follows.
func FinishBatchPage(sums []BatchSummary, limit int) BatchPage {
	var page BatchPage
	if len(sums) > limit {
		sums = sums[:limit]
		page.Next = EncodeBatchCursor(sums[limit-1].BatchID)
	}
	page.Batches = sums
	return page
}
