package sqlitelog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
)

// TestRecordWaitWaitsAndNeverDrops: with the writer stalled behind another
// connection's write lock, RecordWait waits for room instead of dropping
// (a deadline ends the wait with its error, counted nowhere) while Record
// keeps its own queue, and once the writer runs again every record either
// accepted is committed, none dropped.
func TestRecordWaitWaitsAndNeverDrops(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, predlog.Options{QueueSize: 8, BatchMax: 4, CommitInterval: 5 * time.Millisecond})
	blocker := rawDB(t, dir)
	conn, err := blocker.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	// Fill the queue and the writer's batch in hand: a stalled writer
	// cannot take more than the queue plus one batch.
	accepted := 0
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := l.RecordWait(ctx, testRecord(i, "B", false))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted++
		if accepted > 8+4+1 {
			t.Fatalf("RecordWait accepted %d records with the writer stalled: it did not wait", accepted)
		}
	}
	if l.Dropped() != 0 {
		t.Fatalf("dropped %d: a RecordWait that timed out counted as dropped", l.Dropped())
	}
	// Background records never take the hot path's room: with RecordWait
	// stuck, Record still has its whole queue.
	for i := range 8 {
		if !l.Record(testRecord(500+i, "B", false)) {
			t.Fatalf("Record %d refused while only background records wait", i)
		}
	}
	accepted += 8
	// Many more than the queue holds: each waits for room.
	const more = 200
	errc := make(chan error, 1)
	go func() {
		for i := range more {
			if err := l.RecordWait(context.Background(), testRecord(1000+i, "B", false)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	closeLog(t, l)
	st := l.Stats()
	want := uint64(accepted + more)
	if st.Committed != want || st.Dropped != 0 || st.WriteFailed != 0 {
		t.Fatalf("committed %d, dropped %d, failed %d; want %d, 0, 0", st.Committed, st.Dropped, st.WriteFailed, want)
	}
	if got := countRows(t, rawDB(t, dir), ""); got != int(want) {
		t.Fatalf("%d rows, want %d", got, want)
	}
	if err := l.RecordWait(context.Background(), testRecord(0, "B", false)); !errors.Is(err, predlog.ErrClosed) {
		t.Fatalf("RecordWait after Close: %v, want ErrClosed", err)
	}
	if l.Dropped() != 0 {
		t.Fatalf("RecordWait after Close counted as dropped")
	}
}
