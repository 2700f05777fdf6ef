package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestOpenRefusesAllButRegularFiles(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "model.npz")
	if err := os.WriteFile(regular, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.npz")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.npz")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.npz")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}

	f, st, err := Open(regular)
	if err != nil || st.Size() != 4 {
		t.Fatalf("regular file: %v %v", st, err)
	}
	f.Close()
	for _, p := range []string{link, fifo, sub, "/dev/zero"} {
		done := make(chan error, 1)
		go func() {
			f, _, err := Open(p)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Open blocked", p)
		}
	}
	if _, _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}
