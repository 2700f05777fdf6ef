package jobs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// errNotRegular: a record or spool path names something other than a
// regular file (a directory, a FIFO, a device, a socket).
var errNotRegular = errors.New("not a regular file")

// openRegular opens path for reading only if it is a regular file. The
// jobs folder may hold anything an operator or an attacker with access to
// the registry put there, and start-up reads it before serving, so:
// O_NOFOLLOW refuses a symlink (one to /dev/zero would never end),
// O_NONBLOCK keeps a FIFO from blocking the open for ever, and the fstat
// after the open refuses whatever is not a regular file before a byte of
// it is read. O_NONBLOCK changes nothing for a regular file.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s is a symbolic link, which is not followed: %w", path, errNotRegular)
	}
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s is a %s: %w", path, fileKind(st.Mode()), errNotRegular)
	}
	return f, st, nil
}

// fileKind names a non-regular file's type for a log line.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file (" + m.Type().String() + ")"
}
