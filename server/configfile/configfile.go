// Package configfile reads the small files an operator points the server
// at (TLS certificates and keys, client CAs, the bearer tokens), at start
// and again on every SIGHUP. Such a path may be a symbolic link (certbot's
// live/ folder is made of them) and is followed, but what it names must be
// a regular file of bounded size: a path set by mistake to /dev/zero, a FIFO or a
// log file must fail the start or the reload with a message, not block it
// or fill the memory.
package configfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular is returned for a directory, a FIFO, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file over the limit.
var ErrTooLarge = errors.New("file too large")

// ErrNotPrivate is returned by ReadPrivate for a file that group or
// others may access.
var ErrNotPrivate = errors.New("accessible to group or others")

// Read returns the content of the regular file path, at most max bytes.
// O_NONBLOCK keeps a FIFO from blocking the open (it changes nothing for
// a regular file); the fstat after the open checks the file actually
// read.
func Read(path string, max int64) ([]byte, error) {
	return read(path, max, false)
}

// ReadPrivate is Read of a file holding a secret (a key): it is refused
// too when group or others may read or write it, as ssh does with
// private keys. The mode is checked on the file opened, before anything
// is read from it.
func ReadPrivate(path string, max int64) ([]byte, error) {
	return read(path, max, true)
}

func read(path string, max int64, private bool) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, st.Mode().Type())
	}
	if private && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: %w: mode %#o (chmod 600)", path, ErrNotPrivate, st.Mode().Perm())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %w: %d bytes, at most %d", path, ErrTooLarge, st.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1)) // a file growing meanwhile
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: over %d bytes", path, ErrTooLarge, max)
	}
	return b, nil
}
