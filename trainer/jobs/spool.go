package jobs

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"math/bits"

	"ramanserve/trainer"
)

// The spool keeps a queued job's data set across a restart: Close saves
// the data set of every job still queued in the UploadSpool, and New reads
// it back and queues the job again. Format (all integers little-endian):
//
//	magic    8 bytes  "RAMANDS1"
//	p, q     uint32 each: intensity and label columns
//	n        uint64: rows
//	n rows:  id length (uint32), id bytes (UTF-8, 1..maxSpoolID),
//	         p intensities then q labels (float64 bits)
//	checksum 32 bytes: SHA-256 of everything before it
//
// The UploadSpool stores it whole or not at all, so a shutdown cut
// mid-write leaves nothing under the job's id. Reading checks the shape and
// row count against the stored size (both the fewest and the most bytes n
// rows can take) before allocating, sizes nothing from the header's
// untrusted counts, charges the memory budget as rows arrive, refuses
// non-finite numbers, negative labels and empty or duplicate ids, and
// verifies the checksum: bytes changed behind the server's back are
// refused, and their job fails INTERRUPTED saying why.

const (
	spoolMagic = "RAMANDS1"
	maxSpoolID = 64 << 10
	// maxSpoolColumns bounds p and q, far above the contract's 2048 and 3,
	// so a bad header cannot claim rows of gigabytes.
	maxSpoolColumns = 1 << 16
)

// errBadSpool marks a spool that cannot be read back.
var errBadSpool = errors.New("saved data set is unreadable")

