package auth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/server/configfile"
)

// rewriteInPlace is an operator's script rewriting the tokens file where
// it is (truncate, then write), cut at a chosen byte: writeHead writes
// content[:cut] over the old file, and the rest is written by the first
// call of the returned Wait, which a read takes when it waits for the file
// to settle. The reload thus looks at the file at the chosen moment and
// the writer resumes while it waits, with no timing involved.
func rewriteInPlace(t *testing.T, f *os.File, content string, cut int) configfile.Settle {
	t.Helper()
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(content[:cut]), 0); err != nil {
		t.Fatal(err)
	}
	rest, at := content[cut:], int64(cut)
	return configfile.Settle{Quiet: ReloadQuiet, Wait: func(ctx context.Context, d time.Duration) error {
		if rest == "" {
			return nil
		}
		_, err := f.WriteAt([]byte(rest), at)
		rest = ""
		return err
	}}
}

// TestReloadNeverSeesAHalfWrittenFile: the tokens file is rewritten in
// place over and over, alternating two versions that both list the same
// valid tokens (in another order, with other comments and a token only
// one of them has), and a reload looks at it at every line boundary of
// every rewrite, a byte either side of it and mid-line. After each reload, kept or refused, every valid token still
// authenticates: the store holds the old set or the new one, never a part.
// The same loop with the start's read (no quiet period) must let some
// valid token be refused, which shows the loop can fail.
func TestReloadNeverSeesAHalfWrittenFile(t *testing.T) {
	var valid []string
	var lines []string
	for i := 0; i < 6; i++ {
		token := fmt.Sprintf("valid-token-%d", i)
		valid = append(valid, token)
		lines = append(lines, FileLine(Read, token, fmt.Sprintf("client-%d", i)))
	}
	versionA := "# version A\n" + strings.Join(lines, "") + FileLine(Operate, "only-in-a", "a-only")
	reversed := make([]string, len(lines))
	for i, l := range lines {
		reversed[len(lines)-1-i] = l
	}
	versionB := "# version B, reordered\n" + FileLine(Operate, "only-in-b", "b-only") + strings.Join(reversed, "")

	run := func(settled bool) (refusals int) {
		path := filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(path, []byte(versionA), 0o600); err != nil {
			t.Fatal(err)
		}
		start, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		store := NewStore(start)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for round, content := range []string{versionB, versionA, versionB} {
			for _, cut := range cutPoints(content) {
				settle := rewriteInPlace(t, f, content, cut)
				if !settled {
					settle.Quiet = 0
				}
				set, err := readFile(context.Background(), path, settle)
				if err == nil {
					store.Swap(set)
				}
				for _, token := range valid {
					if _, err := store.Authenticate("Bearer " + token); err != nil {
						refusals++
						if settled {
							t.Fatalf("round %d, reload at byte %d of %d: %s refused (%v); the reload took %d tokens", round, cut, len(content), token, err, store.Len())
						}
					}
				}
				// Whatever the reload did, the writer finishes its rewrite.
				if err := settle.Wait(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		return refusals
	}
	run(true)
	if refusals := run(false); refusals == 0 {
		t.Fatal("without a quiet period no valid token was ever refused: the loop does not catch a half-written file")
	}
}

// TestReadFileRefusesAFileCutMidLine: a tokens file whose last line has
// no newline is refused, at start and on reload, saying why: its last
// name could be a prefix of the one meant.
func TestReadFileRefusesAFileCutMidLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	whole := FileLine(Read, "a", "dashboard-wall") + FileLine(Read, "b", "dashboard-desk")
	if err := os.WriteFile(path, []byte(strings.TrimSuffix(whole, "sk\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrNotWhole) || !strings.Contains(err.Error(), path) {
		t.Fatalf("ReadFile: %v, want ErrNotWhole naming the file", err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := ReloadFile(context.Background(), path); !errors.Is(err, ErrNotWhole) {
		t.Fatalf("ReloadFile: %v, want ErrNotWhole", err)
	}
}

// TestReadFileRefusesAWorldWritableFile: a tokens file others may write
// is refused, naming the file and its mode: any local user could add a
// token of their own.
func TestReadFileRefusesAWorldWritableFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(FileLine(Read, "a", "dashboard")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o646); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if !errors.Is(err, configfile.ErrWorldWritable) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "0646") {
		t.Fatalf("ReadFile: %v, want ErrWorldWritable naming the file and mode 0646", err)
	}
}

// cutPoints are where a rewrite of content is caught: at every line
// boundary (the cut no parser can see), a byte either side of it, and in
// the middle of every line.
func cutPoints(content string) []int {
	cuts := []int{0}
	start := 0
	for i := 0; i < len(content); i++ {
		if content[i] != '\n' {
			continue
		}
		cuts = append(cuts, (start+i)/2, i, i+1)
		if i+2 <= len(content) {
			cuts = append(cuts, i+2)
		}
		start = i + 1
	}
	return cuts
}
