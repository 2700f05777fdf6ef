package configfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRead: a regular file and a symbolic link to one are read; a FIFO
// (without a writer), a device, a directory and a file over the limit
// are refused at once.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(file, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "live.pem")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, link} {
		b, err := Read(path, 10)
		if err != nil || string(b) != "0123456789" {
			t.Errorf("Read(%s) = %q, %v", path, b, err)
		}
	}
	for _, tc := range []struct {
		path string
		max  int64
		err  error
	}{
		{fifo, 1 << 20, ErrNotRegular},
		{"/dev/zero", 1 << 20, ErrNotRegular},
		{dir, 1 << 20, ErrNotRegular},
		{file, 9, ErrTooLarge},
		{filepath.Join(dir, "none"), 1 << 20, os.ErrNotExist},
	} {
		start := time.Now()
		_, err := Read(tc.path, tc.max)
		// At once, not blocked on the FIFO or /dev/zero for good: 10 s is
		// a margin for a machine busy with a second make test.
		if !errors.Is(err, tc.err) || time.Since(start) > 10*time.Second {
			t.Errorf("Read(%s, %d): %v after %v, want %v at once", tc.path, tc.max, err, time.Since(start), tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), filepath.Base(tc.path)) {
			t.Errorf("Read(%s): %v does not name the file", tc.path, err)
		}
	}
}

// TestReadPrivate: a file only its owner may access is read; one group or
// others may read or write is refused, naming the file, as is a FIFO.
func TestReadPrivate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server.key")
	if err := os.WriteFile(file, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadPrivate(file, 10); err != nil || string(b) != "secret" {
		t.Fatalf("ReadPrivate = %q, %v", b, err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620, 0o602} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadPrivate(file, 10)
		if !errors.Is(err, ErrNotPrivate) || !strings.Contains(err.Error(), "server.key") {
			t.Errorf("mode %#o: %v, want ErrNotPrivate naming the file", mode, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrivate(fifo, 10); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO: %v, want ErrNotRegular", err)
	}
}

// TestReadTrusted: a file that grants access is read whatever group and
// others may read, and refused, naming the file and its mode, when others
// may write it (group-writable is how a file is shared with the service's
// group, and stays allowed).
func TestReadTrusted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("grant"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o600, 0o644, 0o664, 0o440} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		if b, err := ReadTrusted(file, 10); err != nil || string(b) != "grant" {
			t.Errorf("mode %#o: ReadTrusted = %q, %v", mode, b, err)
		}
	}
	for _, mode := range []os.FileMode{0o666, 0o602, 0o777} {
		if err := os.Chmod(file, mode); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTrusted(file, 10)
		if !errors.Is(err, ErrWorldWritable) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), fmt.Sprintf("%#o", mode)) {
			t.Errorf("mode %#o: %v, want ErrWorldWritable naming the file and its mode", mode, err)
		}
	}
}
