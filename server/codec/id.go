package codec

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"
)

// UUID is a 16-byte identifier rendered in the canonical 8-4-4-4-12 hex form.
type UUID [16]byte

// IDGenerator makes message ids cheaply: a per-generator random 64-bit
// prefix followed by a 64-bit counter, shaped as an RFC 9562 version-4
// UUID (version nibble 4, variant bits 10). The prefix keeps ids from
// different processes apart (60 random bits after the version nibble, so a
// collision between two processes has probability about 2^-60); the counter
// (62 bits after the variant bits) keeps ids of one process unique without
// a system call or lock per id. Ids are unique, not unpredictable: nothing
// in the protocol relies on them being secret.
type IDGenerator struct {
	prefix  [8]byte
	counter atomic.Uint64
}

// NewIDGenerator returns a generator with a random prefix from crypto/rand
// (which cannot fail since Go 1.24).
func NewIDGenerator() *IDGenerator {
	var prefix [8]byte
	_, _ = rand.Read(prefix[:])
	return NewIDGeneratorWithPrefix(prefix)
}

// NewIDGeneratorWithPrefix returns a generator with a fixed prefix, for
// deterministic tests.
func NewIDGeneratorWithPrefix(prefix [8]byte) *IDGenerator {
	prefix[6] = 0x40 | prefix[6]&0x0f // version 4
	return &IDGenerator{prefix: prefix}
}

// Next returns a fresh id. It is safe for concurrent use.
func (g *IDGenerator) Next() UUID {
	var u UUID
	copy(u[:8], g.prefix[:])
	binary.BigEndian.PutUint64(u[8:], g.counter.Add(1))
	u[8] = 0x80 | u[8]&0x3f // variant 10
	return u
}

const hexDigits = "0123456789abcdef"

// AppendText appends the 36-character text form of u.
func (u UUID) AppendText(dst []byte) []byte {
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0x0f])
	}
	return dst
}

// String returns the 36-character text form of u.
func (u UUID) String() string {
	var buf [36]byte
	return string(u.AppendText(buf[:0]))
}
