package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"ramanserve/platform/atomicfile"
	"ramanserve/platform/regularfile"
	"ramanserve/registry/store"
)

// IndexFile is the file, in the registry directory, that holds the index.
const IndexFile = "index.json"

// MaxIndexBytes bounds what the store reads of index.json (about a hundred
// thousand entries); a commit that would write more is refused, so the
// store never writes an index it could not read back.
const MaxIndexBytes = 64 << 20

// formatVersion is the format of index.json this store reads and writes.
const formatVersion = 1

// ErrNewerFormat means index.json has a format_version above the one this
// store reads: a newer server wrote it. It is also store.ErrIndexCorrupt
// (this server cannot use it), but no repair may overwrite it.
var ErrNewerFormat = errors.New("index.json was written by a newer server")

// document is index.json: the index with its format version, fields in
// the order they are written.
type document struct {
	FormatVersion int                     `json:"format_version"`
	Active        string                  `json:"active"` // "" when no model is active
	Models        map[string]*store.Entry `json:"models"`
	Shadow        string                  `json:"shadow,omitempty"`
	Removing      []store.Removal         `json:"removing,omitempty"`
}

// indexState says what was found at index.json.
type indexState int

const (
	indexOK      indexState = iota
	indexMissing            // no file
	indexEmpty              // 0 bytes or only white space
)

// readIndex reads index.json. A missing or empty file gives an empty
// index and says so: an atomic rename can produce neither, so an operator
// did it, and there is nothing in it to lose. Anything else that cannot
// be trusted is store.ErrIndexCorrupt.
func readIndex(dir string) (*store.Index, indexState, error) {
	f, _, err := regularfile.Open(filepath.Join(dir, IndexFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return store.NewIndex(), indexMissing, nil
	case errors.Is(err, regularfile.ErrNotRegular):
		return nil, indexOK, fmt.Errorf("%w: %w", store.ErrIndexCorrupt, err)
	case err != nil:
		return nil, indexOK, fmt.Errorf("open %s: %w", IndexFile, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxIndexBytes+1))
	if err != nil {
		return nil, indexOK, fmt.Errorf("read %s: %w", IndexFile, err)
	}
	if len(b) > MaxIndexBytes {
		return nil, indexOK, fmt.Errorf("%w: it is over %d bytes", store.ErrIndexCorrupt, MaxIndexBytes)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return store.NewIndex(), indexEmpty, nil
	}
	ix, err := parseIndex(b)
	if err != nil {
		return nil, indexOK, err
	}
	return ix, indexOK, nil
}

// parseIndex reads the content of index.json; what it accepts passes
// validate.
func parseIndex(b []byte) (*store.Index, error) {
	var doc document
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", store.ErrIndexCorrupt, err)
	}
	if doc.FormatVersion > formatVersion {
		return nil, fmt.Errorf("%w: %w (format_version %d, this server reads %d)", store.ErrIndexCorrupt, ErrNewerFormat, doc.FormatVersion, formatVersion)
	}
	if doc.FormatVersion != formatVersion {
		return nil, fmt.Errorf("%w: format_version %d, this server reads %d", store.ErrIndexCorrupt, doc.FormatVersion, formatVersion)
	}
	ix := &store.Index{Active: doc.Active, Shadow: doc.Shadow, Models: doc.Models, Removing: doc.Removing}
	if err := validate(ix); err != nil {
		return nil, err
	}
	return ix, nil
}

// validate is store.Index.Validate, and keeps entries and removals from
// naming one of the store's temp files.
func validate(ix *store.Index) error {
	if err := ix.Validate(); err != nil {
		return err
	}
	for k, e := range ix.Models {
		if atomicfile.IsTempName(path.Base(e.File)) {
			return fmt.Errorf("%w: entry %q names the file %q, not a model file in models/", store.ErrIndexCorrupt, k, e.File)
		}
	}
	for _, rm := range ix.Removing {
		if atomicfile.IsTempName(path.Base(rm.File)) {
			return fmt.Errorf("%w: removing names the file %q, not a model file in models/", store.ErrIndexCorrupt, rm.File)
		}
	}
	return nil
}

// encodeIndex renders ix as index.json, refusing one larger than
// MaxIndexBytes.
func encodeIndex(ix *store.Index) ([]byte, error) {
	doc := document{FormatVersion: formatVersion, Active: ix.Active, Models: ix.Models, Shadow: ix.Shadow, Removing: ix.Removing}
	b, err := json.MarshalIndent(&doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode index: %w", err)
	}
	if len(b) > MaxIndexBytes {
		return nil, fmt.Errorf("index.json would be %d bytes, over the %d that start-up reads; remove versions (DELETE /model/{version}) first", len(b), MaxIndexBytes)
	}
	return b, nil
}
