package curve

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestKeyFilesRefuseFIFOAtOnce: a key path set by mistake to a FIFO (no
// writer) must fail the start or a SIGHUP reload at once, not block it: a
// reload that hangs in open(2) holds every later reload (TLS, tokens)
// behind it.
func TestKeyFilesRefuseFIFOAtOnce(t *testing.T) {
	for name, read := range map[string]func(string) error{
		"ReadSecretKeyFile":  func(p string) error { _, err := ReadSecretKeyFile(p); return err },
		"ReadPublicKeyFile":  func(p string) error { _, err := ReadPublicKeyFile(p); return err },
		"ReadPublicKeysFile": func(p string) error { _, err := ReadPublicKeysFile(p); return err },
	} {
		t.Run(name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- read(fifo) }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a FIFO was read as a key file")
				}
			case <-time.After(30 * time.Second): // generous for a busy machine: a refusal is immediate
				// Unblock the open so the goroutine ends, then fail.
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatal("reading a FIFO blocked (a correctness bound of 2 s)")
			}
		})
	}
}
