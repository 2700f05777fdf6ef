// Package atomicfile replaces files so that a reader, or a process
// restarted after kill -9 or a power cut, sees either the old or the new
// content, never a mixture: the content goes to a temp file in the same
// directory, which is fsynced and renamed over the target, and the
// directory is fsynced so that the rename itself is durable.
//
// Every temp file is named with TempPrefix. The prefix is reserved, so a
// start-up sweep may remove regular files named so (IsTempName), and
// nothing else: an operator's file can only be taken for a leftover if it
// is named so.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TempPrefix starts the name of every temporary file CreateTemp makes.
const TempPrefix = ".ramanserve-tmp-"

// IsTempName reports whether a file name is one of CreateTemp's temporary
// names.
func IsTempName(name string) bool { return strings.HasPrefix(name, TempPrefix) }

// WriteFile replaces path with data atomically and durably (see the
// package comment).
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := CreateTemp(path)
	if err != nil {
		return fmt.Errorf("create temp for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("rename to %s: %w", path, err)
	}
	return SyncDir(dir)
}

// CreateTemp creates the temp file that will replace path, in path's
// directory and named with TempPrefix, readable by everyone like any file
// the server writes (os.CreateTemp makes it 0600): a maintenance command
// run as root must not leave a file that the service's own user cannot
// read. The caller writes, fsyncs, closes and renames it, or removes it.
func CreateTemp(path string) (*os.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), TempPrefix+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil
}

// SyncDir fsyncs a directory so that renames and creations in it survive
// a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
