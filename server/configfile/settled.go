package configfile

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// ErrChanging is returned by ReadSettled for a file that kept changing
// while it was read: someone is writing it in place.
var ErrChanging = errors.New("being written")

// version is one read of a file: its content and the identity of what
// was read (inode, size, modification time), taken from the file opened.
type version struct {
	data  []byte
	inode uint64
	size  int64
	mtime time.Time
}

// same reports whether v and o are the same content of the same file,
// untouched in between.
func (v version) same(o version) bool {
	return v.inode == o.inode && v.size == o.size && v.mtime.Equal(o.mtime) && string(v.data) == string(o.data)
}

// readVersion reads path once, checked as ReadAs does. The file is
// stat'ed before and after the read on the same descriptor: a write
// in between (a size or mtime that moved, fewer bytes than the size) is
// ErrChanging.
func readVersion(path string, max int64, access Access) (version, error) {
	f, before, err := openChecked(path, max, access)
	if err != nil {
		return version{}, err
	}
	defer f.Close()
	data, err := readAll(path, f, max)
	if err != nil {
		return version{}, err
	}
	after, err := f.Stat()
	if err != nil {
		return version{}, fmt.Errorf("%s: %w", path, err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || int64(len(data)) != after.Size() {
		return version{}, fmt.Errorf("%s: %w: it changed while it was read", path, ErrChanging)
	}
	v := version{data: data, size: after.Size(), mtime: after.ModTime()}
	if sys, ok := after.Sys().(*syscall.Stat_t); ok {
		v.inode = sys.Ino
	}
	return v, nil
}

// Settle says how ReadSettled waits out a writer.
type Settle struct {
	// Quiet is how long a file must have gone unmodified to be taken as
	// it is read; one modified more recently is read again after Quiet
	// and taken only if nothing changed meanwhile. Zero: take the file
	// as read at once (at start, there is no previous version to keep).
	Quiet time.Duration
	// Attempts bounds the reads of a file that keeps changing (default
	// 3); past them it is ErrChanging.
	Attempts int
	// Wait sleeps d, or until ctx ends. Nil: a timer. Tests replace it
	// to act at a chosen moment of the read.
	Wait func(ctx context.Context, d time.Duration) error
}

func (s Settle) wait(ctx context.Context, d time.Duration) error {
	if s.Wait != nil {
		return s.Wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ReadSettled is ReadAs of a file that may be rewritten in place while
// it is read (a reload on SIGHUP racing an editor or a script): it never
// returns a version that was being written when read. One read is
// consistent in itself (same size and mtime before and after); a file
// modified within s.Quiet is read again after s.Quiet and taken only when
// both reads are the same content of the same, untouched file. A writer
// that pauses longer than s.Quiet in the middle of the file can still be
// seen half-way: only writing a new file and renaming it over the old one
// is atomic, which is what operators are told to do.
func ReadSettled(ctx context.Context, path string, max int64, access Access, s Settle) ([]byte, error) {
	v, err := readVersion(path, max, access)
	for attempt := 1; ; attempt++ {
		switch {
		case err == nil && s.settled(v):
			return v.data, nil
		case err != nil && !errors.Is(err, ErrChanging):
			return nil, err
		case attempt >= s.attempts():
			if err == nil {
				err = fmt.Errorf("%s: %w: modified again within %v, %d times", path, ErrChanging, s.Quiet, attempt)
			}
			return nil, err
		}
		if err := s.wait(ctx, s.Quiet); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		prev, prevErr := v, err
		v, err = readVersion(path, max, access)
		if err == nil && prevErr == nil && v.same(prev) {
			return v.data, nil
		}
	}
}

// settled reports whether v was last modified at least s.Quiet ago (a
// modification time in the future is not).
func (s Settle) settled(v version) bool {
	return s.Quiet <= 0 || time.Since(v.mtime) >= s.Quiet
}

func (s Settle) attempts() int {
	if s.Attempts <= 0 {
		return 3
	}
	return s.Attempts
}
