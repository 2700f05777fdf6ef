// Package store defines what the model registry records and the contracts
// of the stores that keep that record: IndexStore for the index, and
// ArtifactStore for the model artifacts (the bytes each entry names).
//
// The registry (package registry) owns the rules: which version may become
// active, staged, archived or the shadow, and in which order a swap, a
// delete or an import happens. A store owns durability: it keeps the
// Index and hands back exactly what was committed. The registry changes
// the index only through IndexStore.CommitIndex, naming the Revision it
// read; a store refuses a commit based on any other revision
// (ErrConflict), so two writers (two replicas sharing a database, or two
// goroutines) can never both apply a change to the same state.
//
// The embedded implementation of both is package registry/filestore
// (index.json and models/ in the registry directory, under the
// directory's lock); package registry/storetest is the contract every
// implementation runs.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"ramanserve/inference"
)

// IndexStore keeps the registry's Index.
//
// Guarantees every implementation gives (registry/storetest checks them):
//
//   - ReadIndex returns the last committed index and its revision. A
//     store with nothing recorded returns an empty index (no entries, no
//     pointers) and revision 0; a store with a recorded index never
//     returns revision 0, also after a restart. The index returned, like
//     the one passed to CommitIndex, is the caller's own to change.
//   - CommitIndex is atomic: a reader, a restart or a crash sees either
//     the whole previous index or the whole new one, never a mixture.
//   - CommitIndex is durable on return: once it returns nil, a reopened
//     store reads the new index.
//   - CommitIndex compares and swaps: it applies next only when base is
//     the current revision, and returns the new revision, which differs
//     from every earlier one of this store. Otherwise it changes nothing
//     and returns an error wrapping ErrConflict. Of several commits
//     naming the same base, at most one succeeds.
//   - CommitIndex refuses an index that does not pass Index.Validate
//     (ErrIndexCorrupt), changing nothing: a store never records what it
//     could not read back.
//   - A cancelled context before a commit starts leaves the index as it
//     was.
type IndexStore interface {
	ReadIndex(ctx context.Context) (*Index, Revision, error)
	CommitIndex(ctx context.Context, base Revision, next *Index) (Revision, error)
}

// Revision identifies one committed state of an index; 0 means nothing
// is recorded. Revisions are compared for equality only.
type Revision uint64

// ErrConflict means the index changed since the revision a commit was
// based on: another writer committed first. Nothing was written; read the
// index again and decide afresh.
var ErrConflict = errors.New("the registry index changed since it was read")

// ErrIndexCorrupt means a recorded index cannot be trusted (in the file
// store: index.json is not JSON, is of another format, or names a file
// outside models/), or that an index offered for commit would be such an
// index.
var ErrIndexCorrupt = errors.New("index.json is corrupt")

// Index is the registry's whole record. It is committed as one unit, so
// the model list, the statuses and the pointers can never disagree.
type Index struct {
	// Active is the version served ("" when none).
	Active string
	// Shadow is the version scored beside the active one ("" when none);
	// never the active version.
	Shadow string
	// Models are the entries by version.
	Models map[string]*Entry
	// Removing lists the artifacts of deleted entries not yet removed: a
	// delete commits the index without the entry first, then removes the
	// artifact, so a crash in between leaves a named leftover to finish
	// instead of an unknown file to adopt.
	Removing []Removal
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{Models: map[string]*Entry{}} }

// Clone returns a deep copy of ix: entries, their lists and the removals
// are the copy's own.
func (ix *Index) Clone() *Index {
	c := &Index{Active: ix.Active, Shadow: ix.Shadow, Models: make(map[string]*Entry, len(ix.Models)),
		Removing: append([]Removal(nil), ix.Removing...)}
	for k, v := range ix.Models {
		c.Models[k] = v.Clone()
	}
	return c
}

// Validate reports why ix cannot be recorded, wrapping ErrIndexCorrupt:
// a missing models list, an entry that does not match its key, names an
// artifact outside models/ or has an unknown status, a removal of such an
// artifact, or a pointer that is not a version name. Nothing an index says
// can then make the registry read, move or hash a file it does not own.
func (ix *Index) Validate() error {
	if ix.Models == nil {
		return fmt.Errorf("%w: the models list is null or missing (an empty registry is written as \"models\": {})", ErrIndexCorrupt)
	}
	for k, e := range ix.Models {
		if err := checkEntry(k, e); err != nil {
			return fmt.Errorf("%w: %w", ErrIndexCorrupt, err)
		}
	}
	for _, rm := range ix.Removing {
		if !ValidArtifactName(rm.File) {
			return fmt.Errorf("%w: removing names the file %q, not a model file in models/", ErrIndexCorrupt, rm.File)
		}
	}
	if ix.Active != "" && !ValidVersion(ix.Active) {
		return fmt.Errorf("%w: active %q is not a valid version name", ErrIndexCorrupt, ix.Active)
	}
	if ix.Shadow != "" && !ValidVersion(ix.Shadow) {
		return fmt.Errorf("%w: shadow %q is not a valid version name", ErrIndexCorrupt, ix.Shadow)
	}
	return nil
}

func checkEntry(key string, e *Entry) error {
	switch {
	case e == nil:
		return fmt.Errorf("entry %q is null", key)
	case e.Version != key || !ValidVersion(key):
		return fmt.Errorf("entry %q has version %q", key, e.Version)
	case !ValidArtifactName(e.File):
		return fmt.Errorf("entry %q names the file %q, not a model file in models/", key, e.File)
	case !ValidStatus(e.Status):
		return fmt.Errorf("entry %q has status %q", key, e.Status)
	}
	return nil
}

