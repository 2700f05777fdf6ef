// Package regularfile opens the files a server reads from folders that
// others can write to: the registry, its jobs folder, the import roots.
// Whatever an operator or an attacker put there, opening it neither
// follows a link out of the folder, nor blocks on a FIFO, nor reads a
// device.
package regularfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is returned for a path that names a symbolic link, a
// directory, a FIFO, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading only if it is a regular file, and returns
// the file with its FileInfo. O_NOFOLLOW refuses a final symbolic link
// (one to /dev/zero would never end), O_NONBLOCK keeps a FIFO from
// blocking the open for ever (it changes nothing for a regular file), and
// the fstat after the open refuses whatever is not a regular file before a
// byte of it is read: the check and the read are on the same file, so a
// swap in between cannot redirect it.
//
// A missing file gives an error that matches os.ErrNotExist; a symbolic
// link or a special file one that matches ErrNotRegular and names it by
// its base name (messages may reach clients: no directory is named).
func Open(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s is a symbolic link, which is not followed: %w", filepath.Base(path), ErrNotRegular)
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
		return nil, nil, fmt.Errorf("%s is a %s: %w", filepath.Base(path), kind(st.Mode()), ErrNotRegular)
	}
	return f, st, nil
}

// kind names a non-regular file's type for a message.
func kind(m os.FileMode) string {
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
