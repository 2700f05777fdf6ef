// Package secretbox is NaCl's crypto_secretbox (XSalsa20-Poly1305), the
// box of every CurveZMQ MESSAGE, with the same API and output as
// golang.org/x/crypto/nacl/secretbox. It differs in speed only: on amd64
// with AVX-512 the Salsa20 keystream runs sixteen blocks at a time
// (x/crypto's runs one) and Poly1305 eight blocks at a time (x/crypto's
// runs one), which together are nearly all the cost of a large message.
// HSalsa20 is x/crypto's, and so is all of it for short messages and on
// other machines. Tests and fuzz targets compare every part with
// x/crypto's output.
package secretbox

import (
	"golang.org/x/crypto/poly1305"
	"golang.org/x/crypto/salsa20/salsa"
)

// Overhead is the number of bytes a box adds to its message: the
// Poly1305 tag.
const Overhead = poly1305.TagSize

// Seal appends to out the box of message under nonce and key (the tag,
// then the ciphertext) and returns the extended slice. out's spare
// capacity must not overlap message.
func Seal(out, message []byte, nonce *[24]byte, key *[32]byte) []byte {
	ret, box := grow(out, len(message)+Overhead)
	seal(box, message, nonce, key)
	return ret
}

// SealInPlace turns box, whose first Overhead bytes are free and whose
// rest is the message, into the box of that message under nonce and key:
// Seal without a copy of the message, for a caller that can lay it out
// where its box goes.
func SealInPlace(box []byte, nonce *[24]byte, key *[32]byte) {
	seal(box, box[Overhead:], nonce, key)
}

// seal writes the box of message into box, len(message)+Overhead bytes;
// message is box[Overhead:] or apart from box.
func seal(box, message []byte, nonce *[24]byte, key *[32]byte) {
	subKey, counter, first := setup(nonce, key)
	text := box[Overhead:]
	head := min(len(message), 32)
	for i := range head {
		text[i] = message[i] ^ first[32+i]
	}
	counter[8] = 1
	xorKeyStream(text[head:], message[head:], &counter, &subKey)
	var tag [Overhead]byte
	polySum(&tag, text, (*[32]byte)(first[:32]))
	copy(box, tag[:])
	clear(subKey[:])
	clear(first[:])
}

// Open checks box (the tag, then the ciphertext) under nonce and key and
// appends its message to out; false when it does not authenticate, with
// nothing written. out's spare capacity must not overlap box, except to
// open in place: out = box[Overhead:Overhead].
func Open(out, box []byte, nonce *[24]byte, key *[32]byte) ([]byte, bool) {
	if len(box) < Overhead {
		return nil, false
	}
	subKey, counter, first := setup(nonce, key)
	defer clear(subKey[:])
	defer clear(first[:])
	text := box[Overhead:]
	if !polyVerify((*[Overhead]byte)(box[:Overhead]), text, (*[32]byte)(first[:32])) {
		return nil, false
	}
	ret, message := grow(out, len(text))
	head := min(len(text), 32)
	for i := range head {
		message[i] = text[i] ^ first[32+i]
	}
	counter[8] = 1
	xorKeyStream(message[head:], text[head:], &counter, &subKey)
	return ret, true
}

// setup derives the XSalsa20 subkey of nonce and key, the Salsa20 counter
// of block 0 (nonce[16:] then zeros) and block 0's keystream, whose first
// half is the Poly1305 key and whose second half encrypts the message's
// first 32 bytes.
func setup(nonce *[24]byte, key *[32]byte) (subKey [32]byte, counter [16]byte, first [64]byte) {
	salsa.HSalsa20(&subKey, (*[16]byte)(nonce[:16]), key, &salsa.Sigma)
	copy(counter[:8], nonce[16:])
	salsa.XORKeyStream(first[:], first[:], &counter, &subKey)
	return subKey, counter, first
}

// grow extends out by n bytes, which it leaves as they were (they are all
// written next): it returns the whole slice and the n new bytes.
func grow(out []byte, n int) (whole, tail []byte) {
	if total := len(out) + n; total <= cap(out) {
		whole = out[:total]
	} else {
		whole = make([]byte, total)
		copy(whole, out)
	}
	return whole, whole[len(out):]
}
