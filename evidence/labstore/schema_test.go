package labstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"ramanserve/evidence/labstore"
	"ramanserve/evidence/predlog"
)

// schemaV1BeforeGoose is version 1 of the store as the migration loop
// before goose created it: its DDL, then schema_version at 1.
var schemaV1BeforeGoose = []string{
	`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
	`CREATE TABLE lab_results (
		lab_sample_id TEXT    NOT NULL PRIMARY KEY,
		batch_id      TEXT    NOT NULL,
		scan_seq      INTEGER,
		sampled_at    TEXT,
		epa REAL, dha REAL, dpa REAL,
		matched       INTEGER NOT NULL,
		prediction_id BLOB,
		spectrum_ts   INTEGER,
		reason        TEXT    NOT NULL,
		CHECK (matched IN (0, 1)),
		CHECK (matched = 0 OR (prediction_id IS NOT NULL AND spectrum_ts IS NOT NULL))
	);
	CREATE INDEX lab_results_spectrum ON lab_results (spectrum_ts, lab_sample_id) WHERE matched = 1;`,
	`INSERT INTO schema_version (version) VALUES (1)`,
}

// TestAdoptsFileFromBeforeGoose: a store written by the server before
// goose opens with its results, at goose version 1, and takes new ones.
func TestAdoptsFileFromBeforeGoose(t *testing.T) {
	dir := t.TempDir()
	db := rawDB(t, dir)
	for _, stmt := range schemaV1BeforeGoose {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	pid := predlog.NewPredictionID()
	if _, err := db.Exec(`INSERT INTO lab_results
		(lab_sample_id, batch_id, scan_seq, sampled_at, epa, dha, dpa, matched, prediction_id, spectrum_ts, reason)
		VALUES ('old-1', 'B-1', 1, NULL, 181.5, NULL, NULL, 1, ?, ?, ''), ('old-2', 'B-9', NULL, NULL, NULL, 90, NULL, 0, NULL, NULL, 'unknown_batch')`,
		pid[:], t0.UnixNano()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := openStore(t, dir)
	got := rangeAll(t, s, t0, t0.Add(1), 10)
	if len(got) != 1 || got[0].LabSampleID != "old-1" || got[0].PredictionID != pid || got[0].Lab.Value[0] != 181.5 {
		t.Fatalf("after adoption: %+v", got)
	}
	if n := upsert(t, s, matched("old-2", 2, 1), matched("new", 3, 2)); n != 1 {
		t.Fatalf("the unmatched result of before goose was not replaced: %d replaced", n)
	}
	db = rawDB(t, dir)
	var versions string
	if err := db.QueryRow(`SELECT group_concat(version_id) FROM (SELECT version_id FROM goose_db_version ORDER BY id)`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != "0,1,2" {
		t.Fatalf("goose versions %s, want 0,1,2", versions)
	}
}

// TestNewerGooseSchemaRefused: a store a newer server migrated beyond
// this build's migrations is refused and left as it was.
func TestNewerGooseSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	upsert(t, s, matched("a", 1, 10))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (3, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	path := filepath.Join(dir, labstore.FileName)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = labstore.Open(context.Background(), dir)
	if !errors.Is(err, labstore.ErrNewerSchema) {
		t.Fatalf("open: %v, want ErrNewerSchema", err)
	}
	t.Log(err)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the refused file changed")
	}
}

// TestConcurrentFirstOpens: two stores open one new file at once (as the
// processes of TestSecondProcess may); the schema is made once.
func TestConcurrentFirstOpens(t *testing.T) {
	dir := t.TempDir()
	stores := make([]*labstore.SQLite, 2)
	errs := make([]error, len(stores))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = labstore.Open(context.Background(), dir)
		})
	}
	close(start)
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { s.Close() })
	}
	upsert(t, stores[0], matched("a", 1, 10))
	if got := rangeAll(t, stores[1], t0, t0.Add(2e9), 10); len(got) != 1 {
		t.Fatalf("the second store reads %d results", len(got))
	}
	db := rawDB(t, dir)
	for query, want := range map[string]int64{
		`SELECT count(*) FROM goose_db_version`:                      3,
		`SELECT count(*) FROM goose_db_version WHERE version_id = 1`: 1,
		`SELECT count(*) FROM goose_db_version WHERE version_id = 2`: 1,
		`SELECT version FROM schema_version`:                         2,
	} {
		var got int64
		if err := db.QueryRow(query).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %d, want %d", query, got, want)
		}
	}
}
