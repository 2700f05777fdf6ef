package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"ramanserve/inference"
	"ramanserve/platform/atomicfile"
	"ramanserve/registry/filestore"
	"ramanserve/registry/store"
)

const (
	// maxProblems bounds how many registry problems health lists.
	maxProblems = 10
	// maxArtifactBytes bounds reading an artifact whose size was never
	// recorded.
	maxArtifactBytes = 1 << 30
)

// tempDirs are the folders of the registry directory where the server
// writes temp files: its own, the file store's models/ and quarantine/
// (a reason file is written atomically too), and the training jobs'.
var tempDirs = []string{"", filestore.ModelsDir, "jobs", filestore.QuarantineDir}

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
		des, _ := os.ReadDir(filepath.Join(r.dir, sub)) // sorted by name
		for _, de := range des {
			if atomicfile.IsTempName(de.Name()) && de.Type().IsRegular() {
				rels = append(rels, filepath.ToSlash(filepath.Join(sub, de.Name())))
			}
		}
	}
	return rels
}

// fingerprint is the size and checksum e recorded for its artifact.
func fingerprint(e *Entry) store.Fingerprint {
	return store.Fingerprint{SizeBytes: e.SizeBytes, SHA256: e.SHA256}
}

// artifactError is the registry's error for the artifact store's refusal
// to open e's artifact: bytes that are not the recorded ones, or none at
// all, are MODEL_CORRUPTED; a store that fails is a registry error.
func artifactError(e *Entry, err error) error {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, store.ErrArtifactNotFound):
		return fmt.Errorf("%w: %s is listed but its file %s is missing", inference.ErrModelCorrupted, e.Version, e.File)
	case errors.Is(err, store.ErrArtifactCorrupt):
		return fmt.Errorf("%w: %w", inference.ErrModelCorrupted, err)
	default:
		return fmt.Errorf("%w: open %s: %w", store.ErrRegistry, e.File, err)
	}
}

// artifactNames is the set of the artifacts the store lists.
func (r *Registry) artifactNames(ctx context.Context) (map[string]bool, error) {
	infos, err := r.artifacts.List(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(infos))
	for _, a := range infos {
		names[a.Name] = true
	}
	return names, nil
}

// quarantine sets an unreadable artifact aside with the reason. Nothing
// is deleted: the operator decides. It returns where the artifact went
// ("" when it did not move).
func (r *Registry) quarantine(ctx context.Context, name, reason string) (string, error) {
	q, err := r.artifacts.Quarantine(context.WithoutCancel(ctx), name, reason)
	if q != "" {
		if err != nil {
			r.log.Error("could not record why a model file was quarantined", "file", name, "err", err)
		}
		r.log.Error("model file moved to quarantine", "file", name, "to", q, "reason", reason)
		return q, nil
	}
	return "", err
}

// Problems lists what makes the registry need an operator, for GET
// /health: quarantined model files (until removed from there), index
// entries whose file is missing, and what start-up could not fix. At most
// maxProblems are listed, then a count of the rest.
func (r *Registry) Problems() []string {
	ctx := context.Background()
	var out []string
	quarantined, err := r.artifacts.Quarantined(ctx)
	if err != nil {
		out = append(out, "the quarantined model files cannot be listed: "+err.Error())
	}
	for _, q := range quarantined {
		out = append(out, fmt.Sprintf("model file quarantined as unreadable: %s (reason in %s%s)", q, q, filestore.ReasonSuffix))
	}
	present, err := r.artifactNames(ctx)
	if err != nil {
		out = append(out, "the model files cannot be listed: "+err.Error())
	}
	r.mu.Lock()
	out = append(out, r.problems...)
	if r.shadow.problem != "" {
		out = append(out, r.shadow.problem)
	}
	var missing []string
	for _, e := range r.ix.Models {
		if present != nil && !present[e.File] {
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
