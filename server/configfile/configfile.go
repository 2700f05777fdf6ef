// Package configfile reads the small files an operator points the server
// at (TLS certificates and keys, client CAs, the bearer tokens), at start
// and again on every SIGHUP. Such a path may be a symbolic link (certbot's
// live/ folder is made of them) and is followed, but what it names must be
// a regular file of bounded size: a path set by mistake to /dev/zero, a FIFO or a
// log file must fail the start or the reload with a message, not block it
// or fill the memory.
//
// A file is also refused when its mode lets the wrong users at it: a
// secret (a private key) must not be readable by group or others, and a
// file that grants access (the tokens, an allow-list, client CAs) must
// not be writable by others, or any local user could let themselves in.
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

// ErrWorldWritable is returned by ReadTrusted (and ReadSettled) for a
// file that others may write.
var ErrWorldWritable = errors.New("writable by every user")

// Access is who, besides its owner, may access a file the server reads;
// a file whose mode gives more is refused.
type Access int

const (
	// Public files (a certificate) may have any mode.
	Public Access = iota
	// Trusted files decide who gets in (tokens, allow-lists, client CAs):
	// others must not write them.
	Trusted
	// Private files hold a secret (a key): group and others must not read
	// or write them, as ssh requires of private keys.
	Private
)

// check refuses a file whose mode gives more than a allows, naming the
// file and its mode: the one check every file the server reads goes
// through.
func (a Access) check(path string, mode os.FileMode) error {
	perm := mode.Perm()
	switch {
	case a == Private && perm&0o077 != 0:
		return fmt.Errorf("%s: %w: mode %#o (chmod 600)", path, ErrNotPrivate, perm)
	case a == Trusted && perm&0o002 != 0:
		return fmt.Errorf("%s: %w: mode %#o (chmod o-w)", path, ErrWorldWritable, perm)
	}
	return nil
}

// Read returns the content of the regular file path, at most max bytes.
// O_NONBLOCK keeps a FIFO from blocking the open (it changes nothing for
// a regular file); the fstat after the open checks the file actually
// read.
func Read(path string, max int64) ([]byte, error) {
	return ReadAs(path, max, Public)
}

// ReadPrivate is Read of a file holding a secret (a key): it is refused
// too when group or others may read or write it. The mode is checked on
// the file opened, before anything is read from it.
func ReadPrivate(path string, max int64) ([]byte, error) {
	return ReadAs(path, max, Private)
}

// ReadTrusted is Read of a file that grants access: it is refused too
// when others may write it.
func ReadTrusted(path string, max int64) ([]byte, error) {
	return ReadAs(path, max, Trusted)
}

// ReadAs is Read of a file refused when its mode gives more than access
// allows.
func ReadAs(path string, max int64, access Access) ([]byte, error) {
	v, err := readVersion(path, max, access)
	if err != nil {
		return nil, err
	}
	return v.data, nil
}

// openChecked opens path and checks, on the file opened, that it is a
// regular file of at most max bytes whose mode access allows.
func openChecked(path string, max int64, access Access) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = checkFile(path, st, max, access)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

func checkFile(path string, st os.FileInfo, max int64, access Access) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, st.Mode().Type())
	}
	if err := access.check(path, st.Mode()); err != nil {
		return err
	}
	if st.Size() > max {
		return fmt.Errorf("%s: %w: %d bytes, at most %d", path, ErrTooLarge, st.Size(), max)
	}
	return nil
}

// readAll reads f, at most max bytes: it may have grown since its stat.
func readAll(path string, f *os.File, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: over %d bytes", path, ErrTooLarge, max)
	}
	return b, nil
}
