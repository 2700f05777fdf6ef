package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"ramanserve/inference"
	"ramanserve/platform/atomicfile"
)

// orphan is a model file in models/ that no index entry names.
type orphan struct {
	name    string // file name in models/
	regular bool   // false for a symbolic link or a special file
}

// orphans lists the model files (.npz, .joblib) in models/ that the index
// does not name (as an entry, or as the file of a deleted entry). Temp names and other files (a README, a .joblib's
// sidecar) are not model files and are left alone.
func (r *Registry) orphans() []orphan {
	known := map[string]bool{}
	for _, e := range r.ix.Models {
		known[strings.TrimPrefix(e.File, modelsDir+"/")] = true
	}
	for _, rm := range r.ix.Removing { // deleted: not an orphan until finishRemovals decides
		known[strings.TrimPrefix(rm.File, modelsDir+"/")] = true
	}
	var out []orphan
	for _, de := range readDirQuiet(filepath.Join(r.dir, modelsDir)) {
		name := de.Name()
		if known[name] || atomicfile.IsTempName(name) || !isModelExt(filepath.Ext(name)) || de.IsDir() {
			continue
		}
		out = append(out, orphan{name: name, regular: de.Type().IsRegular()})
	}
	return out
}

// adoptOrphans gives every orphan model file an index entry (archived), or
// moves it to quarantine/ when it cannot be read. It changes r.ix in
// memory and returns how many files it adopted; the caller writes the
// index.
func (r *Registry) adoptOrphans(ctx context.Context) int {
	adopted := 0
	for _, o := range r.orphans() {
		if _, err := r.adoptOrQuarantine(ctx, o); err == nil {
			adopted++
		}
	}
	return adopted
}

// adoptOrQuarantine adopts one orphan or, when it fails to read, moves it
// to quarantine/. The error says why it was not adopted.
func (r *Registry) adoptOrQuarantine(ctx context.Context, o orphan) (*Entry, error) {
	var (
		e   *Entry
		err error
	)
	if !o.regular {
		err = fmt.Errorf("%w: not a regular file (a symbolic link or a special file); the registry does not follow it", inference.ErrModelCorrupted)
	} else {
		e, err = r.adopt(ctx, o.name)
	}
	if err == nil {
		r.ix.Models[e.Version] = e
		r.log.Warn("adopted a model file that had no index entry", "file", e.File, "version", e.Version, "status", e.Status, "sha256", e.SHA256)
		return e, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled, not unreadable
	}
	if _, qerr := r.quarantine(o.name, err.Error()); qerr != nil {
		r.log.Error("unreadable model file could not be moved to quarantine", "file", modelsDir+"/"+o.name, "err", qerr)
		r.addProblem(fmt.Sprintf("model file %s/%s cannot be read (%v) and could not be moved to %s/: %v", modelsDir, o.name, err, quarantineDir, qerr))
	}
	return nil, err
}

// adopt reads models/name through the same reader as a load (for a
// .joblib, the restricted reader and its sidecar, as for a file load) and
// returns its archived entry with the file's checksum recorded.
func (r *Registry) adopt(ctx context.Context, name string) (*Entry, error) {
	full := filepath.Join(r.dir, modelsDir, name)
	size, sum, mtime, err := digest(ctx, full, r.opts.MaxImportBytes)
	if err != nil {
		return nil, err
	}
	ext := filepath.Ext(name)
	e := &Entry{
		Version: r.freeVersion(strings.TrimSuffix(name, ext)), Status: StatusArchived,
		File: modelsDir + "/" + name, SizeBytes: size, SHA256: sum,
		TrainedAt: mtime.UTC(), AddedAt: r.opts.Now().UTC(),
		Notes: "adopted: found in " + modelsDir + "/ without an index entry",
	}
	if ext == ".joblib" {
		if err := r.adoptSidecar(full+".json", e); err != nil {
			return nil, err
		}
	}
	m, err := r.openVerified(ctx, e)
	if err != nil {
		return nil, err
	}
	md := m.Metadata()
	e.Algorithm, e.TrainedSamples = md.Algorithm, md.TrainedSamples
	e.Shape = shapeOfModel(m)
	if ext == ".npz" && !md.TrainedAt.IsZero() {
		e.TrainedAt = md.TrainedAt.UTC()
	}
	return e, nil
}

// adoptSidecar applies a .joblib's sidecar, when there is one, as an
// import does.
func (r *Registry) adoptSidecar(path string, e *Entry) error {
	fi, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSidecarBytes {
		return fmt.Errorf("%w: the sidecar %s is not a regular file of at most %d bytes", inference.ErrModelCorrupted, filepath.Base(path), maxSidecarBytes)
	}
	sc, err := readSidecar(path)
	if err != nil {
		return err
	}
	if !sc.trainedAt.IsZero() {
		e.TrainedAt = sc.trainedAt
	}
	e.Target = sc.target
	return nil
}

var notVersionChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// freeVersion is stem when that is a valid version no entry uses, else a
// free name derived from it ("my model (2)" becomes "my-model-2-", then
// "-2", "-3", ... on collision). A reserved name (load, list, info, shadow) becomes
// "<name>-1".
func (r *Registry) freeVersion(stem string) string {
	if ValidVersion(stem) && !ReservedVersion(stem) && r.ix.Models[stem] == nil {
		return stem
	}
	base := notVersionChars.ReplaceAllString(stem, "-")
	base = strings.ReplaceAll(base, "..", "-")
	base = strings.TrimLeft(base, ".-_")
	if len(base) > 56 {
		base = base[:56]
	}
	if base == "" {
		base = "adopted"
	}
	first := 2
	if ReservedVersion(base) {
		first = 1 // "load.npz" is adopted as load-1
	} else if v := base; ValidVersion(v) && r.ix.Models[v] == nil {
		return v
	}
	for i := first; ; i++ {
		if v := fmt.Sprintf("%s-%d", base, i); ValidVersion(v) && r.ix.Models[v] == nil {
			return v
		}
	}
}
