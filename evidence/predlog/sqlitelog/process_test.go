package sqlitelog_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/evidence/predlog"
	"ramanserve/evidence/predlog/sqlitelog"
	"ramanserve/platform/race"
)

// The test binary doubles as the child process of the tests below: with
// childEnv set it runs the role named there instead of the tests.
const childEnv = "PREDLOG_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role, os.Getenv("PREDLOG_TEST_DIR")))
	}
	os.Exit(m.Run())
}

func runChild(role, dir string) int {
	l, err := sqlitelog.OpenLog(context.Background(), dir, predlog.Options{CommitInterval: 20 * time.Millisecond})
	if errors.Is(err, sqlitelog.ErrLocked) {
		fmt.Println("locked")
		return 3
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	switch role {
	case "hold":
		fmt.Println("open")
		select {} // until killed
	case "record":
		recordUntilKilled(l)
	}
	return 0
}

// recordUntilKilled records scans 0, 1, 2 ... of batch "crash" as fast as
// the queue takes them (retrying a refused record, so that every scan up
// to the last accepted one was accepted, in order). Whenever the writer's
// committed count grows, it prints "committed S": every scan up to S is in
// a committed transaction. The parent kills it with SIGKILL.
func recordUntilKilled(l *predlog.Writer) {
	go func() {
		var last uint64
		for {
			// The queue is FIFO and there is one writer, so the c records
			// committed are scans 0 .. c-1.
			if c := l.Stats().Committed; c != last {
				last = c
				fmt.Printf("committed %d\n", c-1)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for i := 0; ; i++ {
		rec := testRecord(i, "crash", i%4 == 0)
		for !l.Record(rec) {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

func startChild(t *testing.T, role, dir string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "PREDLOG_TEST_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewScanner(out)
}

// TestCrashSafety: a child records at full rate, the parent kills it with
// SIGKILL mid-way, reopens the log: the database is intact and holds every
// scan the child saw committed before the kill.
func TestCrashSafety(t *testing.T) {
	// Each round kills at a different point, well into the run: past
	// minCommits+stepCommits*round commits and 5000 scans (a WAL
	// checkpoint or more). A commit of a full batch takes seconds under
	// -race, where the rounds kill after fewer commits.
	minCommits, stepCommits := 20, 15
	if race.Enabled {
		minCommits, stepCommits = 5, 3
	}
	rounds := 3
	if testing.Short() || race.Enabled {
		// The inner loop, and the race detector, which checks the
		// writer's concurrency in one round as well as in three; make
		// bench runs every round without it.
		rounds = 1
	}
	for round := range rounds {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			dir := t.TempDir()
			cmd, lines := startChild(t, "record", dir)
			acked := int64(-1)
			commits := 0
			for lines.Scan() {
				line := lines.Text()
				s, ok := strings.CutPrefix(line, "committed ")
				if !ok {
					t.Fatalf("child: %s", line)
				}
				if acked, _ = strconv.ParseInt(s, 10, 64); acked < 0 {
					t.Fatalf("child: %s", line)
				}
				if commits++; commits >= minCommits+stepCommits*round && acked > 5000 {
					break
				}
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			// Lines printed before the kill but not yet read are acks too.
			for lines.Scan() {
				if s, ok := strings.CutPrefix(lines.Text(), "committed "); ok {
					acked, _ = strconv.ParseInt(s, 10, 64)
				}
			}

			db := rawDB(t, dir)
			integrityCheck(t, db)
			if got := countRows(t, db, `WHERE batch_id = 'crash' AND scan_seq <= ?`, acked); int64(got) != acked+1 {
				t.Fatalf("%d of the %d scans acknowledged as committed survived the kill", got, acked+1)
			}
			total := countRows(t, db, "")
			t.Logf("acknowledged %d scans, found %d rows after kill -9", acked+1, total)
			db.Close()

			l := openLog(t, dir, predlog.Options{}) // the lock died with the child
			rec, ok, err := l.ByScanSeq(context.Background(), "crash", float64(acked))
			if err != nil || !ok || rec.BatchID != "crash" {
				t.Fatalf("the last acknowledged scan: %v %v", ok, err)
			}
			closeLog(t, l)
		})
	}
}

// TestSecondProcessRefused: while one process has the log open, another is
// refused; once the first dies (kill -9), the log opens again.
func TestSecondProcessRefused(t *testing.T) {
	dir := t.TempDir()
	holder, lines := startChild(t, "hold", dir)
	if !lines.Scan() || lines.Text() != "open" {
		t.Fatalf("holder: %q", lines.Text())
	}
	if _, err := sqlitelog.OpenLog(context.Background(), dir, predlog.Options{}); !errors.Is(err, sqlitelog.ErrLocked) {
		t.Fatalf("open beside another process: %v, want ErrLocked", err)
	}
	second, lines2 := startChild(t, "hold", dir)
	if !lines2.Scan() || lines2.Text() != "locked" {
		t.Fatalf("second child: %q, want locked", lines2.Text())
	}
	second.Wait()
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	l := openLog(t, dir, predlog.Options{})
	closeLog(t, l)
}
