package configfile

import (
	"errors"
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
		if !errors.Is(err, tc.err) || time.Since(start) > time.Second {
			t.Errorf("Read(%s, %d): %v after %v, want %v at once", tc.path, tc.max, err, time.Since(start), tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), filepath.Base(tc.path)) {
			t.Errorf("Read(%s): %v does not name the file", tc.path, err)
		}
	}
}
