package filestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"ramanserve/registry/store"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the file in the registry directory whose flock says which
// process owns the directory. It is never removed: deleting it while another
// process has it open would let two processes each lock a different inode.
const LockFile = ".ramanserve.lock"

// ErrLocked means another process holds the registry directory.
var ErrLocked = errors.New("registry is in use by another process")

// dirLock is an exclusive flock on the registry's lock file. flock locks
// belong to the open file description, so a second Open of the same
// directory is refused even inside one process, and the kernel releases
// the lock when the holder dies, however it dies (no stale lock after
// kill -9).
type dirLock struct{ f *os.File }

// lockDir takes the exclusive lock on dir without waiting. A process that
// finds the lock held changes nothing on disk: the lock file already
// exists (its holder created it) and only the holder writes its PID in it.
func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) {
		// A registry that cannot be written still serves its models (health
		// says degraded); flock works on a read-only descriptor too.
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open the lock file %s: %w", store.ErrRegistry, path, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: the lock file %s is not a regular file", store.ErrRegistry, path)
	} else if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Nlink != 1 {
		// The holder writes its PID into the lock file: a hard link would
		// make that overwrite a file the server did not write.
		f.Close()
		return nil, fmt.Errorf("%w: the lock file %s has %d hard links, and the server would write its PID into every one of them; replace it with a file of its own", store.ErrRegistry, path, sys.Nlink)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by process %s (lock file %s); stop that process or use another registry directory", ErrLocked, dir, holder, path)
		}
		return nil, fmt.Errorf("%w: lock %s: %w", store.ErrRegistry, path, err)
	}
	// Only the holder writes: the PID is for the message above, not for
	// deciding anything, so a failed write (full disk) is not fatal.
	pid := strconv.Itoa(os.Getpid()) + "\n"
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(pid), 0)
	}
	return &dirLock{f: f}, nil
}

// readHolder returns the PID recorded by the lock's holder, or "unknown".
func readHolder(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid := strings.TrimSpace(string(buf[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "unknown"
	}
	return pid
}

// release drops the lock. The PID stays in the file: it is only read
// while someone holds the lock, and then it is that holder's.
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
