package registry

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"ramanserve/inference"
	"ramanserve/registry/store"
)

// orphans lists the artifacts (.npz, .joblib) that the index does not
// name, as an entry or as the artifact of a deleted entry (finishRemovals
// decides about those). A listing that fails is logged: nothing is then
// adopted until the next start.
func (r *Registry) orphans(ctx context.Context) []store.ArtifactInfo {
	known := map[string]bool{}
	for _, e := range r.ix.Models {
		known[e.File] = true
	}
	for _, rm := range r.ix.Removing {
		known[rm.File] = true
	}
	infos, err := r.artifacts.List(ctx)
	if err != nil {
		r.log.Error("the model files cannot be listed; none is adopted", "err", err)
		r.addProblem("the model files cannot be listed: " + err.Error())
		return nil
	}
	var out []store.ArtifactInfo
	for _, a := range infos {
		if !known[a.Name] {
			out = append(out, a)
		}
	}
	return out
}

// adoptOrphans gives every orphan model file an index entry (archived), or
// quarantines it when it cannot be read. It changes r.ix in memory and
// returns how many files it adopted; the caller writes the index.
func (r *Registry) adoptOrphans(ctx context.Context) int {
	adopted := 0
	for _, o := range r.orphans(ctx) {
		if _, _, err := r.adoptOrQuarantine(ctx, o); err == nil {
			adopted++
		}
	}
	return adopted
}

// adoptOrQuarantine adopts one orphan or, when it fails to read,
// quarantines it (quarantined says where to, "" when it could not be
// moved). The error says why it was not adopted.
func (r *Registry) adoptOrQuarantine(ctx context.Context, o store.ArtifactInfo) (e *Entry, quarantined string, err error) {
	if !o.Readable {
		err = fmt.Errorf("%w: not a regular file (a symbolic link or a special file); the registry does not follow it", inference.ErrModelCorrupted)
	} else {
		e, err = r.adopt(ctx, o)
	}
	if err == nil {
		r.ix.Models[e.Version] = e
		r.log.Warn("adopted a model file that had no index entry", "file", e.File, "version", e.Version, "status", e.Status, "sha256", e.SHA256)
		return e, "", nil
	}
	if ctx.Err() != nil {
		return nil, "", ctx.Err() // cancelled, not unreadable
	}
	q, qerr := r.quarantine(ctx, o.Name, err.Error())
	if qerr != nil {
		r.log.Error("unreadable model file could not be moved to quarantine", "file", o.Name, "err", qerr)
		r.addProblem(fmt.Sprintf("model file %s cannot be read (%v) and could not be moved to quarantine: %v", o.Name, err, qerr))
	}
	return nil, q, err
}

// adopt reads the artifact o through the same reader as a load (for a
// .joblib, the restricted reader and its sidecar, as for a file load) and
// returns its archived entry with the checksum of the bytes read.
func (r *Registry) adopt(ctx context.Context, o store.ArtifactInfo) (*Entry, error) {
	file := path.Base(o.Name)
	ext := path.Ext(file)
	e := &Entry{
		Version: r.freeVersion(strings.TrimSuffix(file, ext)), Status: StatusArchived,
		File: o.Name, TrainedAt: o.ModTime.UTC(), AddedAt: r.opts.Now().UTC(),
		Notes: "adopted: found in " + store.ModelsDir + "/ without an index entry",
	}
	if ext == ".joblib" {
		if err := r.adoptSidecar(ctx, e); err != nil {
			return nil, err
		}
	}
	m, got, err := r.openChecked(ctx, e, store.Fingerprint{}, r.opts.MaxImportBytes)
	if err != nil {
		return nil, err
	}
	e.SizeBytes, e.SHA256 = got.SizeBytes, got.SHA256
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
func (r *Registry) adoptSidecar(ctx context.Context, e *Entry) error {
	b, err := r.artifacts.ReadSidecar(ctx, e.File)
	switch {
	case errors.Is(err, store.ErrArtifactNotFound):
		return nil
	case errors.Is(err, store.ErrArtifactCorrupt):
		return fmt.Errorf("%w: %w", inference.ErrModelCorrupted, err)
	case err != nil:
		return err
	}
	sc, err := parseSidecar(b, path.Base(e.File)+".json")
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
