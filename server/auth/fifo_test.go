package auth

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadFileRefusesFIFOAtOnce: -auth-tokens set by mistake to a FIFO
// (no writer) must fail the start or a SIGHUP reload at once, not block
// it: a reload hanging in open(2) holds every later reload behind it.
func TestReadFileRefusesFIFOAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was read as a tokens file")
		}
	case <-time.After(30 * time.Second): // generous for a busy machine: a refusal is immediate
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("reading a FIFO blocked (a correctness bound of 2 s)")
	}
}
