package pgjobs

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"ramanserve/trainer/jobs"
)

// chunkSize is the most bytes of a data set in one row, and so the most
// Put and Open hold in memory: large enough that a data set of hundreds
// of MB takes a few hundred round trips, small enough that a server
// spooling several at shutdown stays within its memory.
const chunkSize = 1 << 20

// Put implements jobs.UploadSpool. One transaction locks the job's upload
// row (so that two Puts of one id take turns), drops the chunks stored
// before and writes the new ones as r yields them: a failure of r, of the
// database or of ctx rolls all of it back.
func (s *Store) put(ctx context.Context, id string, r io.Reader) error {
	if err := checkID(id); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgjobs: put %s: %w", id, err)
	}
	defer rollback(ctx, tx)
	if err := resetUpload(ctx, tx, id); err != nil {
		return fmt.Errorf("pgjobs: put %s: %w", id, err)
	}
	size, err := writeChunks(ctx, tx, id, &ctxReader{ctx: ctx, r: r})
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE training_job_uploads SET size = $2 WHERE job_id = $1`, id, size); err != nil {
		return fmt.Errorf("pgjobs: put %s: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgjobs: put %s: commit: %w", id, err)
	}
	return nil
}

// resetUpload makes id's upload row, empty, and deletes its chunks. The
// upsert takes the row's lock first, so that a concurrent Put of the same
// id waits for this one's transaction instead of colliding on a chunk.
func resetUpload(ctx context.Context, tx pgx.Tx, id string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO training_job_uploads (job_id, size) VALUES ($1, 0)
		ON CONFLICT (job_id) DO UPDATE SET size = 0, updated_at = now()`, id); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM training_job_upload_chunks WHERE job_id = $1`, id)
	return err
}

// writeChunks stores what r yields under id, chunkSize bytes a row, and
// returns how many bytes it stored. An error of r is returned as it is
// (the caller's encoder error, or ctx's), so that errors.Is finds it.
func writeChunks(ctx context.Context, tx pgx.Tx, id string, r io.Reader) (int64, error) {
	buf := make([]byte, chunkSize)
	var size int64
	for seq := 0; ; seq++ {
		n, readErr := io.ReadFull(r, buf)
		if n > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO training_job_upload_chunks (job_id, seq, data) VALUES ($1, $2, $3)`,
				id, seq, buf[:n]); err != nil {
				return 0, fmt.Errorf("pgjobs: put %s: chunk %d: %w", id, seq, err)
			}
			size += int64(n)
		}
		switch {
		case readErr == io.EOF || readErr == io.ErrUnexpectedEOF:
			return size, nil
		case readErr != nil:
			return 0, readErr
		}
	}
}

// ctxReader fails a read once ctx ends, so that a Put of a reader that
// never stops on its own still ends with its context.
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

// Open implements jobs.UploadSpool. One query reads the size and the
// chunks, so the bytes are those of one committed Put even while another
// replaces them; its rows are read as the caller reads, a chunk at a
// time. The reader holds one of the pool's connections, and reads under
// ctx, until it is closed.
func (s *Store) open(ctx context.Context, id string) (io.ReadCloser, int64, error) {
	if err := checkID(id); err != nil {
		return nil, 0, err
	}
	// An empty data set has its upload row and no chunk: the left join
	// gives it one row whose data is NULL.
	rows, err := s.pool.Query(ctx, `SELECT u.size, c.data
		FROM training_job_uploads u LEFT JOIN training_job_upload_chunks c ON c.job_id = u.job_id
		WHERE u.job_id = $1
		ORDER BY c.seq`, id)
	if err != nil {
		return nil, 0, fmt.Errorf("pgjobs: open %s: %w", id, err)
	}
	if !rows.Next() {
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, fmt.Errorf("pgjobs: open %s: %w", id, err)
		}
		return nil, 0, fmt.Errorf("%w: %s", jobs.ErrNoUpload, id)
	}
	cr := &chunkReader{id: id, rows: rows}
	if err := rows.Scan(&cr.size, &cr.chunk); err != nil {
		rows.Close()
		return nil, 0, fmt.Errorf("pgjobs: open %s: %w", id, err)
	}
	return cr, cr.size, nil
}

// chunkReader reads the chunks of one data set from the rows of Open's
// query, and checks that they add up to the size stored with them.
type chunkReader struct {
	id    string
	rows  pgx.Rows
	size  int64  // the size stored with the chunks
	read  int64  // bytes returned so far
	chunk []byte // the rest of the current chunk
}

func (c *chunkReader) Read(b []byte) (int, error) {
	for len(c.chunk) == 0 {
		if !c.rows.Next() {
			return 0, c.end()
		}
		if err := c.rows.Scan(nil, &c.chunk); err != nil {
			return 0, fmt.Errorf("pgjobs: read %s: %w", c.id, err)
		}
	}
	n := copy(b, c.chunk)
	c.chunk = c.chunk[n:]
	c.read += int64(n)
	if c.read > c.size {
		return n, fmt.Errorf("pgjobs: read %s: chunks of more than the %d bytes stored", c.id, c.size)
	}
	return n, nil
}

// end is the error at the end of the rows: io.EOF when they held the
// size stored.
func (c *chunkReader) end() error {
	if err := c.rows.Err(); err != nil {
		return fmt.Errorf("pgjobs: read %s: %w", c.id, err)
	}
	if c.read != c.size {
		return fmt.Errorf("pgjobs: read %s: %d bytes of the %d stored: %w", c.id, c.read, c.size, io.ErrUnexpectedEOF)
	}
	return io.EOF
}

// Close releases the query and its connection. Closed before the end,
// the rows left are read and dropped (the protocol has no way to stop a
// query's results short of closing the connection).
func (c *chunkReader) Close() error {
	c.rows.Close()
	if err := c.rows.Err(); err != nil {
		return fmt.Errorf("pgjobs: read %s: %w", c.id, err)
	}
	return nil
}

// Remove implements jobs.UploadSpool: the upload row goes, and its chunks
// with it (ON DELETE CASCADE).
func (s *Store) remove(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM training_job_uploads WHERE job_id = $1`, id); err != nil {
		return fmt.Errorf("pgjobs: remove %s: %w", id, err)
	}
	return nil
}
