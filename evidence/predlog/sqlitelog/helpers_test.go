package sqlitelog_test

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/predlogtest"
	"ramanserve/evidence/predlog/sqlitelog"
)

// t0 is the time of record 0 in the tests.
var t0 = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// testRecord makes record i of batch as the contract suite does
// (predlogtest.Record: a millisecond apart from t0, every field set), with
// a 2048-point Raman-like spectrum when spectrum is set, so that sizes
// and compression are those of real scans.
func testRecord(i int, batch string, spectrum bool) *predlog.Record {
	rec := predlogtest.Record(i, batch, false)
	if spectrum {
		rec.Spectrum, rec.Wavenumbers = testSpectrum(i)
	}
	return rec
}

// testAxis is the 2048-point axis every test spectrum shares.
var testAxis = func() []float32 {
	w := make([]float32, 2048)
	for k := range w {
		w[k] = 200 + float32(k)*1.5
	}
	return w
}()

// testSpectrum is a Raman-like scan: a few bands on a baseline, with
// deterministic noise, in whole detector counts, so that it compresses like
// a real one.
func testSpectrum(i int) (intensities, wavenumbers []float32) {
	s := make([]float32, len(testAxis))
	seed := uint32(i)*2654435761 + 1
	for k, w := range testAxis {
		seed = seed*1664525 + 1013904223
		noise := float64(seed>>8)/float64(1<<24) - 0.5
		band := 800*math.Exp(-sq(float64(w)-1650)/200) + 500*math.Exp(-sq(float64(w)-2900)/400)
		// A CCD's counts are whole numbers.
		s[k] = float32(math.Round(1000 + 0.2*float64(w) + band + 15*noise))
	}
	return s, testAxis
}

func sq(x float64) float64 { return x * x }

func openLog(t testing.TB, dir string, opts predlog.Options) *predlog.Writer {
	t.Helper()
	l, err := sqlitelog.OpenLog(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func closeLog(t testing.TB, l *predlog.Writer) {
	t.Helper()
	// Close commits what is queued: up to QueueSize records, minutes'
	// worth under -race on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// recordAll records every rec, waiting (not dropping) while the queue is
// full.
func recordAll(l predlog.Recorder, recs ...*predlog.Record) {
	for _, rec := range recs {
		for !l.Record(rec) {
			runtime.Gosched()
		}
	}
}

// waitFor polls cond until it holds or the deadline, generous for a
// machine busy with other test binaries under -race, passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawDB opens the log's file directly, bypassing predlog (and its lock).
func rawDB(t testing.TB, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, sqlitelog.DatabaseFileName)+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func countRows(t testing.TB, db *sql.DB, where string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM predictions `+where, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func integrityCheck(t testing.TB, db *sql.DB) {
	t.Helper()
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil {
		t.Fatal(err)
	}
	if res != "ok" {
		t.Fatalf("integrity_check: %s", res)
	}
}
