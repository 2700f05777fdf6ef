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
	"os"
	"path/filepath"

	"ramanserve/platform/atomicfile"
	"ramanserve/platform/regularfile"
	"ramanserve/trainer"
)

// The spool keeps a queued job's data set across a restart: Close writes
// jobs/<id>.dataset for every job still queued, and New reads it back and
// queues the job again. Format (all integers little-endian):
//
//	magic    8 bytes  "RAMANDS1"
//	p, q     uint32 each: intensity and label columns
//	n        uint64: rows
//	n rows:  id length (uint32), id bytes (UTF-8, 1..maxSpoolID),
//	         p intensities then q labels (float64 bits)
//	checksum 32 bytes: SHA-256 of everything before it
//
// The file is written under a temporary name, fsynced and renamed, so a
// shutdown cut mid-write leaves no file under the job's name. Reading
// opens a regular file only (no symlink, FIFO or device), checks the
// shape and row count against the file's size (both the fewest and the
// most bytes n rows can take) before allocating, sizes nothing from the
// header's untrusted counts, charges the memory budget as rows arrive,
// refuses non-finite numbers, negative labels and empty or duplicate ids,
// and verifies the checksum: a file edited by hand is refused, and its
// job fails INTERRUPTED saying why.

const (
	spoolMagic  = "RAMANDS1"
	spoolSuffix = ".dataset"
	maxSpoolID  = 64 << 10
	// maxSpoolColumns bounds p and q, far above the contract's 2048 and 3,
	// so a bad header cannot claim rows of gigabytes.
	maxSpoolColumns = 1 << 16
)

// errBadSpool marks a spool that cannot be read back.
var errBadSpool = errors.New("saved data set is unreadable")

func spoolPath(dir, id string) string { return filepath.Join(dir, id+spoolSuffix) }

// writeSpool writes ds to path atomically (temp file, fsync, rename, fsync
// of the directory). ctx is checked between blocks of rows, so that a
// shutdown running out of grace stops writing.
func writeSpool(ctx context.Context, path string, ds *trainer.Dataset) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, atomicfile.TempPrefix+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, sum), 1<<20)
	if err := encodeSpool(ctx, w, ds); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if _, err := tmp.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("spool: fsync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return atomicfile.SyncDir(dir)
}

// encodeSpool writes the magic, header and rows (not the checksum).
func encodeSpool(ctx context.Context, w io.Writer, ds *trainer.Dataset) error {
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

// readSpool reads a spool file into a data set charged to c. Every
// failure to read it back wraps errBadSpool, except a refused charge
// (a *trainer.MemoryBudgetError) and os errors of opening it.
func readSpool(path string, c trainer.Charger) (*trainer.Dataset, error) {
	f, st, err := regularfile.Open(path)
	if errors.Is(err, regularfile.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", errBadSpool, err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeSpool(f, st.Size(), c)
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
