package pgdb_test

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ramanserve/platform/pgdb"
	"ramanserve/platform/pgtest"
)

// TestOpenMigratesOnce: replicas opening one database at once apply the
// migrations once; a later open finds nothing to do.
func TestOpenMigratesOnce(t *testing.T) {
	u := pgtest.Database(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := pgdb.Open(context.Background(), u, pgdb.Options{Migrate: true})
			if err == nil {
				p.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
	}
	p, err := pgdb.Open(context.Background(), u, pgdb.Options{})
	if err != nil {
		t.Fatalf("open without migrating after the migration: %v", err)
	}
	defer p.Close()
	var applied int
	if err := p.QueryRow(context.Background(), `SELECT count(*) FROM ramanserve_schema_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != pgdb.Migrations() {
		t.Fatalf("%d migrations recorded, want each of the %d once", applied, pgdb.Migrations())
	}
}

// TestOpenRefusesANewerSchema: a schema version beyond this build's is
// refused, and nothing is changed.
func TestOpenRefusesANewerSchema(t *testing.T) {
	u := pgtest.Database(t)
	p, err := pgdb.Open(context.Background(), u, pgdb.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	pgtest.Exec(t, u, `INSERT INTO ramanserve_schema_version (version_id, is_applied) VALUES (999999, true)`)
	_, err = pgdb.Open(context.Background(), u, pgdb.Options{Migrate: true})
	if !errors.Is(err, pgdb.ErrSchemaNewer) {
		t.Fatalf("open against a newer schema: %v", err)
	}
	t.Log(err)
}

// TestOpenWithoutMigrateRefusesAnOldSchema: a server told not to migrate
// refuses a database that needs it, naming the command.
func TestOpenWithoutMigrateRefusesAnOldSchema(t *testing.T) {
	u := pgtest.Database(t)
	_, err := pgdb.Open(context.Background(), u, pgdb.Options{})
	if err == nil || !strings.Contains(err.Error(), "ramanserve migrate") {
		t.Fatalf("open of an empty database without migrating: %v", err)
	}
}

// TestPasswordNeverInTheURL: a URL with a password is refused before any
// connection, and the error does not repeat it.
func TestPasswordNeverInTheURL(t *testing.T) {
	for _, u := range []string{
		"postgres://alice:s3cret-pw@127.0.0.1:1/db",
		"postgresql://alice@127.0.0.1:1/db?password=s3cret-pw",
	} {
		_, err := pgdb.Open(context.Background(), u, pgdb.Options{})
		if !errors.Is(err, pgdb.ErrPasswordInURL) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"mysql://x", "host=127.0.0.1 password=s3cret-pw", "postgres://%zz"} {
		_, err := pgdb.Open(context.Background(), u, pgdb.Options{})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: %v", u, err)
		}
	}
}

// TestVerifyFullTLS: with sslmode=verify-full and the cluster's CA the
// connection is TLS and checked; a CA that did not sign the server's
// certificate is refused.
func TestVerifyFullTLS(t *testing.T) {
	u := pgtest.Database(t)
	ca := pgtest.CA(t)
	if ca == "" {
		t.Skip("the test cluster has no CA")
	}
	tlsURL := strings.Replace(u, "sslmode=disable", "sslmode=verify-full&sslrootcert="+ca, 1)
	p, err := pgdb.Open(context.Background(), tlsURL, pgdb.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ssl bool
	if err := p.QueryRow(context.Background(), `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl); err != nil || !ssl {
		t.Fatalf("connection with verify-full: ssl %v, %v", ssl, err)
	}
	other := filepath.Join(t.TempDir(), "other-ca.pem")
	if out, err := exec.Command("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
		"-days", "1", "-subj", "/CN=another CA", "-keyout", filepath.Join(t.TempDir(), "k.pem"), "-out", other).CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	_, err = pgdb.Open(context.Background(), strings.Replace(u, "sslmode=disable", "sslmode=verify-full&sslrootcert="+other, 1), pgdb.Options{})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a server certificate signed by another CA: %v", err)
	}
	t.Logf("another CA: %v", err)
}

// TestConnectTimeoutFromTheURL: a connect_timeout in the URL bounds the
// first connection, over Options.ConnectTimeout; without one,
// Options.ConnectTimeout does. The peer accepts and never answers, so
// only the timeout can end Open; the hour the other setting names would
// outlast the test.
func TestConnectTimeoutFromTheURL(t *testing.T) {
	t.Setenv("PGCONNECT_TIMEOUT", "") // one set around the test would count as the URL's
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // silent until the test ends
		}
	}()
	base := "postgres://alice@" + l.Addr().String() + "/db?sslmode=disable"
	for _, tc := range []struct {
		name, url string
		opts      pgdb.Options
	}{
		{"the URL's", base + "&connect_timeout=1", pgdb.Options{ConnectTimeout: time.Hour}},
		{"the options'", base, pgdb.Options{ConnectTimeout: 200 * time.Millisecond}},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := pgdb.Open(context.Background(), tc.url, tc.opts)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "within the connect timeout") {
				t.Errorf("%s timeout: %v, want no answer within the connect timeout", tc.name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s timeout: Open still waits on a silent peer after a minute", tc.name)
		}
	}
}
