package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"ramanserve/registry/store"
)

// An artifact's content is the data of its chunks in order of seq; the
// code here writes it as it comes and reads it back into a local copy,
// one chunk in memory at a time.

// chunkWriter stores what is written to it as chunks of artifact id in
// tx, hashing and counting it on the way.
type chunkWriter struct {
	ctx  context.Context
	tx   pgx.Tx
	id   int64
	buf  []byte // the chunk being filled; cap is the chunk size
	seq  int32
	size int64
	hash hash.Hash
	// err is the first failure to store a chunk; it sticks, so a writer
	// that ignores a Write error still cannot make Put commit a gap.
	err error
}

func newChunkWriter(ctx context.Context, tx pgx.Tx, id int64, chunkBytes int) *chunkWriter {
	return &chunkWriter{ctx: ctx, tx: tx, id: id, buf: make([]byte, 0, chunkBytes), hash: sha256.New()}
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.hash.Write(p)
	w.size += int64(len(p))
	for written := 0; written < len(p); {
		k := copy(w.buf[len(w.buf):cap(w.buf)], p[written:])
		w.buf = w.buf[:len(w.buf)+k]
		written += k
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return written, err
			}
		}
	}
	return len(p), nil
}

// flush stores the chunk being filled, if it holds anything.
func (w *chunkWriter) flush() error {
	if w.err != nil || len(w.buf) == 0 {
		return w.err
	}
	_, err := w.tx.Exec(w.ctx, `INSERT INTO registry_artifact_chunks (artifact_id, seq, data) VALUES ($1, $2, $3)`, w.id, w.seq, w.buf)
	if err != nil {
		w.err = dbError(fmt.Sprintf("store chunk %d of the artifact", w.seq), err)
		return w.err
	}
	w.seq++
	w.buf = w.buf[:0]
	return nil
}

// finish stores the last chunk and returns the content's size and hex
// SHA-256.
func (w *chunkWriter) finish() (int64, string, error) {
	if err := w.flush(); err != nil {
		return 0, "", err
	}
	return w.size, hex.EncodeToString(w.hash.Sum(nil)), nil
}

// querier is what copyContent reads through: a transaction, so that the
// chunks read are those of one snapshot.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// errLonger means the content is longer than the most the caller would
// read; copyContent then stops.
var errLonger = errors.New("the content is longer than expected")

// copyContent writes the content of artifact id to dst and returns its
// size and hex SHA-256. It stops with errLonger past most bytes, so that a
// row edited behind the store's back cannot make it copy without end.
func copyContent(ctx context.Context, q querier, id int64, dst io.Writer, most int64) (int64, string, error) {
	rows, err := q.Query(ctx, `SELECT data FROM registry_artifact_chunks WHERE artifact_id = $1 ORDER BY seq`, id)
	if err != nil {
		return 0, "", dbError("read the artifact's content", err)
	}
	defer rows.Close()
	h := sha256.New()
	var size int64
	var chunk []byte
	for rows.Next() {
		if err := rows.Scan(&chunk); err != nil {
			return 0, "", dbError("read the artifact's content", err)
		}
		size += int64(len(chunk))
		if size > most {
			return size, "", errLonger
		}
		h.Write(chunk)
		if _, err := dst.Write(chunk); err != nil {
			return 0, "", fmt.Errorf("%w: copy the artifact's content: %w", store.ErrRegistry, err)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, "", dbError("read the artifact's content", err)
	}
	return size, hex.EncodeToString(h.Sum(nil)), nil
}

// Open copies the artifact name out of one snapshot of the database and
// checks the copy against want and against what Put measured; the
// artifact returned reads that copy and nothing else (see
// store.ArtifactStore).
func (s *ArtifactStore) Open(ctx context.Context, name string, want store.Fingerprint, maxBytes int64) (store.Artifact, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, dbError("begin reading "+name, err)
	}
	defer rollback(ctx, tx)
	var id, recordedSize int64
	var recordedSum string
	err = tx.QueryRow(ctx, `SELECT id, size_bytes, sha256 FROM registry_artifacts WHERE name = $1 AND quarantined_at IS NULL`, name).
		Scan(&id, &recordedSize, &recordedSum)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", store.ErrArtifactNotFound, name)
	}
	if err != nil {
		return nil, dbError("look up the artifact "+name, err)
	}
	if err := checkSize(name, recordedSize, want, maxBytes); err != nil {
		return nil, err // before copying what would be refused anyway
	}
	cp, err := s.newCopy(recordedSize)
	if err != nil {
		return nil, err
	}
	size, sum, err := copyContent(ctx, tx, id, cp, recordedSize)
	if err == nil {
		err = checkContent(name, size, sum, recordedSize, recordedSum, want)
	}
	if err != nil {
		cp.discard()
		if errors.Is(err, errLonger) {
			err = fmt.Errorf("%w: %s is longer than the %d bytes stored", store.ErrArtifactCorrupt, name, recordedSize)
		}
		return nil, err
	}
	return cp.artifact(size, sum), nil
}

