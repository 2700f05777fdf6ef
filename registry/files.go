package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/atomicfile"
	"ramanserve/platform/regularfile"
	"ramanserve/registry/store"
)

const (
	modelsDir     = "models"
	quarantineDir = "quarantine"
	reasonSuffix  = ".reason.txt"
	// maxProblems bounds how many registry problems health lists.
	maxProblems = 10
)

func isModelExt(ext string) bool { return store.IsModelExt(ext) }

// tempDirs are the folders where the server writes temp files (a reason
// file in quarantine/ is written atomically too).
var tempDirs = []string{"", modelsDir, "jobs", quarantineDir}

// sweepTemp removes the temp files of interrupted writes: regular files
// named with atomicfile.TempPrefix, in the folders the server writes to. Symbolic
// links and folders are left alone whatever their names.
func (r *Registry) sweepTemp() {
	for _, rel := range r.tempFiles() {
		r.log.Warn("removing the temp file of an interrupted write", "file", rel)
		_ = os.Remove(filepath.Join(r.dir, rel))
	}
}

// tempFiles lists, relative to the registry folder, the regular files
// named with atomicfile.TempPrefix in the folders the server writes to.
func (r *Registry) tempFiles() []string {
	var rels []string
	for _, sub := range tempDirs {
		for _, de := range readDirQuiet(filepath.Join(r.dir, sub)) {
			if atomicfile.IsTempName(de.Name()) && de.Type().IsRegular() {
				rels = append(rels, filepath.ToSlash(filepath.Join(sub, de.Name())))
			}
		}
	}
	return rels
}

func readDirQuiet(dir string) []os.DirEntry {
	des, _ := os.ReadDir(dir) // sorted by name
	return des
}

// digest hashes the file at full, which must be a regular file (a final
// symbolic link is not followed) of at most limit bytes.
func digest(ctx context.Context, full string, limit int64) (size int64, sum string, mtime time.Time, err error) {
	f, st, err := regularfile.Open(full)
	if err != nil {
		return 0, "", time.Time{}, fmt.Errorf("%w: %w", inference.ErrModelCorrupted, err)
	}
	defer f.Close()
	if st.Size() > limit {
		return 0, "", time.Time{}, fmt.Errorf("%w: %s is %d bytes, over the %d-byte limit", inference.ErrModelCorrupted, filepath.Base(full), st.Size(), limit)
	}
	h := sha256.New()
	n, err := io.Copy(h, &ctxReader{ctx: ctx, r: io.LimitReader(f, limit+1)})
	if err != nil {
		return 0, "", time.Time{}, fmt.Errorf("%w: read %s: %w", inference.ErrModelCorrupted, filepath.Base(full), err)
	}
	if n > limit {
		return 0, "", time.Time{}, fmt.Errorf("%w: %s grew over the %d-byte limit while being read", inference.ErrModelCorrupted, filepath.Base(full), limit)
	}
	return n, hex.EncodeToString(h.Sum(nil)), st.ModTime(), nil
}

// verifyFile checks an entry's file against the size and SHA-256 the
// index recorded for it. A mismatch is MODEL_CORRUPTED: the bytes are not
// the ones the registry wrote or imported.
func (r *Registry) verifyFile(ctx context.Context, e *Entry) error {
	full := filepath.Join(r.dir, filepath.FromSlash(e.File))
	limit := e.SizeBytes
	if e.SizeBytes <= 0 {
		limit = max(r.opts.MaxImportBytes, maxArtifactBytes)
	}
	size, sum, _, err := digest(ctx, full, limit)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s is listed but its file %s is missing", inference.ErrModelCorrupted, e.Version, e.File)
		}
		if e.SizeBytes > 0 {
			if st, serr := os.Lstat(full); serr == nil && st.Mode().IsRegular() && st.Size() != e.SizeBytes {
				return fmt.Errorf("%w: %s is %d bytes, the index recorded %d", inference.ErrModelCorrupted, e.File, st.Size(), e.SizeBytes)
			}
		}
		return err
	}
	if e.SizeBytes > 0 && size != e.SizeBytes {
		return fmt.Errorf("%w: %s is %d bytes, the index recorded %d", inference.ErrModelCorrupted, e.File, size, e.SizeBytes)
	}
	if e.SHA256 != "" && sum != e.SHA256 {
		return fmt.Errorf("%w: %s does not match the checksum recorded when it was written (sha256 %s, recorded %s)", inference.ErrModelCorrupted, e.File, sum, e.SHA256)
	}
	return nil
}

