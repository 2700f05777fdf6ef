package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
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
	Version        string    `json:"version"`
	Status         Status    `json:"status"`
	File           string    `json:"file"` // relative to the registry directory, e.g. "models/v1.npz"
	SizeBytes      int64     `json:"size_bytes"`
	TrainedAt      time.Time `json:"trained_at"`
	TrainedSamples int       `json:"trained_samples,omitempty"`
	Algorithm      string    `json:"algorithm,omitempty"`
	Operator       string    `json:"operator,omitempty"`
	SourceBatches  []string  `json:"source_batches,omitempty"`
	Notes          string    `json:"notes,omitempty"`
	ImportedFrom   string    `json:"imported_from,omitempty"`
	// Target names the analyte of a one-target imported model, from its
	// sidecar ({"target": "DHA"}); "" otherwise.
	Target  string    `json:"target,omitempty"`
	AddedAt time.Time `json:"added_at"`
}

// SizeKB is the file size in KiB, rounded up, as listed by GET /model/list.
func (e *Entry) SizeKB() int { return int((e.SizeBytes + 1023) / 1024) }

// index is the whole registry state. It is written as one file, atomically,
// so the model list, the statuses and the active pointer can never disagree
// after a crash: a model file that is on disk but not in the index is an
// interrupted write and is removed at start-up.
type index struct {
	FormatVersion int               `json:"format_version"`
	Active        string            `json:"active"` // "" when no model is active
	Models        map[string]*Entry `json:"models"`
}

const (
	indexFile          = "index.json"
	indexFormatVersion = 1
)

func (ix *index) clone() *index {
	c := &index{FormatVersion: ix.FormatVersion, Active: ix.Active, Models: make(map[string]*Entry, len(ix.Models))}
	for k, v := range ix.Models {
		e := *v
		c.Models[k] = &e
	}
	return c
}

func readIndex(dir string) (*index, error) {
	b, err := os.ReadFile(filepath.Join(dir, indexFile))
	if os.IsNotExist(err) {
		return &index{FormatVersion: indexFormatVersion, Models: map[string]*Entry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", indexFile, err)
	}
	var ix index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("parse %s: %w", indexFile, err)
	}
	if ix.FormatVersion != indexFormatVersion {
		return nil, fmt.Errorf("%s has format_version %d, this server reads %d", indexFile, ix.FormatVersion, indexFormatVersion)
	}
	if ix.Models == nil {
		ix.Models = map[string]*Entry{}
	}
	return &ix, nil
}

func writeIndex(dir string, ix *index) error {
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return fmt.Errorf("encode index: %w", err)
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
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
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