// versionPattern matches the Version schema of api/openapi.yaml; versions
// name artifacts, so this also keeps them from escaping models/.
var versionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidVersion reports whether v is an acceptable version name.
func ValidVersion(v string) bool { return versionPattern.MatchString(v) && !strings.Contains(v, "..") }

// ModelsDir is the first element of every artifact name. Names keep the
// file store's layout in every store, so an index moves between stores
// unchanged.
const ModelsDir = "models"

// ValidArtifactName reports whether name is "models/<file>.npz" or
// "models/<file>.joblib" with a plain file name.
func ValidArtifactName(name string) bool {
	file, ok := strings.CutPrefix(name, ModelsDir+"/")
	return ok && file != "" && !strings.ContainsAny(file, "/\\\x00") && file != "." && file != ".." &&
		IsModelExt(path.Ext(file))
}

// IsModelExt reports whether ext is the extension of a model artifact.
func IsModelExt(ext string) bool { return ext == ".npz" || ext == ".joblib" }

// Status is a model's place in the registry.
type Status string

// The three statuses of the contract. At most one entry is StatusActive.
const (
	StatusActive   Status = "active"
	StatusStaged   Status = "staged"
	StatusArchived Status = "archived"
)

// ValidStatus reports whether s is one of the three statuses.
func ValidStatus(s Status) bool {
	return s == StatusActive || s == StatusStaged || s == StatusArchived
}

// Entry is one model in the registry.
type Entry struct {
	Version string `json:"version"`
	Status  Status `json:"status"`
	// File names the model's artifact, "models/<file>" (a path relative
	// to the registry directory in the file store).
	File      string `json:"file"`
	SizeBytes int64  `json:"size_bytes"`
	// SHA256 is the hex SHA-256 of the model file, recorded when the
	// registry writes, imports or adopts it and verified on every open.
	// "" for entries written before checksums were recorded.
	SHA256         string    `json:"sha256,omitempty"`
	TrainedAt      time.Time `json:"trained_at"`
	TrainedSamples int       `json:"trained_samples,omitempty"`
	Algorithm      string    `json:"algorithm,omitempty"`
	Operator       string    `json:"operator,omitempty"`
	// AuthenticatedAs is the name of the bearer token that trained or
	// imported the model; "" when authentication was off.
	AuthenticatedAs string   `json:"authenticated_as,omitempty"`
	SourceBatches   []string `json:"source_batches,omitempty"`
	// Annotations are the training request's annotations (a console's
	// own data, bounded by the contract), as compact JSON.
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Notes        string          `json:"notes,omitempty"`
	ImportedFrom string          `json:"imported_from,omitempty"`
	// Target names the analyte of a one-target imported model, from its
	// sidecar ({"target": "DHA"}); "" otherwise.
	Target  string    `json:"target,omitempty"`
	AddedAt time.Time `json:"added_at"`
	// Lineage of a model trained here: its job, and the SHA-256 (of the
	// CSV part exactly as uploaded) and row count of its training data.
	JobID             string `json:"job_id,omitempty"`
	TrainingCSVSHA256 string `json:"training_csv_sha256,omitempty"`
	TrainingRows      int    `json:"training_rows,omitempty"`
	// RowsUsed are the rows that entered the model; TrainingRows less
	// RowsUsed were left out by the upload's exclude_scan_ids. The ids
	// themselves stay in the model file's review: the index is rewritten
	// whole on every change, and they could add up to 1 MiB per version.
	RowsUsed int `json:"rows_used,omitempty"`
	// Metrics are the cross-validated figures of a model trained here, so
	// that GET /model/{version} answers without opening the artifact.
	Metrics *Metrics `json:"metrics,omitempty"`
	// Shape is the model's axis, regions and recipe (see Shape): recorded
	// when a trained model is staged, and for imports, adopted files and
	// entries from before shapes when the registry opens the model; nil
	// until then, or for a model without axis.
	Shape *Shape `json:"shape,omitempty"`
}

// Clone returns a copy of e whose lists are its own.
func (e *Entry) Clone() *Entry {
	c := *e
	c.SourceBatches = append([]string(nil), e.SourceBatches...)
	return &c
}

// SizeKB is the file size in KiB, rounded up, as listed by GET /model/list.
func (e *Entry) SizeKB() int { return int((e.SizeBytes + 1023) / 1024) }

// Metrics are the cross-validated figures of the chosen component count.
type Metrics struct {
	RMSE       inference.Breakdown `json:"rmse"`
	R2         inference.Breakdown `json:"r2"`
	Components int                 `json:"components"`
}

// Shape is what a model expects of a spectrum and does to it before the
// regression, recorded in the entry so that GET /model/{version} answers
// without opening the artifact.
type Shape struct {
	// WavenumberRange is the first and last point of the model's axis
	// (cm-1) and WavenumberCount its length, the spectrum's point count.
	WavenumberRange [2]float64 `json:"wavenumber_range"`
	WavenumberCount int        `json:"wavenumber_count"`
	// Regions are the inclusive wavenumber ranges that enter the model;
	// nil when every point does.
	Regions [][2]float64 `json:"regions,omitempty"`
	// Preprocessing is the recipe in the contract's JSON form
	// (preprocess.Recipe.MarshalJSON); absent for raw intensities.
	Preprocessing json.RawMessage `json:"preprocessing,omitempty"`
}

// Removal is the artifact of a deleted entry, with the size and checksum
// it must still have to be removed: a file put in its place since is
// adopted, never deleted.
type Removal struct {
	File      string `json:"file"`
	SizeBytes int64  `json:"size_bytes"`
	SHA256    string `json:"sha256,omitempty"`
}
