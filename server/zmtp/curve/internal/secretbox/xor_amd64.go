//go:build amd64 && !purego && gc

package secretbox

import "golang.org/x/sys/cpu"

// hasWide is whether xor16 runs here: AVX-512 (F), with the operating
// system saving its registers. A variable so tests can take either path.
var hasWide = cpu.X86.HasAVX512F

// xor16AVX512 is in xor_amd64.s.
//
//go:noescape
func xor16AVX512(dst, src *byte, state *[16][16]uint32)

func xor16(dst, src *byte, state *[16][16]uint32) { xor16AVX512(dst, src, state) }

// polyBlocksAVX512 is in xor_amd64.s.
//
//go:noescape
func polyBlocksAVX512(h *[5][8]uint64, msg *byte, groups int, r *[9][8]uint64)

func polyBlocks(h *[5][8]uint64, msg *byte, groups int, r *[9][8]uint64) {
	polyBlocksAVX512(h, msg, groups, r)
}
