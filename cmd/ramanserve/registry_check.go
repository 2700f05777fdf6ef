package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"ramanserve/inference"
	"ramanserve/platform/pgdb"
	"ramanserve/registry"
	"ramanserve/registry/pgstore"
	"ramanserve/trainer"
)

// Exit statuses of `ramanserve registry check`.
const (
	checkClean    = 0 // no problems, or every one repaired
	checkProblems = 1 // problems remain for the operator
	checkFailed   = 2 // bad usage, or the check could not run (the registry is locked, ...)
)

const registryUsage = `usage: ramanserve registry check DIR [-repair]
       ramanserve registry check -store postgres://user@host:port/db

Verifies a registry directory: every model file against the size and
SHA-256 recorded in index.json and through its reader, the index against
models/ (entries without a file, files without an entry, the active
pointer), and leftover temp files. It prints a report and exits 1 when
problems remain, 2 when it could not check.

-repair fixes what is safe and deletes nothing but the server's own temp
files: a missing, empty or corrupt index.json is rebuilt from the model
files (a corrupt one is kept as index.json.corrupt-<time>); files without
an entry are adopted as archived; unreadable files and files failing their
checksum move to quarantine/ with a reason file; entries whose file is gone
are dropped. It takes the registry's lock, so it refuses to run while a
server has the directory open.

-store checks a fleet's registry in its database instead: every index
entry's artifact against its recorded size and SHA-256, the pointers,
and artifacts without an entry. It repairs nothing.
`

// runRegistry runs `ramanserve registry ...` and returns the exit status.
func runRegistry(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, registryUsage)
		return checkFailed
	}
	a, err := parseCheckArgs(args[1:])
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve registry check:", err)
		fmt.Fprint(stderr, registryUsage)
		return checkFailed
	}
	var rep *registry.CheckReport
	if a.storeURL != "" {
		rep, err = checkStore(ctx, a.storeURL, stderr)
	} else {
		rep, err = registry.Check(ctx, a.dir, registry.Options{Openers: registry.FileOpeners(inference.ModelOptions{InstrumentAxis: trainer.DefaultWavenumbers()})}, a.repair)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve registry check:", err)
		return checkFailed
	}
	fmt.Fprint(stdout, rep)
	if rep.Unrepaired() > 0 {
		return checkProblems
	}
	return checkClean
}

// checkArgs are the arguments of `registry check`: a directory (and
// -repair), or a store URL.
type checkArgs struct {
	dir, storeURL string
	repair        bool
}

// parseCheckArgs takes DIR and -repair in either order, or -store URL
// alone.
func parseCheckArgs(args []string) (checkArgs, error) {
	var a checkArgs
	fs := flag.NewFlagSet("ramanserve registry check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&a.repair, "repair", false, "fix what is safe to fix")
	fs.StringVar(&a.storeURL, "store", "", "postgres:// URL of a fleet's store to check instead of a directory")
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return checkArgs{}, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if a.storeURL != "" {
		if len(positional) > 0 || a.repair {
			return checkArgs{}, fmt.Errorf("-store takes no directory and no -repair")
		}
		return a, nil
	}
	if len(positional) != 1 || strings.TrimSpace(positional[0]) == "" {
		return checkArgs{}, fmt.Errorf("want exactly one registry directory, got %q", positional)
	}
	a.dir = positional[0]
	return a, nil
}

// checkStore checks the registry in the database at url, reading only.
func checkStore(ctx context.Context, url string, stderr io.Writer) (*registry.CheckReport, error) {
	cfg, err := pgdb.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	pool, err := pgdb.Open(ctx, url, pgdb.Options{Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return registry.CheckStores(ctx, pgdb.Describe(cfg), pgstore.NewIndex(pool), pgstore.NewArtifacts(pool, pgstore.ArtifactOptions{}))
}
