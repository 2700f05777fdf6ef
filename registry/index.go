package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ramanserve/inference"
	"ramanserve/platform/regularfile"
)

// Status is a model's place in the registry.
type Status string

// The three statuses of the contract. At most one entry is StatusActive.
const (
	StatusActive   Status = "active"
	StatusStaged   Status = "staged"
	StatusArchived Status = "archived"
)

// Entry is one model in the registry, as recorded in index.json.
type Entry struct {
	Version   string `json:"version"`
	Status    Status `json:"status"`
	File      string `json:"file"` // relative to the registry directory, e.g. "models/v1.npz"
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
	Notes           string   `json:"notes,omitempty"`
	ImportedFrom    string   `json:"imported_from,omitempty"`
	// Annotations are the training request's annotations (a console's
	// own data, bounded by the contract), as compact JSON.
	Annotations json.RawMessage `json:"annotations,omitempty"`
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
	// themselves stay in the model file's review: this file is rewritten
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

// Metrics are the cross-validated figures of the chosen component count.
type Metrics struct {
	RMSE       inference.Breakdown `json:"rmse"`
	R2         inference.Breakdown `json:"r2"`
	Components int                 `json:"components"`
}

// removal is a model file whose entry was deleted: the index that drops
// the entry names it, so a crash before the file is unlinked leaves a file
// start-up removes (when it still has the recorded size and checksum)
// instead of adopting it back.
type removal struct {
	File      string `json:"file"`
	SizeBytes int64  `json:"size_bytes"`
	SHA256    string `json:"sha256,omitempty"`
}

// SizeKB is the file size in KiB, rounded up, as listed by GET /model/list.
func (e *Entry) SizeKB() int { return int((e.SizeBytes + 1023) / 1024) }

// index is the whole registry state. It is written as one file, atomically,
// so the model list, the statuses and the active pointer can never disagree
// after a crash. A model file that is on disk but not in the index (a crash
// between writing a model and recording it, or a file copied in by hand) is
// adopted at start-up, never deleted.
type index struct {
	FormatVersion int               `json:"format_version"`
	Active        string            `json:"active"` // "" when no model is active
	Models        map[string]*Entry `json:"models"`
	// Shadow is the version scored beside the active one ("" or absent:
	// none); never the active version (see shadow.go).
	Shadow string `json:"shadow,omitempty"`
	// Removing lists the files of deleted entries not yet unlinked.
	Removing []removal `json:"removing,omitempty"`
}

const (
	indexFile          = "index.json"
	indexFormatVersion = 1
	// maxIndexBytes bounds what start-up reads of index.json (about a
	// hundred thousand entries).
	maxIndexBytes = 64 << 20
)

func (ix *index) clone() *index {
	c := &index{FormatVersion: ix.FormatVersion, Active: ix.Active, Shadow: ix.Shadow, Models: make(map[string]*Entry, len(ix.Models)),
		Removing: append([]removal(nil), ix.Removing...)}
	for k, v := range ix.Models {
		e := *v
		c.Models[k] = &e
	}
	return c
}

func emptyIndex() *index {
	return &index{FormatVersion: indexFormatVersion, Models: map[string]*Entry{}}
}

// indexState says what was found at index.json.
type indexState int

const (
	indexOK      indexState = iota
	indexMissing            // no file: rebuilt from the model files
	indexEmpty              // 0 bytes or only white space: rebuilt from the model files
)

// ErrIndexCorrupt means index.json exists with content that cannot be
// trusted: not JSON, another format version, a null or missing models
// list, or an entry that does not match its key. The server refuses to
// start on it rather than guess: the file was written to say something,
// and starting with less would hide models. `ramanserve registry check DIR
// -repair` sets it aside and rebuilds the index from the model files.
var ErrIndexCorrupt = errors.New("index.json is corrupt")

// readIndex reads index.json. A missing or empty file gives an empty index
// and says so (the caller rebuilds it from the files: an atomic rename can
// produce neither, so an operator did it, and there is nothing in it to
// lose). Anything else that cannot be trusted is ErrIndexCorrupt.
func readIndex(dir string) (*index, indexState, error) {
	f, _, err := regularfile.Open(filepath.Join(dir, indexFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return emptyIndex(), indexMissing, nil
	case errors.Is(err, regularfile.ErrNotRegular):
		return nil, indexOK, fmt.Errorf("%w: %w", ErrIndexCorrupt, err)
	case err != nil:
		return nil, indexOK, fmt.Errorf("open %s: %w", indexFile, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	if err != nil {
		return nil, indexOK, fmt.Errorf("read %s: %w", indexFile, err)
	}
	if len(b) > maxIndexBytes {
		return nil, indexOK, fmt.Errorf("%w: it is over %d bytes", ErrIndexCorrupt, maxIndexBytes)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return emptyIndex(), indexEmpty, nil
	}
	ix, err := parseIndex(b)
	if err != nil {
		return nil, indexOK, err
	}
	return ix, indexOK, nil
}

func parseIndex(b []byte) (*index, error) {
	var ix index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrIndexCorrupt, err)
	}
	if ix.FormatVersion != indexFormatVersion {
		return nil, fmt.Errorf("%w: format_version %d, this server reads %d", ErrIndexCorrupt, ix.FormatVersion, indexFormatVersion)
	}
	if ix.Models == nil {
		return nil, fmt.Errorf("%w: the models list is null or missing (an empty registry is written as \"models\": {})", ErrIndexCorrupt)
	}
	for k, e := range ix.Models {
		if err := checkEntry(k, e); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrIndexCorrupt, err)
		}
	}
	for _, rm := range ix.Removing {
		if !validModelFile(rm.File) {
			return nil, fmt.Errorf("%w: removing names the file %q, not a model file in models/", ErrIndexCorrupt, rm.File)
		}
	}
	if ix.Active != "" && !ValidVersion(ix.Active) {
		return nil, fmt.Errorf("%w: active %q is not a valid version name", ErrIndexCorrupt, ix.Active)
	}
	if ix.Shadow != "" && !ValidVersion(ix.Shadow) {
		return nil, fmt.Errorf("%w: shadow %q is not a valid version name", ErrIndexCorrupt, ix.Shadow)
	}
	return &ix, nil
}

