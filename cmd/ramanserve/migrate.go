package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"ramanserve/platform/pgdb"
)

// runMigrate is `ramanserve migrate -store URL`: it brings the shared
// store's schema up to this build's and exits. Servers migrate at start
// too (under the same advisory lock, so replicas starting together
// migrate once); the command lets an operator do it ahead of a rollout,
// with a role that may change the schema while the servers' may not.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("ramanserve migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("store", getenv("RAMAN_STORE"), "postgres://user@host:port/db of the shared store (the password from PGPASSFILE or PGPASSWORD)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: ramanserve migrate -store postgres://user@host:port/db")
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	pool, err := pgdb.Open(ctx, *url, pgdb.Options{Migrate: true, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "ramanserve migrate:", err)
		return 1
	}
	pool.Close()
	fmt.Fprintf(stderr, "ramanserve migrate: the schema is at version %d\n", pgdb.Migrations())
	return 0
}
