// Package membudget is a byte budget shared by everything that holds
// training data in memory: uploads being parsed, and the data sets of
// queued and running jobs. It never waits: a charge that does not fit is
// refused at once, so that the caller can answer the client while it is
// still sending instead of blocking a handler on memory that may never
// come free.
package membudget

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Budget is a concurrency-safe byte semaphore. The zero value is not
// usable; use New.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// New returns a budget of limit bytes (limit > 0).
func New(limit int64) *Budget {
	if limit <= 0 {
		panic(fmt.Sprintf("membudget.New: limit %d", limit))
	}
	return &Budget{limit: limit}
}

// Limit is the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// Used is the number of bytes currently charged.
func (b *Budget) Used() int64 { return b.used.Load() }

// TryAcquire charges n bytes if they fit under the limit and reports
// whether it did. A refused charge changes nothing.
func (b *Budget) TryAcquire(n int64) bool {
	if n < 0 {
		panic(fmt.Sprintf("membudget: TryAcquire(%d)", n))
	}
	for {
		used := b.used.Load()
		if n > b.limit-used {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Release returns n bytes charged earlier. Releasing more than is charged
// is a bookkeeping bug and panics rather than silently widening the budget.
func (b *Budget) Release(n int64) {
	if n < 0 {
		panic(fmt.Sprintf("membudget: Release(%d)", n))
	}
	if b.used.Add(-n) < 0 {
		panic("membudget: released more than was acquired")
	}
}

// DefaultLimit is a quarter of the host's physical memory: MemTotal from
// /proc/meminfo, or the kernel's sysinfo total when that file cannot be
// read. It returns an error when neither is available.
func DefaultLimit() (int64, error) {
	total, err := physicalMemory()
	if err != nil {
		return 0, err
	}
	return total / 4, nil
}

func physicalMemory() (int64, error) {
	if n, err := memTotalFromProc("/proc/meminfo"); err == nil {
		return n, nil
	}
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0, fmt.Errorf("physical memory: %w", err)
	}
	return int64(si.Totalram) * int64(si.Unit), nil
}

// memTotalFromProc reads the "MemTotal: N kB" line.
func memTotalFromProc(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("%s: unexpected MemTotal line %q", path, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb <= 0 {
			return 0, fmt.Errorf("%s: bad MemTotal %q", path, fields[0])
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no MemTotal line", path)
}