// checkEntry keeps an index entry from naming a file outside models/ (or a
// temp file, or a sidecar), so nothing the index says can make the registry
// read, move or hash a file it does not own.
func checkEntry(key string, e *Entry) error {
	switch {
	case e == nil:
		return fmt.Errorf("entry %q is null", key)
	case e.Version != key || !ValidVersion(key):
		return fmt.Errorf("entry %q has version %q", key, e.Version)
	case !validModelFile(e.File):
		return fmt.Errorf("entry %q names the file %q, not a model file in models/", key, e.File)
	case !validStatus(e.Status):
		return fmt.Errorf("entry %q has status %q", key, e.Status)
	}
	return nil
}

func validStatus(s Status) bool {
	return s == StatusActive || s == StatusStaged || s == StatusArchived
}

// validModelFile reports whether rel is "models/<name>.npz" or
// "models/<name>.joblib" with a plain name that is not a temp name.
func validModelFile(rel string) bool {
	name, ok := strings.CutPrefix(rel, modelsDir+"/")
	return ok && name != "" && !strings.ContainsAny(name, "/\\\x00") && name != "." && name != ".." &&
		!IsTempName(name) && isModelExt(filepath.Ext(name))
}

func writeIndex(dir string, ix *index) error {
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return fmt.Errorf("encode index: %w", err)
	}
	// Start-up refuses a larger index as corrupt: the change fails here
	// instead of leaving a registry the next start cannot open.
	if len(b) > maxIndexBytes {
		return fmt.Errorf("index.json would be %d bytes, over the %d that start-up reads; remove versions (DELETE /model/{version}) first", len(b), maxIndexBytes)
	}
	return WriteFileAtomic(filepath.Join(dir, indexFile), b)
}

// WriteFileAtomic replaces path with data so that a reader, or a process
// restarted after kill -9 or a power cut, sees either the old or the new
// content, never a mixture: write a temp file in the same directory, fsync
// it, rename it over path, then fsync the directory so the rename itself is
// durable.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, path)
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

// createTemp creates the temp file that will replace path, readable by
// everyone like any file the server writes (CreateTemp makes it 0600): a
// `registry check -repair` run as root must not leave an index.json or a
// model that the service's own user cannot read.
func createTemp(dir, path string) (*os.File, error) {
	tmp, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+".*")
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

// SyncDir fsyncs a directory so that renames and creations in it survive a crash.
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
