package jobs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"

	"ramanserve/trainer"
	"ramanserve/trainer/membudget"
)

func smallDataset(n int) *trainer.Dataset {
	ds := trainer.NewDataset(3, 2)
	for i := 0; i < n; i++ {
		ds.AppendRow(strings.Repeat("s", 1+i%3)+string(rune('a'+i%26))+string(rune('A'+i/26)),
			[]float64{float64(i), -1.5, 1e-300}, []float64{float64(i) / 2, 0})
	}
	return ds
}

// spoolBytes is ds in the spool format.
func spoolBytes(t testing.TB, ds *trainer.Dataset) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := encodeSpool(context.Background(), &buf, ds); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSpoolRoundTrip(t *testing.T) {
	ds := smallDataset(300) // more than two storage blocks
	b := spoolBytes(t, ds)
	budget := membudget.New(1 << 30)
	back, err := decodeSpool(bytes.NewReader(b), int64(len(b)), budget)
	if err != nil {
		t.Fatal(err)
	}
	if back.Len() != ds.Len() || back.Charged() != budget.Used() || budget.Used() == 0 {
		t.Fatalf("read %d rows charging %d (budget %d)", back.Len(), back.Charged(), budget.Used())
	}
	for i := 0; i < ds.Len(); i++ {
		if back.ScanID(i) != ds.ScanID(i) || !equal(back.Row(i), ds.Row(i)) || !equal(back.Labels(i), ds.Labels(i)) {
			t.Fatalf("row %d differs", i)
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestSpoolRefusesDamage: every single-byte change, and every truncation,
// of a spool is refused as unreadable, never read as other data.
func TestSpoolRefusesDamage(t *testing.T) {
	good := spoolBytes(t, smallDataset(5))
	for i := range good {
		b := append([]byte(nil), good...)
		b[i] ^= 0x01
		if _, err := decodeSpool(bytes.NewReader(b), int64(len(b)), nil); !errors.Is(err, errBadSpool) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	for n := 0; n < len(good); n++ {
		if _, err := decodeSpool(bytes.NewReader(good[:n]), int64(n), nil); !errors.Is(err, errBadSpool) {
			t.Fatalf("truncated to %d bytes: %v", n, err)
		}
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// TestSpoolHeaderCheckedAgainstSize: a header whose row count cannot fill
// the file (one row in a 1 GiB file, a sparse tail that would be read to
// the end) or cannot fit in it is refused after the header, before any row
// is read or anything is allocated for it.
func TestSpoolHeaderCheckedAgainstSize(t *testing.T) {
	good := spoolBytes(t, smallDataset(1))
	for _, tc := range []struct {
		name string
		size int64
	}{{"one row in 1 GiB", 1 << 30}, {"one row in 1 TiB", 1 << 40}} {
		r := &countingReader{r: bytes.NewReader(good)}
		_, err := decodeSpool(r, tc.size, membudget.New(1<<30))
		if !errors.Is(err, errBadSpool) || !strings.Contains(err.Error(), "cannot fill") {
			t.Errorf("%s: %v", tc.name, err)
		}
		if r.n > 64<<10 { // the reader's first buffered read at most
			t.Errorf("%s: read %d bytes before refusing", tc.name, r.n)
		}
	}
	// p = q = 1 and as many rows as a 1 GiB file could hold: the header is
	// plausible, so the rows are read, and the first bad one ends it; no
	// memory is sized from the claim.
	head := []byte(spoolMagic + "\x01\x00\x00\x00\x01\x00\x00\x00")
	head = binary.LittleEndian.AppendUint64(head, (1<<30)/21)
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	before := st.TotalAlloc
	_, err := decodeSpool(bytes.NewReader(head), 1<<30, membudget.New(1<<30))
	runtime.ReadMemStats(&st)
	if !errors.Is(err, errBadSpool) {
		t.Errorf("crafted header: %v", err)
	}
	if grew := st.TotalAlloc - before; grew > 1<<20 {
		t.Errorf("a crafted header made the reader allocate %d KiB", grew>>10)
	}
}

// TestSpoolWriteStopsWhenCancelled: a shutdown out of grace stops
// encoding with ctx's error, which makes the UploadSpool store nothing
// (its contract: jobstoretest).
func TestSpoolWriteStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := encodeSpool(ctx, io.Discard, smallDataset(10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// FuzzSpoolReader: the spool reader never panics, refuses anything it
// cannot read as errBadSpool (or a refused charge), and what it accepts
// is finite, non-negative in the labels, and writes back identically.
func FuzzSpoolReader(f *testing.F) {
	for _, n := range []int{0, 1, 3} {
		f.Add(spoolBytes(f, smallDataset(n)))
	}
	f.Add([]byte(spoolMagic + "\xff\xff\xff\xff\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"))
	// Hostile headers: a row count the size cannot hold, one that cannot
	// fill it, zero rows with trailing bytes, the widest shape.
	crafted := func(p, q uint32, n uint64, tail int) []byte {
		b := []byte(spoolMagic)
		b = binary.LittleEndian.AppendUint32(b, p)
		b = binary.LittleEndian.AppendUint32(b, q)
		b = binary.LittleEndian.AppendUint64(b, n)
		return append(b, make([]byte, tail)...)
	}
	f.Add(crafted(1, 1, 1<<40, 64))
	f.Add(crafted(1, 1, 3, 21*3+32))
	f.Add(crafted(1, 1, 1, 4096))
	f.Add(crafted(1, 1, 0, 33))
	f.Add(crafted(maxSpoolColumns, maxSpoolColumns, 1, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		budget := membudget.New(64 << 20)
		ds, err := decodeSpool(bytes.NewReader(data), int64(len(data)), budget)
		if err != nil {
			var mbe *trainer.MemoryBudgetError
			if !errors.Is(err, errBadSpool) && !errors.As(err, &mbe) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if ds.Charged() != budget.Used() {
			t.Fatalf("charged %d, budget %d", ds.Charged(), budget.Used())
		}
		for i := 0; i < ds.Len(); i++ {
			for _, v := range ds.Row(i) {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatal("non-finite intensity accepted")
				}
			}
			for _, v := range ds.Labels(i) {
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Fatal("bad label accepted")
				}
			}
		}
		if again := spoolBytes(t, ds); !bytes.Equal(again, data) {
			t.Fatal("accepted spool does not write back identically")
		}
	})
}