// maxArtifactBytes bounds hashing a file whose size was never recorded.
const maxArtifactBytes = 1 << 30

// quarantine moves models/name (and a .joblib's sidecar) to quarantine/
// with a <name>.reason.txt beside it. Nothing is deleted: the operator
// decides. It returns the new path relative to the registry.
func (r *Registry) quarantine(name, reason string) (string, error) {
	qdir := filepath.Join(r.dir, quarantineDir)
	if err := os.Mkdir(qdir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if st, err := os.Lstat(qdir); err != nil || !st.IsDir() {
		// A symbolic link would move the file out of the registry.
		return "", fmt.Errorf("%s is not a folder", quarantineDir)
	}
	dst := name
	for i := 2; ; i++ {
		if !exists(filepath.Join(qdir, dst)) && !exists(filepath.Join(qdir, dst+reasonSuffix)) {
			break
		}
		dst = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, filepath.Ext(name)), i, filepath.Ext(name))
	}
	src := filepath.Join(r.dir, modelsDir, name)
	if err := os.Rename(src, filepath.Join(qdir, dst)); err != nil {
		return "", err
	}
	if filepath.Ext(name) == ".joblib" && exists(src+".json") {
		_ = os.Rename(src+".json", filepath.Join(qdir, dst+".json"))
	}
	note := fmt.Sprintf("file: %s/%s\nquarantined_at: %s\nreason: %s\n", modelsDir, name, r.opts.Now().UTC().Format(time.RFC3339), reason)
	if err := atomicfile.WriteFile(filepath.Join(qdir, dst+reasonSuffix), []byte(note)); err != nil {
		r.log.Error("could not write the quarantine reason", "file", dst, "err", err)
	}
	_ = atomicfile.SyncDir(filepath.Join(r.dir, modelsDir))
	rel := quarantineDir + "/" + dst
	r.log.Error("model file moved to quarantine", "file", modelsDir+"/"+name, "to", rel, "reason", reason)
	return rel, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// quarantined lists the files in quarantine/ (reason files and the
// sidecars of listed files aside), read each time so that an operator who
// deals with a file clears it from health by removing it.
func (r *Registry) quarantined() []string {
	des := readDirQuiet(filepath.Join(r.dir, quarantineDir))
	have := map[string]bool{}
	for _, de := range des {
		have[de.Name()] = true
	}
	var out []string
	for _, de := range des {
		n := de.Name()
		if strings.HasSuffix(n, reasonSuffix) || atomicfile.IsTempName(n) || (strings.HasSuffix(n, ".json") && have[strings.TrimSuffix(n, ".json")]) {
			continue
		}
		out = append(out, quarantineDir+"/"+n)
	}
	return out
}

// Problems lists what makes the registry need an operator, for GET
// /health: model files in quarantine/ (until removed from there), index
// entries whose file is missing, and what start-up could not fix. At most
// maxProblems are listed, then a count of the rest.
func (r *Registry) Problems() []string {
	var out []string
	for _, q := range r.quarantined() {
		out = append(out, fmt.Sprintf("model file quarantined as unreadable: %s (reason in %s%s)", q, q, reasonSuffix))
	}
	r.mu.Lock()
	out = append(out, r.problems...)
	if r.shadow.problem != "" {
		out = append(out, r.shadow.problem)
	}
	var missing []string
	for _, e := range r.ix.Models {
		if !exists(filepath.Join(r.dir, filepath.FromSlash(e.File))) {
			missing = append(missing, fmt.Sprintf("model %s is listed but its file %s is missing", e.Version, e.File))
		}
	}
	r.mu.Unlock()
	sort.Strings(missing)
	out = append(out, missing...)
	if len(out) > maxProblems {
		rest := len(out) - maxProblems
		out = append(out[:maxProblems], fmt.Sprintf("and %d more registry problems (run ramanserve registry check)", rest))
	}
	return out
}

func (r *Registry) addProblem(p string) {
	r.mu.Lock()
	r.problems = append(r.problems, p)
	r.mu.Unlock()
}
