package configfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReadSettledWaitsOutAnInPlaceWriter: a file rewritten in place is
// read while the writer has written half of it (the test's Wait is the
// writer's next step, so the moment is chosen, not raced). With a quiet
// period the half is never returned: the read is taken again once the
// file stops changing, and only the whole new content comes back. Without
// one (Quiet 0), the half is returned: the failure the quiet period is
// there for.
func TestReadSettledWaitsOutAnInPlaceWriter(t *testing.T) {
	const whole = "line one\nline two\nline three\nline four\n"
	half := len(whole) / 2
	for _, tc := range []struct {
		name  string
		quiet time.Duration
		want  string
	}{
		{"quiet period", time.Hour, whole},
		{"no quiet period", 0, whole[:half]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "tokens")
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(whole[:half]); err != nil {
				t.Fatal(err)
			}
			rest := whole[half:]
			writeRest := func(ctx context.Context, d time.Duration) error {
				if d != tc.quiet {
					t.Errorf("waited %v, want the quiet period %v", d, tc.quiet)
				}
				if rest != "" {
					if _, err := f.WriteString(rest); err != nil {
						return err
					}
					rest = ""
				}
				return nil
			}
			b, err := ReadSettled(context.Background(), file, 1<<10, Trusted, Settle{Quiet: tc.quiet, Wait: writeRest})
			if err != nil || string(b) != tc.want {
				t.Fatalf("ReadSettled = %q, %v; want %q", b, err, tc.want)
			}
		})
	}
}

// TestReadSettledGivesUpOnAFileThatKeepsChanging: a file modified again
// on every read is ErrChanging after Attempts reads, and a read waiting
// on it ends with its context.
func TestReadSettledGivesUpOnAFileThatKeepsChanging(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := 0
	rewrite := func(ctx context.Context, d time.Duration) error {
		n++
		return os.WriteFile(file, []byte(string(rune('0'+n))+"\n"), 0o600)
	}
	_, err := ReadSettled(context.Background(), file, 1<<10, Trusted, Settle{Quiet: time.Hour, Attempts: 3, Wait: rewrite})
	if !errors.Is(err, ErrChanging) || n != 2 {
		t.Fatalf("ReadSettled = %v after %d rewrites, want ErrChanging after 2", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadSettled(ctx, file, 1<<10, Trusted, Settle{Quiet: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadSettled(ctx, file, 1<<10, Trusted, Settle{Quiet: time.Hour}); err != nil || string(b) != "2\n" {
		t.Fatalf("a file older than the quiet period: %q, %v; want it at once", b, err)
	}
}
