// Package pgdb opens the PostgreSQL database a fleet of servers shares:
// it checks the URL (no password in it), connects, checks that the peer is
// PostgreSQL and that the schema is not newer than this build knows, and
// brings the schema up to date with goose migrations (migrations/), under
// PostgreSQL's advisory lock so that replicas starting at once migrate it
// exactly once.
//
// The schema is one ordered list for the whole database: each store
// (registry, jobs, prediction log, lab results, fleet) adds its tables in
// a migration of its own, and every replica runs the same list.
//
// Start-up errors name the problem (the host that cannot be reached, the
// role whose password was refused, the privilege missing) and never hold
// the password: it comes only from PGPASSFILE, PGPASSWORD or a passfile=
// parameter.
package pgdb

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"ramanserve/platform/sqlschema"
	"ramanserve/platform/storeerr"
)

//go:embed migrations/*.sql
var migrations embed.FS

// ErrSchemaNewer means the database's schema was migrated by a newer
// server than this one: this one refuses to run against it.
var ErrSchemaNewer = errors.New("the database schema is newer than this server knows")

// ErrPasswordInURL means the URL carries a password, which would then
// show in the process list, the shell history and any log of the flag.
var ErrPasswordInURL = errors.New("the store URL holds a password; give it in PGPASSFILE, PGPASSWORD or a passfile= parameter instead")

// IsURL reports whether s names a PostgreSQL store (postgres:// or
// postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Options configure Open.
type Options struct {
	// ConnectTimeout bounds each connection attempt, the pool's later
	// ones included, when the URL (or PGCONNECT_TIMEOUT) gives no
	// connect_timeout; default 10 s.
	ConnectTimeout time.Duration
	// MaxConns bounds the pool (default 8).
	MaxConns int32
	// Migrate brings the schema up to date; without it, Open only checks
	// that the schema is the one this build knows (ramanserve migrate
	// then applies it).
	Migrate bool
	// Logger receives the migrations applied (slog.Default() when nil).
	Logger *slog.Logger
}

// Open connects to the database at rawURL, checks it and, with
// o.Migrate, migrates its schema. The pool it returns reconnects on its
// own after the database comes back.
func Open(ctx context.Context, rawURL string, o Options) (*pgxpool.Pool, error) {
	if o.MaxConns <= 0 {
		o.MaxConns = 8
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	cfg, err := ParseConfig(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = o.MaxConns
	timeout := connectTimeout(cfg, o)
	cfg.ConnConfig.ConnectTimeout = timeout
	where := Describe(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", where, err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := checkServer(cctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store %s: %w", where, Explain(err))
	}
	if err := migrate(ctx, pool, o); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store %s: %w", where, Explain(err))
	}
	return pool, nil
}

// connectTimeout is the operator's connect_timeout when the URL or the
// environment gives one, else o's, else 10 s.
func connectTimeout(cfg *pgxpool.Config, o Options) time.Duration {
	switch {
	case cfg.ConnConfig.ConnectTimeout > 0:
		return cfg.ConnConfig.ConnectTimeout
	case o.ConnectTimeout > 0:
		return o.ConnectTimeout
	}
	return 10 * time.Second
}

// ParseConfig parses a postgres:// URL, refusing one that holds a
// password. Errors never repeat the URL.
func ParseConfig(rawURL string) (*pgxpool.Config, error) {
	if !IsURL(rawURL) {
		return nil, errors.New("the store URL must begin with postgres:// or postgresql://")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("the store URL cannot be parsed")
	}
	if _, ok := u.User.Password(); ok || u.Query().Has("password") {
		return nil, ErrPasswordInURL
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			return nil, fmt.Errorf("the store URL is not valid: %v", pe.Unwrap())
		}
		return nil, errors.New("the store URL is not valid")
	}
	return cfg, nil
}

