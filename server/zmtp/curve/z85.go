package curve

import (
	"errors"
	"fmt"
)

// z85Alphabet is RFC 32's encoding alphabet: value i is z85Alphabet[i].
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Decode maps a character to its value + 1 (0: not in the alphabet).
var z85Decode = func() (t [256]byte) {
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = byte(i + 1)
	}
	return t
}()

// ErrZ85 reports input that is not Z85 or has the wrong length.
var ErrZ85 = errors.New("curve: invalid Z85")

// EncodeZ85 encodes src, whose length must be a multiple of 4, as RFC 32 Z85.
func EncodeZ85(src []byte) (string, error) {
	if len(src)%4 != 0 {
		return "", fmt.Errorf("%w: %d bytes is not a multiple of 4", ErrZ85, len(src))
	}
	out := make([]byte, 0, len(src)/4*5)
	for i := 0; i < len(src); i += 4 {
		v := uint32(src[i])<<24 | uint32(src[i+1])<<16 | uint32(src[i+2])<<8 | uint32(src[i+3])
		var chunk [5]byte
		for j := 4; j >= 0; j-- {
			chunk[j] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, chunk[:]...)
	}
	return string(out), nil
}

// DecodeZ85 decodes RFC 32 Z85 text, whose length must be a multiple of 5.
// Characters outside the alphabet and 5-character groups worth more than
// 2^32-1 are refused.
func DecodeZ85(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("%w: %d characters is not a multiple of 5", ErrZ85, len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := z85Decode[s[i+j]]
			if d == 0 {
				return nil, fmt.Errorf("%w: character %q at %d", ErrZ85, s[i+j], i+j)
			}
			v = v*85 + uint64(d-1)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("%w: group at %d overflows 32 bits", ErrZ85, i)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}
