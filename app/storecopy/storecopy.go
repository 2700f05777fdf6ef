// Package storecopy moves a server's state from one store to another:
// from the embedded store in a registry directory to a fleet's
// PostgreSQL database (`ramanserve store copy -from DIR -to URL`), so
// that a user who started with the embedded default moves without losing
// anything.
//
// It lives under app because app is the one place that knows every
// store: the copy itself (Copy) only goes through the stores' interfaces
// (store.IndexStore and store.ArtifactStore, jobs.Store and
// jobs.UploadSpool, predlog.Store, reconcile.LabStore,
// batches.ReferenceStore), never through
// the files or tables behind them, and OpenEmbedded and Fleet open the
// two sides the way the server does.
//
// A copy is idempotent and resumable: every kind is copied so that a
// second run finds what the first one wrote and skips it, whatever
// point the first one stopped at (see each kind's file for its rule).
// It never merges: a target that holds another registry index, another
// artifact under a copied name or a prediction log that does not
// continue the source's is refused with an error naming it.
package storecopy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/predlog"
	"ramanserve/evidence/reconcile"
	"ramanserve/registry/store"
	"ramanserve/trainer/jobs"
)

// Stores are one side of a copy. A nil Log or Lab is a side without a
// prediction log or lab results (an embedded registry that never had
// them): there is nothing to copy from it, and nothing may be copied to
// it.
type Stores struct {
	Index     store.IndexStore
	Artifacts store.ArtifactStore
	Jobs      jobs.Store
	Uploads   jobs.UploadSpool
	Log       predlog.Store
	Lab       reconcile.LabStore
	// References are the reference batch marks, kept with the lab
	// results (nil with Lab).
	References batches.ReferenceStore
}

// Options configure Copy. Zero values take the defaults.
type Options struct {
	// Progress receives a line per step and per batch (stderr in the
	// command); nil: nowhere.
	Progress io.Writer
	// LogBatch is the prediction log records appended per transaction
	// (default DefaultLogBatch). A batch is also the unit a resumed copy
	// can lose, so it stays small.
	LogBatch int
}

// DefaultLogBatch is the default Options.LogBatch.
const DefaultLogBatch = 1000

// Counts are what a copy did with one kind of item: Copied into the
// target, or Skipped because the target already held them (a run
// before this one copied them).
type Counts struct {
	Copied, Skipped int64
}

func (c Counts) String() string {
	return fmt.Sprintf("%d copied, %d already there", c.Copied, c.Skipped)
}

// Summary is the outcome of a copy.
type Summary struct {
	Models  Counts
	Index   string // what became of the index: "committed", "already the same"
	Jobs    Counts
	Uploads Counts // saved data sets of queued jobs
	// LogRecords counts the records this run appended (Skipped stays 0:
	// a resumed run does not count what the runs before it copied).
	LogRecords Counts
	// LogResumedAfter is the time of the last record a previous run had
	// copied; zero when this run started the log's copy.
	LogResumedAfter time.Time
	LabResults      Counts
	References      Counts
	Elapsed         time.Duration
}

// String renders the summary for the terminal, one kind a line.
func (s *Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "models:             %v; index %s\n", s.Models, s.Index)
	fmt.Fprintf(&b, "jobs:               %v (data sets: %v)\n", s.Jobs, s.Uploads)
	fmt.Fprintf(&b, "prediction records: %d copied", s.LogRecords.Copied)
	if !s.LogResumedAfter.IsZero() {
		fmt.Fprintf(&b, " (resumed after a previous run's last record, at %v)", s.LogResumedAfter)
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "lab results:        %v\n", s.LabResults)
	fmt.Fprintf(&b, "reference batches:  %v\n", s.References)
	fmt.Fprintf(&b, "took %v\n", s.Elapsed.Round(time.Millisecond))
	return b.String()
}

// Copy copies everything the stores from hold into the stores to: the models (each artifact
// checked against its index entry's size and SHA-256, its sidecar, then
// the index), the jobs and their saved data sets, the prediction log and
// the lab results and the reference batch marks. A kind that fails does not stop the others (a
// corrupt model should not hold back a long log copy); the error joins
// every kind's. The summary counts what was done, also on error.
func Copy(ctx context.Context, from, to *Stores, opts Options) (*Summary, error) {
	if opts.LogBatch <= 0 {
		opts.LogBatch = DefaultLogBatch
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	c := &copier{from: from, to: to, opts: opts, sum: &Summary{}}
	start := time.Now()
	var errs []error
	for _, step := range []struct {
		kind string
		run  func(context.Context) error
	}{
		{"models", c.copyModels},
		{"jobs", c.copyJobs},
		{"prediction log", c.copyLog},
		{"lab results", c.copyLab},
		{"reference batches", c.copyReferences},
	} {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		c.progress("%s ...", step.kind)
		if err := step.run(ctx); err != nil {
			c.progress("%s: FAILED: %v", step.kind, err)
			errs = append(errs, fmt.Errorf("%s: %w", step.kind, err))
		}
	}
	c.sum.Elapsed = time.Since(start)
	return c.sum, errors.Join(errs...)
}

// copier is one run of Copy.
type copier struct {
	from, to *Stores
	opts     Options
	sum      *Summary
}

func (c *copier) progress(format string, args ...any) {
	fmt.Fprintf(c.opts.Progress, "store copy: "+format+"\n", args...)
}
