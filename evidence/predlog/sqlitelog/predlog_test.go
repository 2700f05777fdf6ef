package sqlitelog_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, predlog.Options{})
	want := make([]*predlog.Record, 50)
	for i := range want {
		want[i] = testRecord(i, "B1", i%2 == 0)
	}
	// A record with every optional field absent.
	want[7].HasBatchID, want[7].BatchID = true, "B1"
	want[7].HasPort, want[7].Port = false, ""
	want[7].HasReducedQ, want[7].ReducedQ = false, 0
	want[7].Concentrations.Valid[2], want[7].Concentrations.Value[2] = false, 0
	recordAll(l, want...)
	closeLog(t, l)

	l = openLog(t, dir, predlog.Options{})
	defer closeLog(t, l)
	page, err := l.Page(context.Background(), predlog.Filter{WithSpectra: false})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) != len(want) || page.Next != "" {
		t.Fatalf("got %d records, next %q; want %d and no next", len(page.Records), page.Next, len(want))
	}
	for i, got := range page.Records {
		w := *want[i]
		w.ID = got.ID
		w.Spectrum, w.Wavenumbers = nil, nil
		if got.ID == 0 {
			t.Errorf("record %d: no ID", i)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
	spectra, err := l.Page(context.Background(), predlog.Filter{WithSpectra: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(spectra.Records) != 25 {
		t.Fatalf("got %d records with spectra, want 25", len(spectra.Records))
	}
	if &spectra.Records[0].Wavenumbers[0] != &spectra.Records[1].Wavenumbers[0] {
		t.Error("records of one page with the same axis do not share its decoded slice")
	}
	for _, got := range spectra.Records {
		i := int(got.ScanSeq)
		if !reflect.DeepEqual(got.Spectrum, want[i].Spectrum) || !reflect.DeepEqual(got.Wavenumbers, want[i].Wavenumbers) {
			t.Errorf("record %d: the spectrum does not round-trip", i)
		}
	}
}

func TestQueries(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, t.TempDir(), predlog.Options{})
	defer closeLog(t, l)
	var recs []*predlog.Record
	for i := range 100 {
		a := testRecord(i*10, "A", false) // 10 ms apart
		s := *a
		s.Role, s.ModelVersion, s.ReducedT2 = predlog.RoleShadow, "v2", 9
		b := testRecord(i*10+5, "B", false)
		recs = append(recs, a, &s, b)
	}
	recordAll(l, recs...)
	waitFor(t, "the commit", func() bool { return l.Stats().Committed == uint64(len(recs)) })

	t.Run("pages", func(t *testing.T) {
		var got []predlog.Record
		f := predlog.Filter{BatchID: "A", HasBatchID: true, Limit: 7, Since: t0.Add(100 * time.Millisecond), Until: t0.Add(900 * time.Millisecond)}
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("paging does not end")
			}
			p, err := l.Page(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Records...)
			if p.Next == "" {
				break
			}
			f.Cursor = p.Next
		}
		// Batch A from 100 ms to 890 ms: 80 spectra, active and shadow.
		if len(got) != 160 {
			t.Fatalf("got %d records, want 160", len(got))
		}
		for k := 1; k < len(got); k++ {
			prev, cur := got[k-1], got[k]
			if cur.Time.Before(prev.Time) || (cur.Time.Equal(prev.Time) && cur.ID <= prev.ID) || cur.BatchID != "A" {
				t.Fatalf("record %d out of order or of another batch", k)
			}
		}
	})
	t.Run("by model and role", func(t *testing.T) {
		p, err := l.Page(ctx, predlog.Filter{ModelVersion: "v2", Role: predlog.RoleShadow})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 100 {
			t.Fatalf("got %d shadow records, want 100", len(p.Records))
		}
	})
	t.Run("bounds beyond UnixNano", func(t *testing.T) {
		// time.Time.UnixNano wraps outside 1678–2262: a bound in the year
		// 3000 must be later than every record, one in the year 1000 earlier.
		far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
		past := time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
		p, err := l.Page(ctx, predlog.Filter{BatchID: "A", HasBatchID: true, Role: predlog.RoleActive, Since: past, Until: far, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 100 {
			t.Fatalf("Page(1000..3000) got %d records, want 100", len(p.Records))
		}
		if _, ok, err := l.Nearest(ctx, "A", far, time.Hour); err != nil || ok {
			t.Fatalf("Nearest(year 3000, 1h) = ok %v, err %v; want nothing", ok, err)
		}
		if _, ok, err := l.Nearest(ctx, "A", past, time.Hour); err != nil || ok {
			t.Fatalf("Nearest(year 1000, 1h) = ok %v, err %v; want nothing", ok, err)
		}
		rec, ok, err := l.Nearest(ctx, "A", far, time.Duration(math.MaxInt64))
		if err != nil || !ok || !rec.Time.Equal(t0.Add(990*time.Millisecond)) {
			t.Fatalf("Nearest(year 3000, max window) = %v at %v, err %v; want the last record of A", ok, rec.Time, err)
		}
	})
	t.Run("nearest", func(t *testing.T) {
		// A's records are at 0, 10, 20 ... ms; 34 ms is nearest to 30.
		rec, ok, err := l.Nearest(ctx, "A", t0.Add(34*time.Millisecond), time.Second)
		if err != nil || !ok || rec.ScanSeq != 30 || rec.Role != predlog.RoleActive {
			t.Fatalf("nearest: %+v %v %v", rec, ok, err)
		}
		rec, ok, err = l.Nearest(ctx, "A", t0.Add(36*time.Millisecond), time.Second)
		if err != nil || !ok || rec.ScanSeq != 40 {
			t.Fatalf("nearest: %+v %v %v", rec, ok, err)
		}
		_, ok, err = l.Nearest(ctx, "A", t0.Add(-time.Second), 500*time.Millisecond)
		if err != nil || ok {
			t.Fatalf("nearest outside the window: found %v, %v", ok, err)
		}
		_, ok, _ = l.Nearest(ctx, "nope", t0, time.Hour)
		if ok {
			t.Fatal("nearest found a record of an unknown batch")
		}
	})
	t.Run("scan seq and prediction id", func(t *testing.T) {
		rec, ok, err := l.ByScanSeq(ctx, "A", 420)
		if err != nil || !ok || rec.ScanSeq != 420 || rec.BatchID != "A" {
			t.Fatalf("by scan seq: %+v %v %v", rec, ok, err)
		}
		if _, ok, _ := l.ByScanSeq(ctx, "B", 420); ok {
			t.Fatal("batch B has no scan 420")
		}
		both, err := l.ByPrediction(ctx, rec.PredictionID)
		if err != nil || len(both) != 2 || both[0].Role != predlog.RoleActive || both[1].Role != predlog.RoleShadow || both[1].ModelVersion != "v2" {
			t.Fatalf("by prediction: %+v %v", both, err)
		}
	})
	t.Run("bad cursor", func(t *testing.T) {
		if _, err := l.Page(ctx, predlog.Filter{Cursor: "not-a-cursor"}); !errors.Is(err, predlog.ErrBadCursor) {
			t.Fatalf("got %v, want ErrBadCursor", err)
		}
	})
}

// TestQueueFullDrops: while the writer is stalled (another connection holds
// SQLite's write lock), Record keeps returning at once; what the queue
// cannot hold is dropped and counted, and what it accepted is committed
// once the writer runs again.
func TestQueueFullDrops(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, predlog.Options{QueueSize: 64, BatchMax: 16, CommitInterval: 10 * time.Millisecond})
	blocker := rawDB(t, dir)
	conn, err := blocker.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	const n = 10000
	accepted := 0
	for i := range n {
		if l.Record(testRecord(i, "B", false)) {
			accepted++
		}
	}
	// The loop above finished with the writer stalled: Record never
	// waited for it. At most the queue plus the batch in hand got in.
	if accepted > 64+16+1 || l.Dropped() != uint64(n-accepted) {
		t.Fatalf("accepted %d, dropped %d of %d", accepted, l.Dropped(), n)
	}
	if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	closeLog(t, l)
	st := l.Stats()
	if st.Committed != uint64(accepted) || st.WriteFailed != 0 {
		t.Fatalf("committed %d, failed %d; want %d, 0", st.Committed, st.WriteFailed, accepted)
	}
	if got := countRows(t, rawDB(t, dir), ""); got != accepted {
		t.Fatalf("%d rows, want %d", got, accepted)
	}
}

// TestBatchCommit: a full batch commits at once, a partial one waits for
// the commit interval (here an hour), and Close commits it.
func TestBatchCommit(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, predlog.Options{BatchMax: 100, CommitInterval: time.Hour})
	for i := range 250 {
		recordAll(l, testRecord(i, "B", false))
	}
	waitFor(t, "two full batches", func() bool { return l.Stats().Committed >= 200 })
	time.Sleep(50 * time.Millisecond)
	if c := l.Stats().Committed; c != 200 {
		t.Fatalf("committed %d before the interval, want the two full batches (200)", c)
	}
	closeLog(t, l)
	if c := l.Stats().Committed; c != 250 {
		t.Fatalf("committed %d after Close, want 250", c)
	}

	l = openLog(t, dir, predlog.Options{BatchMax: 1 << 20, CommitInterval: 20 * time.Millisecond})
	defer closeLog(t, l)
	recordAll(l, testRecord(1000, "B", false))
	waitFor(t, "the interval's commit", func() bool { return l.Stats().Committed == 1 })
}

