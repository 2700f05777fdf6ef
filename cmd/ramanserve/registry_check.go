package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"ramanserve/inference"
	"ramanserve/registry"
	"ramanserve/trainer"
)

// Exit statuses of `ramanserve registry check`.
const (
	checkClean    = 0 // no problems, or every one repaired
	checkProblems = 1 // problems remain for the operator
	checkFailed   = 2 // bad usage, or the check could not run (the registry is locked, ...)
)

const registryUsage = `usage: ramanserve registry check DIR [-repair]

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
`

// runRegistry runs `ramanserve registry ...` and returns the exit status.
func runRegistry(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprint(stderr, registryUsage)
		return checkFailed
	}
	dir, repair, err := parseCheckArgs(args[1:])
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve registry check:", err)
		fmt.Fprint(stderr, registryUsage)
		return checkFailed
	}
	rep, err := registry.Check(ctx, dir, registry.Options{Openers: registry.FileOpeners(inference.ModelOptions{InstrumentAxis: trainer.DefaultWavenumbers()})}, repair)
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

// parseCheckArgs takes DIR and -repair in either order.
func parseCheckArgs(args []string) (dir string, repair bool, err error) {
	fs := flag.NewFlagSet("ramanserve registry check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&repair, "repair", false, "fix what is safe to fix")
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", false, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 || strings.TrimSpace(positional[0]) == "" {
		return "", false, fmt.Errorf("want exactly one registry directory, got %q", positional)
	}
	return positional[0], repair, nil
}
