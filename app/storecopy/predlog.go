package storecopy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"ramanserve/evidence/predlog"
)

// ErrLogDiverged means the target's prediction log does not continue the
// source's: it holds records that no copy of this source wrote.
var ErrLogDiverged = errors.New("the target's prediction log holds records this copy did not write (a fleet already logging into it, or another source); copy into an empty log, before the fleet starts")

// copyLog appends the source's records to the target in the source's
// page order, (Time, ID), LogBatch records per Append, keeping each
// record's time, prediction id, context and spectrum (the target gives
// its own IDs).
//
// The resume rule. Append is all or nothing and numbers its records in
// order after every earlier one, and the target's pages follow (Time,
// ID). Appending the source in its own (Time, ID) order therefore keeps
// the target's log, at any moment, a prefix of the source's: all the
// source's records before some time T, and the first k of those at T.
// The target's Last record gives T, a page of the target at exactly T
// gives k, and a resumed run reads the source from T, skips k records and
// appends the rest. The k-th record skipped must be the target's last
// one (same time, prediction id, role and model); when it is not, the
// target was written by something else, and the copy refuses
// (ErrLogDiverged) rather than guess. So a copy interrupted anywhere
// resumes without a duplicate and without a gap, and a finished copy run
// again appends nothing.
//
// The rule needs the target to be written by the copy alone until it
// ends: start the fleet after the copy.
func (c *copier) copyLog(ctx context.Context) error {
	if c.from.Log == nil {
		return nil
	}
	if c.to.Log == nil {
		return errors.New("the target has no prediction log store")
	}
	since, skip, last, err := resumePoint(ctx, c.to.Log)
	if err != nil {
		return err
	}
	src := newLogReader(c.from.Log, since)
	if last != nil {
		if err := skipCopied(ctx, src, skip, last); err != nil {
			return err
		}
		c.sum.LogResumedAfter = last.Time
		c.progress("  resuming after the %d records a previous run copied up to %v", skip, last.Time)
	}
	return c.appendRest(ctx, src)
}

// appendRest appends what src has left to the target, LogBatch records
// per Append, with a progress line at most every progressEvery.
func (c *copier) appendRest(ctx context.Context, src *logReader) error {
	const progressEvery = time.Second
	batch := make([]*predlog.Record, 0, c.opts.LogBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := c.to.Log.Append(ctx, batch); err != nil {
			return fmt.Errorf("append %d records to the target: %w", len(batch), err)
		}
		c.sum.LogRecords.Copied += int64(len(batch))
		clear(batch)
		batch = batch[:0]
		return nil
	}
	lastLine := time.Now()
	for {
		rec, err := src.next(ctx)
		if err != nil {
			return err
		}
		if rec == nil {
			break
		}
		batch = append(batch, rec)
		if len(batch) < c.opts.LogBatch {
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if time.Since(lastLine) >= progressEvery {
			c.progress("  %d records, up to %v", c.sum.LogRecords.Copied, rec.Time)
			lastLine = time.Now()
		}
	}
	if err := flush(); err != nil {
		return err
	}
	c.progress("  %d records copied", c.sum.LogRecords.Copied)
	return nil
}

// resumePoint finds where a previous copy into target stopped: the time
// of its last record, how many records it holds at that time, and that
// record; a nil last when the target's log is empty.
func resumePoint(ctx context.Context, target predlog.Store) (since time.Time, atSince int64, last *predlog.Record, err error) {
	rec, found, err := target.Last(ctx)
	if err != nil {
		return time.Time{}, 0, nil, fmt.Errorf("read the target's last record: %w", err)
	}
	if !found {
		return time.Time{}, 0, nil, nil
	}
	f := predlog.Filter{Since: rec.Time, Until: rec.Time.Add(time.Nanosecond)}
	for {
		page, err := target.Page(ctx, f)
		if err != nil {
			return time.Time{}, 0, nil, fmt.Errorf("count the target's records at %v: %w", rec.Time, err)
		}
		atSince += int64(len(page.Records))
		if page.Next == "" {
			return rec.Time, atSince, &rec, nil
		}
		f.Cursor = page.Next
	}
}

// skipCopied reads past the skip records src holds at its start time, a
// previous run's, the last of which must be last.
func skipCopied(ctx context.Context, src *logReader, skip int64, last *predlog.Record) error {
	var rec *predlog.Record
	for i := int64(0); i < skip; i++ {
		var err error
		if rec, err = src.next(ctx); err != nil {
			return err
		}
		if rec == nil || !rec.Time.Equal(last.Time) {
			return fmt.Errorf("%w: it has %d records at %v, the source fewer", ErrLogDiverged, skip, last.Time)
		}
	}
	if rec == nil || rec.PredictionID != last.PredictionID || rec.Role != last.Role || rec.ModelVersion != last.ModelVersion {
		return fmt.Errorf("%w: its last record (prediction %v, %v, model %s at %v) is not the source's at that place", ErrLogDiverged, last.PredictionID, last.Role, last.ModelVersion, last.Time)
	}
	return nil
}

// logReader reads a log's records from a time on, in (Time, ID) order,
// each with its spectrum when one is logged. Page gives spectra only on
// a page that leaves out the records without one, so the reader walks
// two pagings of the same order, every record and those with a
// spectrum, and joins them by ID: the second is a subsequence of the
// first.
type logReader struct {
	all, spectra pageStream
}

func newLogReader(s predlog.Store, since time.Time) *logReader {
	return &logReader{
		all:     pageStream{store: s, filter: predlog.Filter{Since: since, Limit: predlog.MaxPageLimit, WithContributions: true}},
		spectra: pageStream{store: s, filter: predlog.Filter{Since: since, Limit: predlog.MaxSpectraPageLimit, WithSpectra: true}},
	}
}

// next returns the following record, or nil after the last.
func (r *logReader) next(ctx context.Context) (*predlog.Record, error) {
	head, err := r.all.peek(ctx)
	if err != nil || head == nil {
		return nil, err
	}
	rec := *head
	r.all.pos++
	for {
		s, err := r.spectra.peek(ctx)
		if err != nil {
			return nil, err
		}
		if s == nil || pageOrder(s, &rec) > 0 {
			return &rec, nil
		}
		r.spectra.pos++
		if s.ID == rec.ID {
			rec.Spectrum, rec.Wavenumbers = s.Spectrum, s.Wavenumbers
			return &rec, nil
		}
	}
}

// pageOrder compares two records of one store in (Time, ID) order.
func pageOrder(a, b *predlog.Record) int {
	return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID))
}

// pageStream is one paging of a filter, a record at a time.
type pageStream struct {
	store  predlog.Store
	filter predlog.Filter
	page   []predlog.Record
	pos    int
	done   bool // the last page is in page
}

// peek returns the current record, fetching the next page when needed;
// nil after the last.
func (p *pageStream) peek(ctx context.Context) (*predlog.Record, error) {
	for p.pos >= len(p.page) {
		if p.done {
			return nil, nil
		}
		page, err := p.store.Page(ctx, p.filter)
		if err != nil {
			return nil, fmt.Errorf("read the source's log: %w", err)
		}
		p.page, p.pos = page.Records, 0
		p.filter.Cursor, p.done = page.Next, page.Next == ""
	}
	return &p.page[p.pos], nil
}
