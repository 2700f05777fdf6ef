package jobs

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
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

func TestSpoolRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.dataset")
	ds := smallDataset(300) // more than two storage blocks
	if err := writeSpool(context.Background(), path, ds); err != nil {
		t.Fatal(err)
	}
	budget := membudget.New(1 << 30)
	back, err := readSpool(path, budget)
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
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("files beside the spool: %v", entries)
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
	var buf bytes.Buffer
	path := filepath.Join(t.TempDir(), "j.dataset")
	if err := writeSpool(context.Background(), path, smallDataset(5)); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	buf.Write(good)
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

// TestSpoolWriteStopsWhenCancelled: a shutdown out of grace leaves no
// spool, not a partial one, and no temp file.
func TestSpoolWriteStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := writeSpool(ctx, filepath.Join(dir, "j.dataset"), smallDataset(10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// FuzzSpoolReader: the spool reader never panics, refuses anything it
// cannot read as errBadSpool (or a refused charge), and what it accepts
// is finite, non-negative in the labels, and writes back identically.
func FuzzSpoolReader(f *testing.F) {
	for _, n := range []int{0, 1, 3} {
		path := filepath.Join(f.TempDir(), "seed.dataset")
		if err := writeSpool(context.Background(), path, smallDataset(n)); err != nil {
			f.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		f.Add(b)
	}
	f.Add([]byte(spoolMagic + "\xff\xff\xff\xff\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff"))
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
		path := filepath.Join(t.TempDir(), "again.dataset")
		if err := writeSpool(context.Background(), path, ds); err != nil {
			t.Fatal(err)
		}
		again, _ := os.ReadFile(path)
		if !bytes.Equal(again, data) {
			t.Fatal("accepted spool does not write back identically")
		}
	})
}
