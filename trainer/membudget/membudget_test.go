package membudget

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestTryAcquireRefusesOverLimit(t *testing.T) {
	b := New(100)
	if !b.TryAcquire(60) || !b.TryAcquire(40) {
		t.Fatal("charges that fit were refused")
	}
	if b.TryAcquire(1) {
		t.Fatal("a charge over the limit was accepted")
	}
	if b.Used() != 100 {
		t.Fatalf("used %d after a refused charge, want 100", b.Used())
	}
	b.Release(40)
	if !b.TryAcquire(40) {
		t.Fatal("released bytes were not available again")
	}
	if b.TryAcquire(1 << 62) {
		t.Fatal("a huge charge was accepted")
	}
}

func TestReleaseMoreThanAcquiredPanics(t *testing.T) {
	b := New(10)
	b.TryAcquire(5)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	b.Release(6)
}

// TestConcurrentChargesNeverExceedLimit: many goroutines charging and
// releasing never see more than the limit in use, and the books balance.
func TestConcurrentChargesNeverExceedLimit(t *testing.T) {
	const limit = 1000
	b := New(limit)
	var wg sync.WaitGroup
	var over sync.Once
	exceeded := false
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20000; i++ {
				n := int64(1 + (i+g)%97)
				if b.TryAcquire(n) {
					if b.Used() > limit {
						over.Do(func() { exceeded = true })
					}
					b.Release(n)
				}
			}
		}(g)
	}
	wg.Wait()
	if exceeded {
		t.Fatal("used went over the limit")
	}
	if b.Used() != 0 {
		t.Fatalf("used %d after every charge was released", b.Used())
	}
}

func TestMemTotalFromProc(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("MemFree: 10 kB\nMemTotal:       16318480 kB\n"), 0o644)
	n, err := memTotalFromProc(good)
	if err != nil || n != 16318480<<10 {
		t.Fatalf("got %d %v", n, err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("MemTotal: lots\n"), 0o644)
	if _, err := memTotalFromProc(bad); err == nil {
		t.Fatal("a bad MemTotal was accepted")
	}
	if _, err := memTotalFromProc(filepath.Join(dir, "none")); err == nil {
		t.Fatal("a missing file was accepted")
	}
	if lim, err := DefaultLimit(); err != nil || lim <= 0 {
		t.Fatalf("DefaultLimit on this host: %d %v", lim, err)
	}
}
