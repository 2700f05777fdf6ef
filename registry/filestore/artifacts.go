package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"ramanserve/platform/atomicfile"
	"ramanserve/platform/ctxio"
	"ramanserve/platform/regularfile"
	"ramanserve/registry/store"
)

// The artifacts (store.ArtifactStore) are files in the registry
// directory: an artifact named "models/<file>" is the file models/<file>,
// a .joblib's sidecar is models/<file>.json beside it, and a quarantined
// artifact is moved to quarantine/ with <file>.reason.txt beside it.
// Every file is written through a temp file named with
// atomicfile.TempPrefix in the same folder, fsynced, and renamed into
// place, and the folder is fsynced.

const (
	// ModelsDir is the folder of the artifacts.
	ModelsDir = store.ModelsDir
	// QuarantineDir is the folder of the quarantined artifacts.
	QuarantineDir = "quarantine"
	// ReasonSuffix ends the name of the file that says why an artifact
	// was quarantined.
	ReasonSuffix = ".reason.txt"
	sidecarExt   = ".json"
)

// artifactPath is the file of the artifact name. A name that is not an
// artifact name (or is one of the store's temp names) is refused, so
// nothing a caller passes makes the store touch another file.
func (s *Store) artifactPath(name string) (string, error) {
	if !store.ValidArtifactName(name) || atomicfile.IsTempName(path.Base(name)) {
		return "", fmt.Errorf("%q is not a model artifact name (%s/<file>.npz or .joblib)", name, ModelsDir)
	}
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	return filepath.Join(s.dir, filepath.FromSlash(name)), nil
}

func (s *Store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return errClosed
	}
	return nil
}

func hasSidecar(name string) bool { return path.Ext(name) == ".joblib" }

// Put writes the artifact name through a temp file and renames it into
// place (see store.ArtifactStore).
func (s *Store) Put(ctx context.Context, name string, write func(io.Writer) error) (int64, string, error) {
	full, err := s.artifactPath(name)
	if err != nil {
		return 0, "", err
	}
	return s.putFile(ctx, full, write, full)
}

// PutSidecar writes the sidecar of the .joblib artifact name (see
// store.ArtifactStore).
func (s *Store) PutSidecar(ctx context.Context, name string, data []byte) error {
	full, err := s.artifactPath(name)
	if err != nil {
		return err
	}
	if !hasSidecar(name) {
		return fmt.Errorf("%s: only a .joblib artifact has a sidecar", name)
	}
	if len(data) > store.MaxSidecarBytes {
		return fmt.Errorf("the sidecar of %s is %d bytes, over %d", name, len(data), store.MaxSidecarBytes)
	}
	_, _, err = s.putFile(ctx, full+sidecarExt, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}, full, full+sidecarExt)
	return err
}

// putFile writes dst atomically and durably, unless one of absent
// exists (store.ErrArtifactExists). The existence check and the rename
// are one step under publishMu; the directory's lock keeps every other
// server process out, so only a file copied in by hand could slip in
// between, as with any rename.
func (s *Store) putFile(ctx context.Context, dst string, write func(io.Writer) error, absent ...string) (int64, string, error) {
	if err := ctx.Err(); err != nil {
		return 0, "", err
	}
	if err := anyExists(absent); err != nil {
		return 0, "", err // before writing what would be refused anyway
	}
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, "", err
	}
	tmp, err := atomicfile.CreateTemp(dst)
	if err != nil {
		return 0, "", err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // no-op after the rename
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(tmp, h)}
	err = write(cw)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return 0, "", err
	}
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	if err := anyExists(absent); err != nil {
		return 0, "", err
	}
	if err := os.Rename(tmpName, dst); err != nil {
		return 0, "", err
	}
	return cw.n, hex.EncodeToString(h.Sum(nil)), atomicfile.SyncDir(dir)
}

