package secretbox

import (
	"crypto/subtle"
	"encoding/binary"
	"math/bits"

	"golang.org/x/crypto/poly1305"
)

// Poly1305 of a long message runs eight blocks side by side where hasWide
// (polyBlocks): lane p accumulates every eighth block, multiplied by r^8
// per group, and the last group's lanes by r^8 ... r^1 so that the lanes
// sum to the serial result. The rest (the lanes' sum, the blocks after
// the last whole group, the final reduction) is the serial algorithm on
// five 26-bit limbs, here; short messages, and everything elsewhere, use
// x/crypto.

// polyWideMin: shorter messages go to x/crypto, the powers of r costing
// more than eight lanes save.
const polyWideMin = 1024

// polyGroup is what one lane step of polyBlocks takes: eight blocks.
const polyGroup = 8 * 16

// laneBlock is the block of a group that lane p takes (polyBlocks).
var laneBlock = [8]int{0, 4, 1, 5, 2, 6, 3, 7}

const mask26 = 1<<26 - 1

// limbs is an integer mod 2^130-5 in radix 2^26, limbs below 2^26 but a
// few bits of carry in limb 1 (a partly reduced value).
type limbs [5]uint64

// polySum is poly1305.Sum.
func polySum(out *[16]byte, msg []byte, key *[32]byte) {
	if !hasWide || len(msg) < polyWideMin {
		poly1305.Sum(out, msg, key)
		return
	}
	r := limbs{
		le64(key[0:]) & 0x3ffffff,
		(le64(key[3:]) >> 2) & 0x3ffff03,
		(le64(key[6:]) >> 4) & 0x3ffc0ff,
		(le64(key[9:]) >> 6) & 0x3f03fff,
		(le64(key[12:]) >> 8) & 0x00fffff,
	}
	var powers [9]limbs // powers[i] = r^i
	powers[1] = r
	for i := 2; i <= 8; i++ {
		powers[i] = mul(powers[i-1], r)
	}
	var lanes [5][8]uint64
	var table [9][8]uint64
	groups := len(msg) / polyGroup
	if groups > 1 {
		setPowers(&table, func(int) *limbs { return &powers[8] })
		polyBlocks(&lanes, &msg[0], groups-1, &table)
	}
	setPowers(&table, func(p int) *limbs { return &powers[8-laneBlock[p]] })
	polyBlocks(&lanes, &msg[(groups-1)*polyGroup], 1, &table)
	clear(table[:])
	var h limbs
	for i := range h {
		for p := range 8 {
			h[i] += lanes[i][p]
		}
	}
	h = carry(h)
	rest := msg[groups*polyGroup:]
	for len(rest) >= 16 {
		h = mul(add(h, block(rest[:16], 1<<24)), r)
		rest = rest[16:]
	}
	if len(rest) > 0 {
		var last [16]byte
		copy(last[:], rest)
		last[len(rest)] = 1
		h = mul(add(h, block(last[:], 0)), r)
	}
	finish(out, h, key)
	clear(powers[:])
}

// polyVerify is poly1305.Verify: whether mac is the tag of msg under key,
// compared in constant time.
func polyVerify(mac *[16]byte, msg []byte, key *[32]byte) bool {
	var tag [16]byte
	polySum(&tag, msg, key)
	return subtle.ConstantTimeCompare(tag[:], mac[:]) == 1
}

// setPowers fills polyBlocks' table with, in lane p, the power of r that
// pow(p) gives: its limbs, then 5 x limbs 1-4.
func setPowers(table *[9][8]uint64, pow func(p int) *limbs) {
	for p := range 8 {
		l := pow(p)
		for i := range 5 {
			table[i][p] = l[i]
		}
		for i := 1; i < 5; i++ {
			table[4+i][p] = 5 * l[i]
		}
	}
}

// block is a 16-byte block as limbs, with hibit (2^128 as limb 4's bit
// 24, or 0 for the padded last block) added.
func block(b []byte, hibit uint64) limbs {
	lo, hi := le64(b[0:]), le64(b[8:])
	return limbs{
		lo & mask26,
		(lo >> 26) & mask26,
		(lo>>52 | hi<<12) & mask26,
		(hi >> 14) & mask26,
		hi>>40 | hibit,
	}
}

func add(a, b limbs) limbs {
	return limbs{a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4]}
}

// mul is a x b mod 2^130-5, partly reduced. Limbs of a and b must be
// below 2^27 or so: each product sum stays below 2^64.
func mul(a, b limbs) limbs {
	b1, b2, b3, b4 := 5*b[1], 5*b[2], 5*b[3], 5*b[4]
	return carry(limbs{
		a[0]*b[0] + a[1]*b4 + a[2]*b3 + a[3]*b2 + a[4]*b1,
		a[0]*b[1] + a[1]*b[0] + a[2]*b4 + a[3]*b3 + a[4]*b2,
		a[0]*b[2] + a[1]*b[1] + a[2]*b[0] + a[3]*b4 + a[4]*b3,
		a[0]*b[3] + a[1]*b[2] + a[2]*b[1] + a[3]*b[0] + a[4]*b4,
		a[0]*b[4] + a[1]*b[3] + a[2]*b[2] + a[3]*b[1] + a[4]*b[0],
	})
}

// carry brings every limb below 2^26 but limb 1, which may keep a few
// bits of carry; the carry out of limb 4 comes back times 5.
func carry(d limbs) limbs {
	d[1] += d[0] >> 26
	d[0] &= mask26
	d[2] += d[1] >> 26
	d[1] &= mask26
	d[3] += d[2] >> 26
	d[2] &= mask26
	d[4] += d[3] >> 26
	d[3] &= mask26
	d[0] += 5 * (d[4] >> 26)
	d[4] &= mask26
	d[1] += d[0] >> 26
	d[0] &= mask26
	return d
}

// finish writes the tag: h fully reduced mod 2^130-5, plus the key's
// second half, mod 2^128.
func finish(out *[16]byte, h limbs, key *[32]byte) {
	h = carry(h)
	h[2] += h[1] >> 26 // limb 1's spare bits: now every limb is below 2^26
	h[1] &= mask26
	h[3] += h[2] >> 26
	h[2] &= mask26
	h[4] += h[3] >> 26
	h[3] &= mask26
	h[0] += 5 * (h[4] >> 26)
	h[4] &= mask26
	h[1] += h[0] >> 26
	h[0] &= mask26
	// g = h + 5 - 2^130: h >= 2^130-5 exactly when g does not borrow.
	var g limbs
	g[0] = h[0] + 5
	g[1] = h[1] + g[0]>>26
	g[0] &= mask26
	g[2] = h[2] + g[1]>>26
	g[1] &= mask26
	g[3] = h[3] + g[2]>>26
	g[2] &= mask26
	g[4] = h[4] + g[3]>>26 - 1<<26
	g[3] &= mask26
	keep := g[4]>>63 - 1 // all ones when g[4] did not borrow: take g
	for i := range h {
		h[i] = h[i]&^keep | g[i]&keep
	}
	lo := h[0] | h[1]<<26 | h[2]<<52
	hi := h[2]>>12 | h[3]<<14 | h[4]<<40
	lo, c := bits.Add64(lo, le64(key[16:]), 0)
	hi, _ = bits.Add64(hi, le64(key[24:]), c)
	binary.LittleEndian.PutUint64(out[0:], lo)
	binary.LittleEndian.PutUint64(out[8:], hi)
}

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
