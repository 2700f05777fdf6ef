package storecopy

import (
	"context"
	"fmt"
	"time"

	"ramanserve/evidence/reconcile"
)

// labPage is the lab results read per Range: under the stores' cap
// (labstore.MaxRange).
const labPage = reconcile.MaxReportSamples

// copyLab copies the lab results, a Range page at a time, each page
// upserted in chunks of reconcile.MaxRecords. Upsert replaces by
// lab_sample_id, so a second run rewrites the same results and duplicates
// nothing.
//
// Only the matched results are copied: Range, the one read
// reconcile.LabStore offers, returns matched results only, so an
// unmatched result (a lab sample no logged spectrum was found for) is not
// reachable through the interface. They are counted nowhere; the lab
// re-posts them if it wants them matched in the fleet.
func (c *copier) copyLab(ctx context.Context) error {
	if c.from.Lab == nil {
		return nil
	}
	if c.to.Lab == nil {
		return fmt.Errorf("the target has no lab result store")
	}
	var since time.Time
	var lastID string
	for {
		page, err := c.from.Lab.Range(ctx, since, time.Time{}, labPage)
		if err != nil {
			return fmt.Errorf("read the source's lab results: %w", err)
		}
		fresh := afterCursor(page, since, lastID)
		if len(fresh) == 0 && len(page) == labPage {
			return fmt.Errorf("more than %d lab results share the spectrum time %v; Range cannot page past them", labPage, since)
		}
		for start := 0; start < len(fresh); start += reconcile.MaxRecords {
			chunk := fresh[start:min(start+reconcile.MaxRecords, len(fresh))]
			if _, err := c.to.Lab.Upsert(ctx, chunk); err != nil {
				return fmt.Errorf("store lab results in the target: %w", err)
			}
			c.sum.LabResults.Copied += int64(len(chunk))
		}
		if len(page) < labPage {
			break
		}
		last := page[len(page)-1]
		since, lastID = last.SpectrumTime, last.LabSampleID
		c.progress("  %d lab results", c.sum.LabResults.Copied)
	}
	c.progress("  %d lab results (matched; see the notes on unmatched ones)", c.sum.LabResults.Copied)
	return nil
}

// afterCursor drops the results of page at or before (since, lastID) in
// Range's order: a page starts at since inclusive, so it repeats the
// earlier page's results of that very time.
func afterCursor(page []reconcile.LabResult, since time.Time, lastID string) []reconcile.LabResult {
	if lastID == "" {
		return page
	}
	for i, r := range page {
		if r.SpectrumTime.After(since) || r.LabSampleID > lastID {
			return page[i:]
		}
	}
	return nil
}

// copyReferences copies the reference batch marks with their time and
// name. Mark keeps a mark the target holds already, so a second run
// counts them as skipped.
func (c *copier) copyReferences(ctx context.Context) error {
	if c.from.References == nil {
		return nil
	}
	if c.to.References == nil {
		return fmt.Errorf("the target has no reference batch store")
	}
	refs, err := c.from.References.References(ctx)
	if err != nil {
		return fmt.Errorf("read the source's reference batches: %w", err)
	}
	for _, r := range refs {
		_, created, err := c.to.References.Mark(ctx, r)
		if err != nil {
			return fmt.Errorf("mark %q in the target: %w", r.BatchID, err)
		}
		if created {
			c.sum.References.Copied++
		} else {
			c.sum.References.Skipped++
		}
	}
	c.progress("  %d reference batches", len(refs))
	return nil
}