func TestSecondOpenRefused(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, predlog.Options{})
	if _, err := sqlitelog.OpenLog(context.Background(), dir, predlog.Options{}); !errors.Is(err, sqlitelog.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	closeLog(t, l)
	l = openLog(t, dir, predlog.Options{}) // released by Close
	closeLog(t, l)
}

// TestOddRecords: a record without a time gets the log's clock, one with
// an oversized spectrum is logged without it, and neither costs the batch
// the others are in.
func TestOddRecords(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, predlog.Options{Now: func() time.Time { return t0.Add(time.Hour) }})
	noTime := testRecord(1, "odd", false)
	noTime.Time = time.Time{}
	huge := testRecord(2, "odd", false)
	huge.Spectrum = make([]float32, sqlitelog.MaxSpectrumPoints+1)
	if l.Record(nil) {
		t.Fatal("a nil record was accepted")
	}
	recordAll(l, testRecord(0, "odd", true), noTime, huge)
	closeLog(t, l)
	if st := l.Stats(); st.Committed != 3 || st.WriteFailed != 0 {
		t.Fatalf("committed %d, failed %d", st.Committed, st.WriteFailed)
	}
	l = openLog(t, dir, predlog.Options{})
	defer closeLog(t, l)
	p, err := l.Page(context.Background(), predlog.Filter{})
	if err != nil || len(p.Records) != 3 {
		t.Fatalf("%d records, %v", len(p.Records), err)
	}
	if got := p.Records[2]; got.ScanSeq != 1 || !got.Time.Equal(t0.Add(time.Hour)) {
		t.Fatalf("the record without a time: %+v", got)
	}
	s, err := l.Page(context.Background(), predlog.Filter{WithSpectra: true})
	if err != nil || len(s.Records) != 1 || s.Records[0].ScanSeq != 0 {
		t.Fatalf("records with spectra: %+v, %v", s.Records, err)
	}
}

