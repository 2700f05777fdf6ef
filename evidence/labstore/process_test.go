package labstore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"ramanserve/evidence/batches"
	"ramanserve/evidence/labstore"
	"ramanserve/evidence/reconcile"
	"ramanserve/platform/race"
)

// The test binary doubles as the child process of the tests below: with
// childEnv set it runs the role named there instead of the tests.
const childEnv = "LABSTORE_TEST_CHILD"

// postSize is the results of each of a child's posts.
const postSize = 500

// concurrentPosts is how many posts each of two processes makes at once in
// TestSecondProcess; under -race, where a post takes tens of times longer,
// fewer.
var concurrentPosts = 20

// concurrentBusyTimeout is how long a post waits for the other process's
// transaction in these tests. Both post back to back, so one process can
// hold the lock through every poll of the other's busy handler, for as
// long as its whole run takes on a busy machine.
const concurrentBusyTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	if race.Enabled {
		concurrentPosts = 6
	}
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role, os.Getenv("LABSTORE_TEST_DIR")))
	}
	os.Exit(m.Run())
}

// runChild upserts posts of postSize results, post p holding ids
// "<role>-p-0" ... ; after each Upsert returns it prints "stored p". The
// role "crash" posts until killed, others post concurrentPosts posts and
// exit.
func runChild(role, dir string) int {
	s, err := labstore.OpenWaiting(context.Background(), dir, concurrentBusyTimeout)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	if role == "marks" {
		return markUntilKilled(s.References())
	}
	for p := 0; role == "crash" || p < concurrentPosts; p++ {
		if _, err := s.Upsert(context.Background(), post(role, p)); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Printf("stored %d\n", p)
	}
	if err := s.Close(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

func post(prefix string, p int) []reconcile.LabResult {
	out := make([]reconcile.LabResult, postSize)
	for i := range out {
		out[i] = matched(fmt.Sprintf("%s-%d-%d", prefix, p, i), p, float64(i))
	}
	return out
}

func startChild(t *testing.T, role, dir string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "LABSTORE_TEST_DIR="+dir)
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

// readStored reads "stored p" lines until stop says so or the child ends;
// it returns the last p (-1 for none).
func readStored(t *testing.T, lines *bufio.Scanner, stop func(p int) bool) int {
	t.Helper()
	last := -1
	for lines.Scan() {
		s, ok := strings.CutPrefix(lines.Text(), "stored ")
		if !ok {
			t.Fatalf("child: %s", lines.Text())
		}
		last, _ = strconv.Atoi(s)
		if stop != nil && stop(last) {
			break
		}
	}
	return last
}

// TestCrashSafety: a child posts at full rate, the parent kills it with
// SIGKILL mid-way: the database is intact, holds every post the child saw
// stored, and holds each post whole or not at all.
func TestCrashSafety(t *testing.T) {
	for round := range 3 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			dir := t.TempDir()
			cmd, lines := startChild(t, "crash", dir)
			acked := readStored(t, lines, func(p int) bool { return p >= 3+2*round })
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if more := readStored(t, lines, nil); more > acked {
				acked = more
			}

			db := rawDB(t, dir)
			integrityCheck(t, db)
			var rows, posts int
			if err := db.QueryRow(`SELECT count(*), count(DISTINCT spectrum_ts) FROM lab_results`).Scan(&rows, &posts); err != nil {
				t.Fatal(err)
			}
			if rows != posts*postSize {
				t.Fatalf("%d rows in %d posts: a post was stored in part", rows, posts)
			}
			if posts < acked+1 || posts > acked+2 {
				t.Fatalf("%d posts after kill -9, %d acknowledged", posts, acked+1)
			}
			t.Logf("acknowledged %d posts, found %d", acked+1, posts)
			db.Close()

			s := openStore(t, dir)
			got := rangeAll(t, s, time.Time{}, time.Time{}, labstore.MaxRange)
			if len(got) != rows {
				t.Fatalf("the reopened store ranges over %d of %d", len(got), rows)
			}
		})
	}
}

// TestSecondProcess: two processes post into the same store at once
// (SQLite serialises their transactions); every post of both is stored,
// and this process reads the other's.
func TestSecondProcess(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	_, lines := startChild(t, "other", dir)
	for p := range concurrentPosts {
		if _, err := s.Upsert(context.Background(), post("self", p)); err != nil {
			t.Fatalf("post %d beside the other process: %v", p, err)
		}
	}
	if last := readStored(t, lines, nil); last != concurrentPosts-1 {
		t.Fatalf("the other process stored up to post %d", last)
	}
	got := rangeAll(t, s, time.Time{}, time.Time{}, labstore.MaxRange)
	if len(got) != 2*concurrentPosts*postSize {
		t.Fatalf("%d results, want %d", len(got), 2*concurrentPosts*postSize)
	}
	// Posts overlap in spectrum time: the range is ordered by time, then id.
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if a.SpectrumTime.After(b.SpectrumTime) || (a.SpectrumTime.Equal(b.SpectrumTime) && a.LabSampleID >= b.LabSampleID) {
			t.Fatalf("out of order at %d: %s then %s", i, a.LabSampleID, b.LabSampleID)
		}
	}
	integrityCheck(t, rawDB(t, dir))
}

// markUntilKilled marks batch M-p for p = 0, 1, ... and unmarks M-(p-5),
// so that at most 5 are marked; after each pair it prints "stored p".
func markUntilKilled(refs *labstore.References) int {
	ctx := context.Background()
	for p := 0; ; p++ {
		if _, _, err := refs.Mark(ctx, batches.Reference{BatchID: fmt.Sprintf("M-%d", p), MarkedAt: time.Now(), MarkedBy: "child"}); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		if _, err := refs.Unmark(ctx, fmt.Sprintf("M-%d", p-5)); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Printf("stored %d\n", p)
	}
}

// TestReferenceMarksSurviveKill9: a child marks and unmarks reference
// batches at full rate and is killed with SIGKILL: the reopened store
// holds the last marks the child saw stored (and at most the one it was
// making), none it had unmarked.
func TestReferenceMarksSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	cmd, lines := startChild(t, "marks", dir)
	acked := readStored(t, lines, func(p int) bool { return p >= 20 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if more := readStored(t, lines, nil); more > acked {
		acked = more
	}
	integrityCheck(t, rawDB(t, dir))
	refs, err := openStore(t, dir).References().References(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	marked := map[string]bool{}
	for _, r := range refs {
		marked[r.BatchID] = true
	}
	// The step after the last acknowledged one may have unmarked
	// M-(acked-4) before the kill, having marked M-(acked+1).
	if !marked[fmt.Sprintf("M-%d", acked-4)] && !marked[fmt.Sprintf("M-%d", acked+1)] {
		t.Fatalf("mark M-%d, acknowledged, is gone after kill -9: %v", acked-4, refs)
	}
	for p := acked - 3; p <= acked; p++ {
		if !marked[fmt.Sprintf("M-%d", p)] {
			t.Fatalf("mark M-%d, acknowledged, is gone after kill -9: %v", p, refs)
		}
	}
	if len(refs) > 6 || marked[fmt.Sprintf("M-%d", acked-5)] {
		t.Fatalf("after kill -9, %d marks (acknowledged up to M-%d): %v", len(refs), acked, refs)
	}
	t.Logf("acknowledged marks up to M-%d; %d marked after kill -9", acked, len(refs))
}
