// Package pgtest gives tests a PostgreSQL database of their own in the
// throw-away cluster that make test starts (.ci/postgres): each call of
// Database creates an empty database and drops it when the test ends.
//
// Without a cluster (RAMANSERVE_TEST_POSTGRES unset, as in make
// test-quick) the test is skipped, unless RAMANSERVE_TEST_POSTGRES_REQUIRED
// is set, as make test sets it: there a missing cluster fails the test.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"ramanserve/platform/pgdb"
)

// The environment .ci/postgres sets.
const (
	envURL      = "RAMANSERVE_TEST_POSTGRES"
	envCA       = "RAMANSERVE_TEST_POSTGRES_CA"
	envRequired = "RAMANSERVE_TEST_POSTGRES_REQUIRED"
)

// AdminURL is the URL of the cluster's superuser (its password is in
// PGPASSFILE, never in the URL). The test is skipped, or failed when a
// cluster is required, if there is no cluster.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envURL)
	if u == "" {
		if os.Getenv(envRequired) != "" {
			t.Fatalf("%s is set but %s is not: run the tests through .ci/postgres (make test does)", envRequired, envURL)
		}
		t.Skipf("no PostgreSQL cluster (%s unset; make test starts one)", envURL)
	}
	return u
}

// Database creates an empty database, dropped when t ends, and returns
// its URL (the cluster's superuser, sslmode=disable).
func Database(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	exec1(t, admin, `CREATE DATABASE `+name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgx.Connect(ctx, admin); err == nil {
			c.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			c.Close(ctx)
		}
	})
	return WithDatabase(t, admin, name)
}

// WithDatabase returns u naming database name instead.
func WithDatabase(t testing.TB, u, name string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Path = "/" + name
	return p.String()
}

// Exec runs sql as the cluster's superuser on the database of u.
func Exec(t testing.TB, u, sql string) {
	t.Helper()
	exec1(t, u, sql)
}

func exec1(t testing.TB, u, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect to the test cluster: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// CA is the file of the CA that signed the cluster's server certificate.
func CA(t testing.TB) string {
	t.Helper()
	AdminURL(t)
	return os.Getenv(envCA)
}

// Open opens the database at url as a replica does at start (pgdb.Open,
// migrating its schema) and closes the pool when t ends.
func Open(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgdb.Open(context.Background(), url, pgdb.Options{Migrate: true})
	if err != nil {
		t.Fatalf("open the test database: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}
