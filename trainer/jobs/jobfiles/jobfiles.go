// Package jobfiles keeps the training jobs' records and saved data sets as
// files in one folder (the registry's jobs/): <id>.json, a job's record,
// and <id>.dataset, the data set of a job queued when the server stopped.
// It is the embedded jobs.Store and jobs.UploadSpool.
//
// Every file is written under a temporary name (atomicfile.TempPrefix),
// fsynced, and renamed over its own, and the folder is fsynced: a crash
// leaves the old file or the new one, and at worst a temp file, which Open
// removes. Reading opens regular files only, without following a symbolic
// link or blocking on a FIFO, and reads a record of at most maxRecordBytes:
// the folder is on disk, where anyone with access to the registry may have
// put anything.
package jobfiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"ramanserve/platform/atomicfile"
	"ramanserve/platform/regularfile"
	"ramanserve/trainer/jobs"
)

const (
	recordSuffix = ".json"
	spoolSuffix  = ".dataset"
)

// maxRecordBytes bounds a job record read at start-up. The largest record
// the server writes is its meta part (at most 1 MiB on the wire, the HTTP
// layer's bound) re-encoded, which escapes a byte to at most 6 ("<" is
// \u003c): under 7 MiB, plus the result: at most jobs.MaxOutliers
// outliers of a scan id (at most 256 bytes, the CSV's cell bound, 6 times
// that escaped) and about 400 bytes of numbers each, and at most 64 CV
// points of about 300 bytes: under 3 MiB.
const maxRecordBytes = 16 << 20

// Dir is the jobs folder. It implements jobs.Store and jobs.UploadSpool,
// and is safe for concurrent use: each call works on whole files.
type Dir struct {
	dir  string
	log  *slog.Logger
	keys keyFile // the idempotency keys (keys.go)
}

var (
	_ jobs.Store       = (*Dir)(nil)
	_ jobs.UploadSpool = (*Dir)(nil)
	_ jobs.KeyStore    = (*Dir)(nil)
)

// Open creates dir if needed and removes the temp files that writes cut
// short by a crash left in it: regular files named with
// atomicfile.TempPrefix only, never an operator's file. log hears of each
// (nil: nowhere).
func Open(dir string, log *slog.Logger) (*Dir, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("jobfiles: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("jobfiles: %w", err)
	}
	for _, e := range entries {
		if atomicfile.IsTempName(e.Name()) && e.Type().IsRegular() {
			log.Warn("removing the temp file of an interrupted write", "file", e.Name())
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return &Dir{dir: dir, log: log}, nil
}

// path is the file of id with suffix. An id that is not a plain file name
// (empty, with a separator, . or .., or a temp name) is refused: a record
// or a spool never leaves the folder nor takes a name the sweep removes.
func (d *Dir) path(id, suffix string) (string, error) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`+"\x00") || atomicfile.IsTempName(id) {
		return "", fmt.Errorf("jobfiles: %q is not a job id", id)
	}
	return filepath.Join(d.dir, id+suffix), nil
}

// Save implements jobs.Store.
func (d *Dir) Save(ctx context.Context, j *jobs.Job) error {
	path, err := d.path(j.ID, recordSuffix)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("jobfiles: encode %s: %w", j.ID, err)
	}
	return atomicfile.WriteFile(path, b)
}

// LoadAll implements jobs.Store. A file it cannot take for a record (not a
// regular file, over maxRecordBytes, not a record, or a record whose job
// id is not its file name) is skipped.
func (d *Dir) LoadAll(ctx context.Context) ([]*jobs.Job, []error, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("jobfiles: %w", err)
	}
	var (
		records []*jobs.Job
		skipped []error
	)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		name := e.Name()
		if atomicfile.IsTempName(name) || !strings.HasSuffix(name, recordSuffix) {
			continue
		}
		j, err := readRecord(d.dir, name)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", name, err))
			continue
		}
		records = append(records, j)
	}
	return records, skipped, nil
}

// readRecord reads and decodes the record dir/name.
func readRecord(dir, name string) (*jobs.Job, error) {
	f, st, err := regularfile.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxRecordBytes {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit of a job record", st.Size(), maxRecordBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecordBytes {
		return nil, fmt.Errorf("over the %d-byte limit of a job record", maxRecordBytes)
	}
	var j jobs.Job
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, err
	}
	if j.ID == "" || j.ID+recordSuffix != name {
		return nil, fmt.Errorf("the record's job id %q does not match its file name", j.ID)
	}
	return &j, nil
}

// Put implements jobs.UploadSpool. The file is readable by its owner only:
// it holds a customer's training data.
func (d *Dir) Put(ctx context.Context, id string, r io.Reader) (err error) {
	path, err := d.path(id, spoolSuffix)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(d.dir, atomicfile.TempPrefix+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("jobfiles: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, &ctxReader{ctx: ctx, r: r}); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("jobfiles: fsync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("jobfiles: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("jobfiles: %w", err)
	}
	return atomicfile.SyncDir(d.dir)
}

// ctxReader fails a read once ctx ends, so that a Put stops early.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// Open implements jobs.UploadSpool. Only a regular file is opened: a
// symbolic link, a FIFO or a device under a spool's name is an error
// (wrapping regularfile.ErrNotRegular).
func (d *Dir) Open(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	path, err := d.path(id, spoolSuffix)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f, st, err := regularfile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, fmt.Errorf("%w: %s", jobs.ErrNoUpload, id)
	}
	if err != nil {
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// Remove implements jobs.UploadSpool: it deletes a file this package wrote
// under the job's own name.
func (d *Dir) Remove(ctx context.Context, id string) error {
	path, err := d.path(id, spoolSuffix)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("jobfiles: %w", err)
	}
	return nil
}
