package sqlitelog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFileName is the file beside the database whose flock says which
// process has the log open. It is never removed: deleting it while another
// process holds it would let two processes each lock a different inode.
const lockFileName = "predictions.db.lock"

// ErrLocked means another process (or another Open in this one) has the log.
var ErrLocked = errors.New("sqlitelog: the prediction log is in use by another process")

// lockDir takes an exclusive flock on dir's log lock file without waiting.
// SQLite would let two processes share the file safely, but two writers
// would each run retention and each count its own drops; a second Open is
// refused instead. The kernel drops the lock when its holder dies, however
// it dies, so kill -9 leaves no stale lock.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("predlog: open the lock file %s: %w", path, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("predlog: the lock file %s is not a regular file", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (lock file %s)", ErrLocked, path)
		}
		return nil, fmt.Errorf("predlog: lock %s: %w", path, err)
	}
	return f, nil
}