func TestRecordAfterCloseDrops(t *testing.T) {
	l := openLog(t, t.TempDir(), predlog.Options{})
	closeLog(t, l)
	if l.Record(testRecord(0, "B", false)) || l.Dropped() != 1 {
		t.Fatal("a record after Close was accepted or not counted")
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	if _, err := sqlitelog.OpenLog(context.Background(), t.TempDir(), predlog.Options{MaxBytes: 1000}); err == nil {
		t.Fatal("a size bound below the minimum was accepted")
	}
}

// TestFailedBatchIsCountedAndSkipped: a batch that SQLite refuses (here a
// trigger aborts it, as a full disk would) is rolled back and counted in
// WriteFailed; the writer goes on with the next batches.
func TestFailedBatchIsCountedAndSkipped(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, predlog.Options{BatchMax: 10, CommitInterval: time.Hour})
	db := rawDB(t, dir)
	if _, err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON predictions
		WHEN NEW.batch_id = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END`); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		batch := "good"
		if i == 15 {
			batch = "poison" // the second batch of ten fails as a whole
		}
		recordAll(l, testRecord(i, batch, false))
	}
	waitFor(t, "three batches", func() bool { st := l.Stats(); return st.Committed+st.WriteFailed == 30 })
	if st := l.Stats(); st.Committed != 20 || st.WriteFailed != 10 {
		t.Fatalf("committed %d, failed %d; want 20 and 10", st.Committed, st.WriteFailed)
	}
	closeLog(t, l)
	if n := countRows(t, db, `WHERE scan_seq BETWEEN 10 AND 19`); n != 0 {
		t.Fatalf("%d rows of the failed batch were kept", n)
	}
	if n := countRows(t, db, ""); n != 20 {
		t.Fatalf("%d rows, want 20", n)
	}
}

// TestNewerSchemaRefused: a log written by a newer server is left alone.
func TestNewerSchemaRefused(t *testing.T) {
	dir := t.TempDir()
	closeLog(t, openLog(t, dir, predlog.Options{}))
	db := rawDB(t, dir)
	if _, err := db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := sqlitelog.OpenLog(context.Background(), dir, predlog.Options{}); !errors.Is(err, sqlitelog.ErrNewerSchema) {
		t.Fatalf("open: %v, want ErrNewerSchema", err)
	}
	// The refusal released the directory's lock.
	if _, err := sqlitelog.OpenLog(context.Background(), dir, predlog.Options{}); !errors.Is(err, sqlitelog.ErrNewerSchema) {
		t.Fatalf("second open: %v, want ErrNewerSchema again", err)
	}
}

// TestSpectraPageIsCapped: a page with spectra holds at most
// MaxSpectraPageLimit records, whatever limit is asked for.
func TestSpectraPageIsCapped(t *testing.T) {
	l := openLog(t, t.TempDir(), predlog.Options{})
	defer closeLog(t, l)
	for i := range predlog.MaxSpectraPageLimit + 10 {
		recordAll(l, testRecord(i, "S", true))
	}
	waitFor(t, "the commit", func() bool { return l.Stats().Committed == predlog.MaxSpectraPageLimit+10 })
	p, err := l.Page(context.Background(), predlog.Filter{WithSpectra: true, Limit: predlog.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Records) != predlog.MaxSpectraPageLimit || p.Next == "" {
		t.Fatalf("%d records, next %q", len(p.Records), p.Next)
	}
	rest, err := l.Page(context.Background(), predlog.Filter{WithSpectra: true, Cursor: p.Next})
	if err != nil || len(rest.Records) != 10 || rest.Next != "" {
		t.Fatalf("the rest: %d records, next %q, %v", len(rest.Records), rest.Next, err)
	}
}

// TestNewPredictionID: ids are version 7 UUIDs (RFC 9562 variant) of the
// current millisecond, distinct, and made without allocating.
func TestNewPredictionID(t *testing.T) {
	before := time.Now().UnixMilli()
	seen := make(map[predlog.PredictionID]bool)
	for range 10000 {
		id := predlog.NewPredictionID()
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: version %d variant %v", id, id.Version(), id.Variant())
		}
		if seen[id] {
			t.Fatalf("%s made twice", id)
		}
		seen[id] = true
	}
	id := predlog.NewPredictionID()
	sec, nsec := id.Time().UnixTime()
	ms := sec*1000 + nsec/1e6
	if ms < before || ms > time.Now().UnixMilli() {
		t.Fatalf("id time %d ms, not within [%d, now]", ms, before)
	}
	if n := testing.AllocsPerRun(100, func() { predlog.NewPredictionID() }); n != 0 {
		t.Fatalf("NewPredictionID allocates %v times", n)
	}
}