func anyExists(paths []string) error {
	for _, p := range paths {
		if exists(p) {
			return fmt.Errorf("%w: %s", store.ErrArtifactExists, filepath.Base(p))
		}
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Open opens the artifact's file (a regular file: a final symbolic link
// is not followed), hashes it through the open file and hands out that
// same open file, so the bytes checked are the bytes read even if the
// path is replaced meanwhile. Reads stop at the size that was checked.
func (s *Store) Open(ctx context.Context, name string, want store.Fingerprint, maxBytes int64) (store.Artifact, error) {
	full, err := s.artifactPath(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, st, err := regularfile.Open(full)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s", store.ErrArtifactNotFound, name)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", store.ErrArtifactCorrupt, err)
	}
	size := st.Size()
	sizeRecorded := want.SizeBytes > 0 || want.SHA256 != ""
	switch {
	case sizeRecorded && size != want.SizeBytes:
		f.Close()
		return nil, fmt.Errorf("%w: %s is %d bytes, the index recorded %d", store.ErrArtifactCorrupt, name, size, want.SizeBytes)
	case !sizeRecorded && size > maxBytes:
		f.Close()
		return nil, fmt.Errorf("%w: %s is %d bytes, over the %d-byte limit", store.ErrArtifactCorrupt, name, size, maxBytes)
	}
	content := io.NewSectionReader(f, 0, size)
	sum, err := hashAll(ctx, content, size, name)
	if err != nil {
		f.Close()
		return nil, err
	}
	if want.SHA256 != "" && sum != want.SHA256 {
		f.Close()
		return nil, fmt.Errorf("%w: %s does not match the checksum recorded when it was written (sha256 %s, recorded %s)", store.ErrArtifactCorrupt, name, sum, want.SHA256)
	}
	return &fileArtifact{SectionReader: content, f: f, sum: sum}, nil
}

// hashAll returns the hex SHA-256 of the size bytes of r; a read error or
// a shorter content (a file truncated meanwhile) is ErrArtifactCorrupt.
func hashAll(ctx context.Context, r io.Reader, size int64, name string) (string, error) {
	h := sha256.New()
	n, err := io.Copy(h, ctxio.Reader(ctx, r))
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		return "", fmt.Errorf("%w: read %s: %w", store.ErrArtifactCorrupt, name, err)
	case n != size:
		return "", fmt.Errorf("%w: %s shrank from %d to %d bytes while it was read", store.ErrArtifactCorrupt, name, size, n)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fileArtifact is an open, checked artifact file.
type fileArtifact struct {
	*io.SectionReader
	f   *os.File
	sum string
}

func (a *fileArtifact) SHA256() string { return a.sum }
func (a *fileArtifact) Close() error   { return a.f.Close() }

// ReadSidecar reads models/<file>.json, a regular file of at most
// store.MaxSidecarBytes.
func (s *Store) ReadSidecar(ctx context.Context, name string) ([]byte, error) {
	full, err := s.artifactPath(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	side := full + sidecarExt
	f, st, err := regularfile.Open(side)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: no sidecar for %s", store.ErrArtifactNotFound, name)
	case err == nil && st.Size() > store.MaxSidecarBytes:
		f.Close()
		err = errors.New("too large")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the sidecar %s is not a regular file of at most %d bytes", store.ErrArtifactCorrupt, filepath.Base(side), store.MaxSidecarBytes)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, store.MaxSidecarBytes+1))
	if err != nil || len(b) > store.MaxSidecarBytes {
		return nil, fmt.Errorf("%w: read the sidecar %s: %v", store.ErrArtifactCorrupt, filepath.Base(side), err)
	}
	return b, nil
}

// Delete removes the artifact's file and a .joblib's sidecar when the
// file still holds the bytes recorded in want. The file is first renamed
// to a temp name in models/ (one atomic step that takes whatever is at
// the path), then checked to be a regular file with want's size and
// checksum before it is unlinked; anything else (a symbolic link, a
// special file, a file replaced by hand) is put back where it was, with
// its sidecar, and the error (store.ErrArtifactChanged) says why. A crash
// in between leaves the temp name, which start-up sweeps, only for a file
// that passed the check.
func (s *Store) Delete(ctx context.Context, name string, want store.Fingerprint) error {
	full, err := s.artifactPath(name)
	if err != nil {
		return err
	}
	dir, file := filepath.Split(full)
	if err := unlinkOwn(ctx, dir, file, &want); err != nil {
		return err
	}
	if hasSidecar(name) {
		if err := unlinkOwn(ctx, dir, file+sidecarExt, nil); err != nil {
			return fmt.Errorf("the artifact is removed, its sidecar not: %w", err)
		}
	}
	return atomicfile.SyncDir(dir)
}

// unlinkOwn removes dir/file when it is a regular file and, when want is
// given, still has want's size and checksum. A missing file is not an
// error.
func unlinkOwn(ctx context.Context, dir, file string, want *store.Fingerprint) error {
	src := filepath.Join(dir, file)
	tmp := filepath.Join(dir, atomicfile.TempPrefix+"deleting-"+file)
	if err := os.Rename(src, tmp); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	why := ""
	if st, err := os.Lstat(tmp); err != nil {
		why = err.Error()
	} else if !st.Mode().IsRegular() {
		why = "not a regular file"
	} else if want != nil && !unchanged(ctx, tmp, *want) {
		why = "not the bytes the registry recorded (replaced since it was written)"
	}
	if why == "" {
		return os.Remove(tmp)
	}
	// Not the file the store wrote: put it back untouched.
	if err := os.Rename(tmp, src); err != nil {
		return fmt.Errorf("%w: %s is %s and could not be put back: %w", store.ErrArtifactChanged, file, why, err)
	}
	return fmt.Errorf("%w: %s is %s; left in place", store.ErrArtifactChanged, file, why)
}

// unchanged reports whether the regular file at path has want's size and
// checksum (a fingerprint without a checksum is matched by size).
func unchanged(ctx context.Context, path string, want store.Fingerprint) bool {
	f, st, err := regularfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st.Size() != want.SizeBytes {
		return false
	}
	sum, err := hashAll(ctx, io.NewSectionReader(f, 0, st.Size()), st.Size(), path)
	return err == nil && (want.SHA256 == "" || sum == want.SHA256)
}

// List returns the model files in models/ (.npz, .joblib), sorted by
// name: temp names, sidecars, folders and other files are not artifacts.
func (s *Store) List(ctx context.Context) ([]store.ArtifactInfo, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(filepath.Join(s.dir, ModelsDir)) // sorted by name
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []store.ArtifactInfo
	for _, de := range des {
		name := de.Name()
		if atomicfile.IsTempName(name) || !store.IsModelExt(filepath.Ext(name)) || de.IsDir() {
			continue
		}
		info := store.ArtifactInfo{Name: ModelsDir + "/" + name, Readable: de.Type().IsRegular()}
		if fi, err := de.Info(); err == nil {
			info.ModTime = fi.ModTime()
		}
		out = append(out, info)
	}
	return out, nil
}

// Quarantine moves models/<file> (and a .joblib's sidecar) to
// quarantine/ under a free name, with <name>.reason.txt beside it.
// Nothing is deleted or overwritten: the operator decides.
func (s *Store) Quarantine(ctx context.Context, name, reason string) (string, error) {
	full, err := s.artifactPath(name)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	file := filepath.Base(full)
	qdir := filepath.Join(s.dir, QuarantineDir)
	if err := os.Mkdir(qdir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	if st, err := os.Lstat(qdir); err != nil || !st.IsDir() {
		// A symbolic link would move the file out of the registry.
		return "", fmt.Errorf("%s is not a folder", QuarantineDir)
	}
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	dst := file
	for i := 2; ; i++ {
		if !exists(filepath.Join(qdir, dst)) && !exists(filepath.Join(qdir, dst+ReasonSuffix)) {
			break
		}
		dst = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(file, filepath.Ext(file)), i, filepath.Ext(file))
	}
	if err := os.Rename(full, filepath.Join(qdir, dst)); err != nil {
		return "", err
	}
	if hasSidecar(name) && exists(full+sidecarExt) {
		_ = os.Rename(full+sidecarExt, filepath.Join(qdir, dst+sidecarExt))
	}
	note := fmt.Sprintf("file: %s\nquarantined_at: %s\nreason: %s\n", name, time.Now().UTC().Format(time.RFC3339), reason)
	rel := QuarantineDir + "/" + dst
	err = atomicfile.WriteFile(filepath.Join(qdir, dst+ReasonSuffix), []byte(note))
	if serr := atomicfile.SyncDir(filepath.Dir(full)); err == nil {
		err = serr
	}
	if err != nil {
		// The artifact is out of models/ either way: say where it went.
		return rel, fmt.Errorf("%s quarantined, its reason not recorded: %w", rel, err)
	}
	return rel, nil
}

// Quarantined lists the files in quarantine/ (reason files, temp files
// and the sidecars of listed files aside), read each time so that an
// operator who deals with a file clears it by removing it.
func (s *Store) Quarantined(ctx context.Context) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	des, err := os.ReadDir(filepath.Join(s.dir, QuarantineDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	have := map[string]bool{}
	for _, de := range des {
		have[de.Name()] = true
	}
	var out []string
	for _, de := range des {
		n := de.Name()
		if strings.HasSuffix(n, ReasonSuffix) || atomicfile.IsTempName(n) || (strings.HasSuffix(n, sidecarExt) && have[strings.TrimSuffix(n, sidecarExt)]) {
			continue
		}
		out = append(out, QuarantineDir+"/"+n)
	}
	return out, nil
}