// checkSize refuses a size that want does not allow: other than the
// recorded one, or over maxBytes when want records none.
func checkSize(name string, size int64, want store.Fingerprint, maxBytes int64) error {
	sizeRecorded := want.SizeBytes > 0 || want.SHA256 != ""
	switch {
	case sizeRecorded && size != want.SizeBytes:
		return fmt.Errorf("%w: %s is %d bytes, recorded %d", store.ErrArtifactCorrupt, name, size, want.SizeBytes)
	case !sizeRecorded && size > maxBytes:
		return fmt.Errorf("%w: %s is %d bytes, over the %d allowed", store.ErrArtifactCorrupt, name, size, maxBytes)
	}
	return nil
}

// checkContent refuses content that is not what Put stored, or whose
// checksum is not the one want records.
func checkContent(name string, size int64, sum string, storedSize int64, storedSum string, want store.Fingerprint) error {
	switch {
	case size != storedSize || sum != storedSum:
		return fmt.Errorf("%w: %s has %d bytes with sha256 %s, stored as %d bytes with sha256 %s", store.ErrArtifactCorrupt, name, size, sum, storedSize, storedSum)
	case want.SHA256 != "" && sum != want.SHA256:
		return fmt.Errorf("%w: %s has sha256 %s, recorded %s", store.ErrArtifactCorrupt, name, sum, want.SHA256)
	}
	return nil
}

// localCopy is where Open copies an artifact: memory for a small one, a
// cache file for the others.
type localCopy interface {
	io.Writer
	artifact(size int64, sum string) store.Artifact
	discard()
}

// newCopy returns the local copy for an artifact of size bytes.
func (s *ArtifactStore) newCopy(size int64) (localCopy, error) {
	if s.opts.MemoryBytes >= 0 && size <= s.opts.MemoryBytes {
		m := &memoryCopy{}
		m.buf.Grow(int(size))
		return m, nil
	}
	f, err := s.createCacheFile()
	if err != nil {
		return nil, fmt.Errorf("%w: create a cache file in %s: %w", store.ErrRegistry, s.opts.CacheDir, err)
	}
	return fileCopy{f}, nil
}

// createCacheFile creates a file in the cache directory and unlinks it at
// once: the open file keeps its content for the reader until Close, and
// nothing of it outlives the process, a crash, or the directory's
// removal. A directory removed between its creation and the file's is
// created again, once.
func (s *ArtifactStore) createCacheFile() (*os.File, error) {
	var f *os.File
	var err error
	for range 2 {
		if err = os.MkdirAll(s.opts.CacheDir, 0o700); err != nil {
			continue
		}
		if f, err = os.CreateTemp(s.opts.CacheDir, "artifact-*"); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

type memoryCopy struct{ buf bytes.Buffer }

func (m *memoryCopy) Write(p []byte) (int, error) { return m.buf.Write(p) }
func (m *memoryCopy) discard()                    {}
func (m *memoryCopy) artifact(size int64, sum string) store.Artifact {
	return &openedArtifact{ReaderAt: bytes.NewReader(m.buf.Bytes()), size: size, sum: sum, close: func() error { return nil }}
}

type fileCopy struct{ f *os.File }

func (c fileCopy) Write(p []byte) (int, error) { return c.f.Write(p) }
func (c fileCopy) discard()                    { c.f.Close() }
func (c fileCopy) artifact(size int64, sum string) store.Artifact {
	return &openedArtifact{ReaderAt: c.f, size: size, sum: sum, close: c.f.Close}
}

// openedArtifact is store.Artifact over a local copy.
type openedArtifact struct {
	io.ReaderAt
	size  int64
	sum   string
	close func() error
}

func (a *openedArtifact) Size() int64    { return a.size }
func (a *openedArtifact) SHA256() string { return a.sum }
func (a *openedArtifact) Close() error   { return a.close() }