// Describe names the database of cfg for messages: user@host:port/db.
func Describe(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	return fmt.Sprintf("%s@%s/%s", c.User, net.JoinHostPort(c.Host, fmt.Sprint(c.Port)), c.Database)
}

// checkServer makes the first connection and checks that the peer is a
// PostgreSQL server of at least version 13 (gen_random_uuid, partitions).
func checkServer(ctx context.Context, pool *pgxpool.Pool) error {
	var version int
	if err := pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		return err
	}
	if version < 130000 {
		return fmt.Errorf("PostgreSQL %d.%d is too old: ramanserve needs 13 or later", version/10000, version%10000/100)
	}
	return nil
}

// Explain turns a connection or statement error into one that names the
// problem for an operator. It never adds the password (pgx never reports
// it).
func Explain(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "28P01", "28000":
			return fmt.Errorf("the database refused the role's credentials (%s); check PGPASSFILE or PGPASSWORD: %w", pg.Message, err)
		case "3D000":
			return fmt.Errorf("the database does not exist (%s): %w", pg.Message, err)
		case "42501":
			return fmt.Errorf("the role lacks a privilege the server needs (%s); see the grants in docs/fleet.md: %w", pg.Message, err)
		}
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from the database within the connect timeout (a peer that is not PostgreSQL, or a network that drops the connection): %w", err)
	}
	var ne net.Error
	if errors.As(err, &ne) || strings.Contains(err.Error(), "connect: connection refused") {
		return fmt.Errorf("cannot reach the database: %w", err)
	}
	if strings.Contains(err.Error(), "unexpected EOF") || strings.Contains(err.Error(), "failed to receive message") ||
		strings.Contains(err.Error(), "unexpected message") {
		return fmt.Errorf("the peer did not answer as PostgreSQL does: %w", err)
	}
	return err
}

// migrate checks the schema version and, with o.Migrate, applies the
// migrations this build has and the database has not, under the advisory
// lock of goose's session locker.
func migrate(ctx context.Context, pool *pgxpool.Pool, o Options) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db, o.Migrate)
	if err != nil {
		return err
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if current > target {
		return sqlschema.NewerError(ErrSchemaNewer, current, target)
	}
	if current == target {
		return nil
	}
	if !o.Migrate {
		return fmt.Errorf("the database schema is at version %d, this server needs %d: run ramanserve migrate", current, target)
	}
	results, err := p.Up(ctx)
	for _, r := range results {
		o.Logger.Info("store migration applied", "version", r.Source.Version, "file", r.Source.Path, "took", r.Duration)
	}
	if err != nil {
		return fmt.Errorf("migrate the schema: %w", err)
	}
	return nil
}

// provider is the goose provider over this build's migrations; with
// locking, applying them holds PostgreSQL's session advisory lock.
func provider(db *sql.DB, locking bool) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithTableName("ramanserve_schema_version")}
	if locking {
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 120))
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	return goose.NewProvider(goose.DialectPostgres, db, fsys, opts...)
}

// Migrations is how many migrations this build has.
func Migrations() int {
	entries, _ := fs.Glob(migrations, "migrations/*.sql")
	return len(entries)
}

// Classify wraps err with storeerr.ErrUnavailable when it says the
// database could not be reached or the connection was lost (rather than
// that a statement was refused), so that callers answer "try again"
// (STORE_UNAVAILABLE) instead of a failure of the request itself. Other
// errors, and nil, are returned as they are.
func Classify(err error) error {
	if err == nil || errors.Is(err, storeerr.ErrUnavailable) {
		return err
	}
	if Unreachable(err) {
		return fmt.Errorf("%w: %w", storeerr.ErrUnavailable, err)
	}
	return err
}

// Unreachable reports whether err is a connection failure: a dial or
// I/O error, a connection closed under the statement, a server shutting
// down (class 57P) or a connection exception (class 08).
func Unreachable(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Code, "08") || strings.HasPrefix(pg.Code, "57P")
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "conn closed")
}
