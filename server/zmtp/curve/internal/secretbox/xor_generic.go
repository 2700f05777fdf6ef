//go:build !amd64 || purego || !gc

package secretbox

// hasWide: no sixteen-block keystream on this platform; x/crypto's salsa20
// does all of it.
var hasWide = false

func xor16(dst, src *byte, state *[16][16]uint32) {
	panic("secretbox: xor16 without a wide implementation")
}

func polyBlocks(h *[5][8]uint64, msg *byte, groups int, r *[9][8]uint64) {
	panic("secretbox: polyBlocks without a wide implementation")
}
