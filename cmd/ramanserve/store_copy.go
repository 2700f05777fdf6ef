package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"ramanserve/app/storecopy"
	"ramanserve/platform/pgdb"
)

// Exit statuses of `ramanserve store copy`.
const (
	copyDone   = 0 // everything copied (or already there)
	copyFailed = 1 // something was not copied; run again once fixed
	copyUsage  = 2 // bad usage, or the copy could not start
)

const storeUsage = `usage: ramanserve store copy -from DIR -to postgres://user@host:port/db

Copies the embedded store of the registry directory DIR into the
PostgreSQL database of a fleet: the models (every artifact checked
against the size and SHA-256 its index entry records, then the index),
the training jobs and the data sets of queued ones, the prediction log
and the matched lab results. The password comes from PGPASSFILE,
PGPASSWORD or a passfile= parameter, never from the URL.

The copy is idempotent and resumable: run it again after an
interruption, or to check that everything is there; it skips what the
target already holds and duplicates nothing. It never merges: a target
with another registry index, another artifact under a copied name or a
prediction log it did not write is refused. Stop the server on DIR first
(the copy takes the directory's lock), and start the fleet after it.
`

// runStore runs `ramanserve store ...` and returns the exit status. Its
// progress and summary go to stderr.
func runStore(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "copy" {
		fmt.Fprint(stderr, storeUsage)
		return copyUsage
	}
	fs := flag.NewFlagSet("ramanserve store copy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", "", "registry directory of the embedded store")
	to := fs.String("to", "", "postgres:// URL of the fleet's database")
	if err := fs.Parse(args[1:]); err != nil || *from == "" || *to == "" || fs.NArg() > 0 {
		if err != nil {
			fmt.Fprintln(stderr, "ramanserve store copy:", err)
		}
		fmt.Fprint(stderr, storeUsage)
		return copyUsage
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sum, err := copyStore(ctx, *from, *to, stderr)
	if sum != nil {
		fmt.Fprint(stderr, sum)
	}
	switch {
	case errors.Is(err, errCopyNotStarted):
		fmt.Fprintln(stderr, "ramanserve store copy:", err)
		return copyUsage
	case err != nil:
		fmt.Fprintln(stderr, "ramanserve store copy: not everything was copied; fix the cause and run it again (it resumes):", err)
		return copyFailed
	}
	fmt.Fprintln(stderr, "ramanserve store copy: done")
	return copyDone
}

// errCopyNotStarted marks the errors of opening either side.
var errCopyNotStarted = errors.New("the copy did not start")

// copyStore opens both sides and copies.
func copyStore(ctx context.Context, dir, url string, progress io.Writer) (*storecopy.Summary, error) {
	if _, err := pgdb.ParseConfig(url); err != nil {
		return nil, fmt.Errorf("%w: -to: %w", errCopyNotStarted, err)
	}
	src, err := storecopy.OpenEmbedded(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: -from %s: %w", errCopyNotStarted, dir, err)
	}
	defer src.Close()
	pool, err := pgdb.Open(ctx, url, pgdb.Options{Migrate: true, Logger: slog.New(slog.NewTextHandler(progress, nil))})
	if err != nil {
		return nil, fmt.Errorf("%w: -to: %w", errCopyNotStarted, err)
	}
	defer pool.Close()
	dst, err := storecopy.Fleet(pool)
	if err != nil {
		return nil, fmt.Errorf("%w: -to: %w", errCopyNotStarted, err)
	}
	return storecopy.Copy(ctx, &src.Stores, dst, storecopy.Options{Progress: progress})
}
