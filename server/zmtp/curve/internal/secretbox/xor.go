package secretbox

import (
	"encoding/binary"

	"golang.org/x/crypto/salsa20/salsa"
)

// wideBytes is what xor16 handles in one call: sixteen 64-byte blocks.
const wideBytes = 16 * 64

// wideTail: a tail of at least this many bytes (after the whole runs of
// sixteen blocks) also goes through xor16, by way of a buffer: sixteen
// blocks side by side cost about what four cost one at a time.
const wideTail = 256

// xorKeyStream is salsa.XORKeyStream (same arguments, same output): it
// XORs in with the Salsa20/20 keystream of key, nonce counter[:8] and
// first block counter[8:] (64-bit little-endian), into out. Where hasWide,
// runs of sixteen blocks go through xor16, which computes them side by side
// in vector registers (a tail of wideTail bytes or more through a buffer);
// short inputs and tails, and everything elsewhere, go through x/crypto.
// out and in overlap entirely or not at all.
func xorKeyStream(out, in []byte, counter *[16]byte, key *[32]byte) {
	if len(in) == 0 {
		return
	}
	out = out[:len(in)]
	wide := len(in) &^ (wideBytes - 1)
	if !hasWide || len(in) < wideTail {
		salsa.XORKeyStream(out, in, counter, key)
		return
	}
	var state [16][16]uint32
	words := [16]uint32{
		0: 0x61707865, 5: 0x3320646e, 10: 0x79622d32, 15: 0x6b206574, // "expand 32-byte k"
		1: le32(key[0:]), 2: le32(key[4:]), 3: le32(key[8:]), 4: le32(key[12:]),
		11: le32(key[16:]), 12: le32(key[20:]), 13: le32(key[24:]), 14: le32(key[28:]),
		6: le32(counter[0:]), 7: le32(counter[4:]),
	}
	for i, w := range words {
		for j := range state[i] {
			state[i][j] = w
		}
	}
	block := binary.LittleEndian.Uint64(counter[8:])
	for off := 0; off < wide; off += wideBytes {
		setBlocks(&state, block)
		xor16(&out[off], &in[off], &state)
		block += 16
	}
	if tail := len(in) - wide; tail >= wideTail {
		setBlocks(&state, block)
		var buf [wideBytes]byte
		copy(buf[:], in[wide:])
		xor16(&buf[0], &buf[0], &state)
		copy(out[wide:], buf[:tail])
		clear(buf[:]) // keystream beyond the tail
	} else if tail > 0 {
		var next [16]byte
		copy(next[:8], counter[:8])
		binary.LittleEndian.PutUint64(next[8:], block)
		salsa.XORKeyStream(out[wide:], in[wide:], &next, key)
	}
	clear(state[:]) // the key's words
}

// setBlocks puts the block counters first, first+1, ... first+15 into
// state's words 8 (low half) and 9 (high half); they wrap at 2^64 like
// x/crypto's.
func setBlocks(state *[16][16]uint32, first uint64) {
	for j := range 16 {
		b := first + uint64(j)
		state[8][j], state[9][j] = uint32(b), uint32(b>>32)
	}
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