// saveSpool stores ds under id in the UploadSpool. ctx is checked
// between blocks of rows, so that a shutdown running out of grace stops
// writing (and stores nothing).
func (m *Manager) saveSpool(ctx context.Context, id string, ds *trainer.Dataset) error {
	pr, pw := io.Pipe()
	encoded := make(chan struct{})
	go func() {
		defer close(encoded)
		pw.CloseWithError(encodeSpool(ctx, pw, ds))
	}()
	err := m.uploads.Put(ctx, id, pr)
	// A Put that returned early stops the encoder's next write.
	pr.CloseWithError(errors.New("jobs: the spool stopped reading"))
	<-encoded
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// loadSpool reads the data set saved under id, charged to c. Every failure
// to decode it wraps errBadSpool; a refused charge is a
// *trainer.MemoryBudgetError, and a missing one wraps ErrNoUpload.
func (m *Manager) loadSpool(ctx context.Context, id string, c trainer.Charger) (*trainer.Dataset, error) {
	rc, size, err := m.uploads.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return decodeSpool(rc, size, c)
}

// encodeSpool writes ds in the spool format, checksum included.
func encodeSpool(ctx context.Context, out io.Writer, ds *trainer.Dataset) error {
	sum := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(out, sum), 1<<20)
	if err := encodeSpoolBody(ctx, w, ds); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if _, err := out.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// encodeSpoolBody writes the magic, header and rows (not the checksum).
func encodeSpoolBody(ctx context.Context, w io.Writer, ds *trainer.Dataset) error {
	p, q, n := ds.Features(), ds.NumTargets(), ds.Len()
	head := make([]byte, 0, 24)
	head = append(head, spoolMagic...)
	head = binary.LittleEndian.AppendUint32(head, uint32(p))
	head = binary.LittleEndian.AppendUint32(head, uint32(q))
	head = binary.LittleEndian.AppendUint64(head, uint64(n))
	if _, err := w.Write(head); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	row := make([]byte, 0, 4+maxSpoolID+8*(p+q))
	for i := 0; i < n; i++ {
		if i%128 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		id := ds.ScanID(i)
		if len(id) == 0 || len(id) > maxSpoolID {
			return fmt.Errorf("spool: row %d: scan id of %d bytes", i, len(id))
		}
		row = binary.LittleEndian.AppendUint32(row[:0], uint32(len(id)))
		row = append(row, id...)
		for _, v := range ds.Row(i) {
			row = binary.LittleEndian.AppendUint64(row, math.Float64bits(v))
		}
		for _, v := range ds.Labels(i) {
			row = binary.LittleEndian.AppendUint64(row, math.Float64bits(v))
		}
		if _, err := w.Write(row); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
	}
	return nil
}

// decodeSpool parses size bytes of a spool from r.
func decodeSpool(r io.Reader, size int64, c trainer.Charger) (*trainer.Dataset, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errBadSpool, fmt.Sprintf(format, args...))
	}
	sum := sha256.New()
	in := &hashingReader{r: bufio.NewReaderSize(io.LimitReader(r, size-sha256.Size), 64<<10), h: sum}
	head := make([]byte, 24)
	if size < int64(len(head)+sha256.Size) {
		return nil, bad("%d bytes is too short", size)
	}
	if _, err := io.ReadFull(in, head); err != nil {
		return nil, bad("header: %v", err)
	}
	if string(head[:8]) != spoolMagic {
		return nil, bad("not a data set spool (magic %q)", head[:8])
	}
	p := int(binary.LittleEndian.Uint32(head[8:]))
	q := int(binary.LittleEndian.Uint32(head[12:]))
	n := binary.LittleEndian.Uint64(head[16:])
	if p < 1 || q < 1 || p > maxSpoolColumns || q > maxSpoolColumns {
		return nil, bad("shape %d x %d", p, q)
	}
	// The header's n is untrusted until the checksum at the end: it must
	// agree with the file's size both ways before anything is allocated,
	// and nothing is sized from it. Memory grows with the rows actually
	// read, charged before it is taken.
	rowMin := uint64(4 + 1 + 8*(p+q))
	rowMax := uint64(4 + maxSpoolID + 8*(p+q))
	rows := uint64(size) - uint64(len(head)+sha256.Size)
	if n > rows/rowMin {
		return nil, bad("%d rows cannot fit in %d bytes", n, size)
	}
	if hi, lo := bits.Mul64(n, rowMax); hi == 0 && lo < rows {
		return nil, bad("%d rows cannot fill %d bytes", n, size)
	}
	ds := trainer.NewChargedDataset(p, q, c)
	seen := make(map[string]struct{})
	var lenBuf [4]byte
	nums := make([]byte, 8*(p+q))
	for i := uint64(0); i < n; i++ {
		if _, err := io.ReadFull(in, lenBuf[:]); err != nil {
			return nil, bad("row %d: %v", i, err)
		}
		idLen := binary.LittleEndian.Uint32(lenBuf[:])
		if idLen == 0 || idLen > maxSpoolID {
			return nil, bad("row %d: scan id of %d bytes", i, idLen)
		}
		idBytes := make([]byte, idLen)
		if _, err := io.ReadFull(in, idBytes); err != nil {
			return nil, bad("row %d: %v", i, err)
		}
		id := string(idBytes)
		if _, dup := seen[id]; dup {
			return nil, bad("row %d: duplicate scan id", i)
		}
		if _, err := io.ReadFull(in, nums); err != nil {
			return nil, bad("row %d: %v", i, err)
		}
		// The row's charge covers its index entry too (trainer.ChargePerRow).
		x, y, err := ds.TryAppend(id)
		if err != nil {
			return nil, err
		}
		seen[id] = struct{}{}
		for j := range x {
			x[j] = math.Float64frombits(binary.LittleEndian.Uint64(nums[8*j:]))
			if math.IsNaN(x[j]) || math.IsInf(x[j], 0) {
				return nil, bad("row %d: non-finite intensity", i)
			}
		}
		for k := range y {
			y[k] = math.Float64frombits(binary.LittleEndian.Uint64(nums[8*(p+k):]))
			if !(y[k] >= 0) || math.IsInf(y[k], 0) {
				return nil, bad("row %d: bad label %v", i, y[k])
			}
		}
	}
	if extra, _ := io.Copy(io.Discard, in); extra != 0 {
		return nil, bad("%d bytes after the last row", extra)
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, want); err != nil {
		return nil, bad("checksum: %v", err)
	}
	if got := sum.Sum(nil); string(got) != string(want) {
		return nil, bad("checksum mismatch: the file was changed after it was written")
	}
	return ds, nil
}

type hashingReader struct {
	r io.Reader
	h hash.Hash
}

func (h *hashingReader) Read(b []byte) (int, error) {
	n, err := h.r.Read(b)
	h.h.Write(b[:n])
	return n, err
}
