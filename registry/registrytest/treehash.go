// Package registrytest holds test helpers for code that works on a
// registry directory.
package registrytest

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// TreeHash describes every path under dir with its mode and the SHA-256 of
// its content (a symbolic link by its target), one sorted line each, so a
// test can show that nothing on disk changed. Paths equal to one of skip
// (relative to dir) are left out.
func TreeHash(dir string, skip ...string) (string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		for _, s := range skip {
			if rel == s {
				return nil
			}
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var content []byte
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			content = []byte(target)
		case info.Mode().IsRegular():
			if content, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		sum := sha256.Sum256(content)
		lines = append(lines, rel+" "+info.Mode().String()+" "+hex.EncodeToString(sum[:]))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n"), err
}
