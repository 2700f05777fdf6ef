package storecopy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"ramanserve/trainer/jobs"
)

// copyJobs copies every job record the target lacks, and the saved data
// set of each queued one. A record already in the target (by id) is
// skipped, not overwritten: after a move the fleet may have run the job
// since, and its record is then newer than the source's. A queued job's
// data set is put before its record, so a record in the target always
// has its data set, also when a run stopped between the two.
func (c *copier) copyJobs(ctx context.Context) error {
	if c.from.Jobs == nil {
		return nil
	}
	records, skipped, err := c.from.Jobs.LoadAll(ctx)
	if err != nil {
		return fmt.Errorf("read the source's jobs: %w", err)
	}
	for _, s := range skipped {
		c.progress("  a source job record cannot be read, not copied: %v", s)
	}
	there, _, err := c.to.Jobs.LoadAll(ctx)
	if err != nil {
		return fmt.Errorf("read the target's jobs: %w", err)
	}
	inTarget := make(map[string]bool, len(there))
	for _, j := range there {
		inTarget[j.ID] = true
	}
	// Oldest first, as the queue would take them.
	slices.SortFunc(records, func(a, b *jobs.Job) int {
		return cmp.Or(a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.ID, b.ID))
	})
	for _, j := range records {
		if inTarget[j.ID] {
			c.sum.Jobs.Skipped++
			continue
		}
		if j.Status == jobs.Queued {
			if err := c.copyUpload(ctx, j.ID); err != nil {
				return err
			}
		}
		if err := c.to.Jobs.Save(ctx, j); err != nil {
			return fmt.Errorf("job %s: save in the target: %w", j.ID, err)
		}
		c.sum.Jobs.Copied++
	}
	c.progress("  %d jobs: %v", len(records), c.sum.Jobs)
	return nil
}

// copyUpload copies the saved data set of the queued job id. A queued job
// without one is copied as it is: the server fails it as interrupted at
// start, in the target as it would have in the source.
func (c *copier) copyUpload(ctx context.Context, id string) error {
	if c.from.Uploads == nil {
		return nil
	}
	rc, _, err := c.from.Uploads.Open(ctx, id)
	if errors.Is(err, jobs.ErrNoUpload) {
		c.progress("  job %s is queued without its data set; copied as it is", id)
		return nil
	}
	if err != nil {
		return fmt.Errorf("job %s: open its data set: %w", id, err)
	}
	defer rc.Close()
	if err := c.to.Uploads.Put(ctx, id, rc); err != nil {
		return fmt.Errorf("job %s: store its data set in the target: %w", id, err)
	}
	c.sum.Uploads.Copied++
	return nil
}
