package channel

import (
	"hash/maphash"
	"sync/atomic"
)

// internSlots is the number of strings an interner keeps: far more than
// the batches and ports one server sees at a time.
const internSlots = 64

// interner turns the byte strings of logged requests (batch ids, ports)
// into strings without allocating when the same value came before: a rig
// sends the same batch id with every spectrum of a batch, for hours. It is
// a fixed table of the latest string per hash slot, lock-free; a miss
// allocates the string and replaces the slot's. Its memory is bounded by
// internSlots strings, each no longer than a request.
type interner struct {
	seed  maphash.Seed
	slots [internSlots]atomic.Pointer[string]
}

// get returns b as a string.
func (t *interner) get(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	slot := &t.slots[maphash.Bytes(t.seed, b)%internSlots]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}
