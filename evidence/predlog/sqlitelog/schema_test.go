package sqlitelog_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
)

// schemaV1BeforeGoose is version 1 of the log as the migration loop
// before goose created it: its DDL, then schema_version at 1.
var schemaV1BeforeGoose = []string{
	`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
	`CREATE TABLE axes (
		id     INTEGER PRIMARY KEY,
		digest BLOB NOT NULL UNIQUE,
		data   BLOB NOT NULL
	);
	CREATE TABLE predictions (
		id             INTEGER PRIMARY KEY,
		prediction_id  BLOB    NOT NULL,
		ts             INTEGER NOT NULL,
		model_version  TEXT    NOT NULL,
		role           INTEGER NOT NULL,
		epa REAL, dha REAL, dpa REAL,
		epa_conf REAL, dha_conf REAL, dpa_conf REAL,
		reduced_t2     REAL,
		reduced_q      REAL,
		batch_id       TEXT,
		port           TEXT,
		column_index   REAL,
		scan_seq       REAL,
		channel        REAL,
		integration_ms REAL,
		axis_id        INTEGER,
		spectrum       BLOB
	);
	CREATE INDEX predictions_ts ON predictions (ts);
	CREATE INDEX predictions_batch_ts ON predictions (batch_id, ts);
	CREATE INDEX predictions_batch_seq ON predictions (batch_id, scan_seq);
	CREATE INDEX predictions_model_ts ON predictions (model_version, ts);
	CREATE INDEX predictions_prediction ON predictions (prediction_id);`,
	`INSERT INTO schema_version (version) VALUES (1)`,
}

// TestAdoptsFileFromBeforeGoose: a log written by the server before goose
// opens with its records, migrated through every goose version, and
// takes new ones.
func TestAdoptsFileFromBeforeGoose(t *testing.T) {
	dir := t.TempDir()
	db := rawDB(t, dir)
	for _, stmt := range schemaV1BeforeGoose {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	pid := predlog.NewPredictionID()
	if _, err := db.Exec(`INSERT INTO predictions (prediction_id, ts, model_version, role, epa, batch_id)
		VALUES (?, ?, 'v0', 0, 181.5, 'B-old')`, pid[:], t0.UnixNano()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	l := openLog(t, dir, predlog.Options{})
	recordAll(l, testRecord(1, "B-new", true))
	closeLog(t, l)
	l = openLog(t, dir, predlog.Options{})
	defer closeLog(t, l)
	page, err := l.Page(context.Background(), predlog.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != 2 {
		t.Fatalf("%d records after adoption, want the old one and the new", len(page.Records))
	}
	old := page.Records[0]
	if old.PredictionID != pid || old.ModelVersion != "v0" || old.BatchID != "B-old" || old.Concentrations.Value[0] != 181.5 {
		t.Fatalf("the record of before goose reads %+v", old)
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

// TestNewerGooseSchemaRefused: a log a newer server migrated beyond this
// build's migrations is refused and left as it was.
func TestNewerGooseSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	closeLog(t, openLog(t, dir, predlog.Options{}))
	db := rawDB(t, dir)
	if _, err := db.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (3, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	path := filepath.Join(dir, sqlitelog.DatabaseFileName)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sqlitelog.OpenLog(context.Background(), dir, predlog.Options{})
	if !errors.Is(err, sqlitelog.ErrNewerSchema) {
		t.Fatalf("open: %v, want ErrNewerSchema", err)
	}
	t.Log(err)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(withoutChangeCounter(before), withoutChangeCounter(after)) {
		t.Fatal("the refused file changed")
	}
}

// withoutChangeCounter is a copy of the database file b with the file
// change counter of its header (and the copy of it at offset 92) zeroed:
// every open of the log bumps it, refused or not, as the driver sets
// auto_vacuum on each connection (package sqlitedb).
func withoutChangeCounter(b []byte) []byte {
	b = bytes.Clone(b)
	clear(b[24:28])
	clear(b[92:96])
	return b
}
