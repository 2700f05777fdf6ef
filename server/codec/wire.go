package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// MessagePack type codes (https://github.com/msgpack/msgpack/blob/master/spec.md).
// They mirror github.com/vmihailenco/msgpack/v5/msgpcode, which declares them
// as variables; constants let the compiler build jump tables for the
// switches below. TestWireCodesMatchMsgpcode keeps the two in step.
const (
	codePosFixIntMax = 0x7f
	codeFixMapLow    = 0x80
	codeFixMapHigh   = 0x8f
	codeFixArrayLow  = 0x90
	codeFixArrayHigh = 0x9f
	codeFixStrLow    = 0xa0
	codeFixStrHigh   = 0xbf
	codeNil          = 0xc0
	codeNeverUsed    = 0xc1
	codeFalse        = 0xc2
	codeTrue         = 0xc3
	codeBin8         = 0xc4
	codeBin16        = 0xc5
	codeBin32        = 0xc6
	codeExt8         = 0xc7
	codeExt16        = 0xc8
	codeExt32        = 0xc9
	codeFloat32      = 0xca
	codeFloat64      = 0xcb
	codeUint8        = 0xcc
	codeUint16       = 0xcd
	codeUint32       = 0xce
	codeUint64       = 0xcf
	codeInt8         = 0xd0
	codeInt16        = 0xd1
	codeInt32        = 0xd2
	codeInt64        = 0xd3
	codeFixExt1      = 0xd4
	codeFixExt2      = 0xd5
	codeFixExt4      = 0xd6
	codeFixExt8      = 0xd7
	codeFixExt16     = 0xd8
	codeStr8         = 0xd9
	codeStr16        = 0xda
	codeStr32        = 0xdb
	codeArray16      = 0xdc
	codeArray32      = 0xdd
	codeMap16        = 0xde
	codeMap32        = 0xdf
	codeNegFixIntMin = 0xe0
)

// MaxSkipDepth bounds the nesting of values the decoder walks over when it
// skips an unknown key. Skipping recurses once per level, so the bound keeps
// the goroutine stack small whatever a peer sends.
const MaxSkipDepth = 32

// Structural decoding failures. They make a message MALFORMED_MESSAGE.
var (
	errTruncated   = errors.New("message is truncated")
	errInvalidCode = errors.New("invalid MessagePack type code 0xc1")
	errTooDeep     = fmt.Errorf("values nested deeper than %d levels", MaxSkipDepth)
)

// wrongTypeError reports a value of another MessagePack type than the one
// expected. It is returned before the reader advances, so the caller can
// still skip the value.
type wrongTypeError struct {
	code byte
}

func (e wrongTypeError) Error() string { return "unexpected " + kindName(e.code) }

// kindName names the MessagePack family of a type code for error messages.
func kindName(c byte) string {
	switch {
	case c <= codePosFixIntMax || c >= codeNegFixIntMin:
		return "integer"
	case c <= codeFixMapHigh:
		return "map"
	case c <= codeFixArrayHigh:
		return "array"
	case c <= codeFixStrHigh:
		return "string"
	}
	switch c {
	case codeNil:
		return "nil"
	case codeFalse, codeTrue:
		return "boolean"
	case codeBin8, codeBin16, codeBin32:
		return "binary"
	case codeExt8, codeExt16, codeExt32, codeFixExt1, codeFixExt2, codeFixExt4, codeFixExt8, codeFixExt16:
		return "extension"
	case codeFloat32, codeFloat64:
		return "float"
	case codeUint8, codeUint16, codeUint32, codeUint64, codeInt8, codeInt16, codeInt32, codeInt64:
		return "integer"
	case codeStr8, codeStr16, codeStr32:
		return "string"
	case codeArray16, codeArray32:
		return "array"
	case codeMap16, codeMap32:
		return "map"
	}
	return "invalid code"
}

// reader walks a MessagePack byte slice without copying or allocating.
// Every read checks the remaining length first; no length read from the
// input is trusted before it is compared with what is left.
type reader struct {
	buf []byte
	pos int
}

func (r *reader) remaining() int { return len(r.buf) - r.pos }

// peek returns the next type code without consuming it.
func (r *reader) peek() (byte, error) {
	if r.pos >= len(r.buf) {
		return 0, errTruncated
	}
	return r.buf[r.pos], nil
}

// uintN reads an n-byte big-endian unsigned integer at r.pos+off without
// consuming it.
func (r *reader) uintN(off, n int) (uint64, error) {
	start := r.pos + off
	if n > len(r.buf)-start {
		return 0, errTruncated
	}
	b := r.buf[start : start+n]
	switch n {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	default:
		return binary.BigEndian.Uint64(b), nil
	}
}

// containerLen decodes an array or map header. perItem is the minimum
// number of bytes each announced element occupies (1 for arrays, 2 for
// maps); a count that cannot fit in the rest of the buffer is reported as
// truncation before anyone allocates for it.
func (r *reader) containerLen(isMap bool) (int, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	var n uint64
	var hdr int
	switch {
	case isMap && c >= codeFixMapLow && c <= codeFixMapHigh:
		n, hdr = uint64(c&0x0f), 1
	case !isMap && c >= codeFixArrayLow && c <= codeFixArrayHigh:
		n, hdr = uint64(c&0x0f), 1
	case (isMap && c == codeMap16) || (!isMap && c == codeArray16):
		n, err = r.uintN(1, 2)
		hdr = 3
	case (isMap && c == codeMap32) || (!isMap && c == codeArray32):
		n, err = r.uintN(1, 4)
		hdr = 5
	default:
		return 0, wrongTypeError{c}
	}
	if err != nil {
		return 0, err
	}
	perItem := uint64(1)
	if isMap {
		perItem = 2
	}
	if n > uint64(r.remaining()-hdr)/perItem {
		return 0, errTruncated
	}
	r.pos += hdr
	return int(n), nil
}

func (r *reader) readMapLen() (int, error)   { return r.containerLen(true) }
func (r *reader) readArrayLen() (int, error) { return r.containerLen(false) }

// readArrayHeader decodes an array header without the truncation check,
// so that the caller can apply its own element limit first and report
// "too many points" rather than truncation for huge announced counts.
func (r *reader) readArrayHeader() (n uint64, hdr int, err error) {
	c, err := r.peek()
	if err != nil {
		return 0, 0, err
	}
	switch {
	case c >= codeFixArrayLow && c <= codeFixArrayHigh:
		return uint64(c & 0x0f), 1, nil
	case c == codeArray16:
		n, err = r.uintN(1, 2)
		return n, 3, err
	case c == codeArray32:
		n, err = r.uintN(1, 4)
		return n, 5, err
	}
	return 0, 0, wrongTypeError{c}
}

// readText returns the bytes of a str or bin value (the contract accepts
// both on input). The slice aliases the input buffer.
func (r *reader) readText() ([]byte, error) {
	c, err := r.peek()
	if err != nil {
		return nil, err
	}
	var n uint64
	var hdr int
	switch {
	case c >= codeFixStrLow && c <= codeFixStrHigh:
		n, hdr = uint64(c&0x1f), 1
	case c == codeStr8 || c == codeBin8:
		n, err = r.uintN(1, 1)
		hdr = 2
	case c == codeStr16 || c == codeBin16:
		n, err = r.uintN(1, 2)
		hdr = 3
	case c == codeStr32 || c == codeBin32:
		n, err = r.uintN(1, 4)
		hdr = 5
	default:
		return nil, wrongTypeError{c}
	}
	if err != nil {
		return nil, err
	}
	if n > uint64(r.remaining()-hdr) {
		return nil, errTruncated
	}
	start := r.pos + hdr
	r.pos = start + int(n)
	return r.buf[start:r.pos:r.pos], nil
}

// readInt decodes any MessagePack integer. Unsigned values above
// math.MaxInt64 are reported as out of range (ok=false) but consumed.
func (r *reader) readInt() (v int64, inRange bool, err error) {
	c, err := r.peek()
	if err != nil {
		return 0, false, err
	}
	switch {
	case c <= codePosFixIntMax:
		r.pos++
		return int64(c), true, nil
	case c >= codeNegFixIntMin:
		r.pos++
		return int64(int8(c)), true, nil
	}
	var size int
	switch c {
	case codeUint8, codeInt8:
		size = 1
	case codeUint16, codeInt16:
		size = 2
	case codeUint32, codeInt32:
		size = 4
	case codeUint64, codeInt64:
		size = 8
	default:
		return 0, false, wrongTypeError{c}
	}
	u, err := r.uintN(1, size)
	if err != nil {
		return 0, false, err
	}
	r.pos += 1 + size
	switch c {
	case codeInt8:
		return int64(int8(u)), true, nil
	case codeInt16:
		return int64(int16(u)), true, nil
	case codeInt32:
		return int64(int32(u)), true, nil
	case codeInt64:
		return int64(u), true, nil
	case codeUint64:
		if u > math.MaxInt64 {
			return 0, false, nil
		}
	}
	return int64(u), true, nil
}

// readNumber decodes any MessagePack integer or float as float64. Python
// packs 1 as an int and 1.0 as a float, and a list may mix both.
func (r *reader) readNumber() (float64, error) {
	c, err := r.peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= codePosFixIntMax:
		r.pos++
		return float64(c), nil
	case c >= codeNegFixIntMin:
		r.pos++
		return float64(int8(c)), nil
	}
	var size int
	switch c {
	case codeFloat64, codeUint64, codeInt64:
		size = 8
	case codeFloat32, codeUint32, codeInt32:
		size = 4
	case codeUint16, codeInt16:
		size = 2
	case codeUint8, codeInt8:
		size = 1
	default:
		return 0, wrongTypeError{c}
	}
	u, err := r.uintN(1, size)
	if err != nil {
		return 0, err
	}
	r.pos += 1 + size
	switch c {
	case codeFloat64:
		return math.Float64frombits(u), nil
	case codeFloat32:
		return float64(math.Float32frombits(uint32(u))), nil
	case codeInt8:
		return float64(int8(u)), nil
	case codeInt16:
		return float64(int16(u)), nil
	case codeInt32:
		return float64(int32(u)), nil
	case codeInt64:
		return float64(int64(u)), nil
	}
	return float64(u), nil
}

// readBool decodes a MessagePack boolean.
func (r *reader) readBool() (bool, error) {
	c, err := r.peek()
	if err != nil {
		return false, err
	}
	switch c {
	case codeTrue:
		r.pos++
		return true, nil
	case codeFalse:
		r.pos++
		return false, nil
	}
	return false, wrongTypeError{c}
}

// skipNil consumes a nil and reports whether there was one.
func (r *reader) skipNil() bool {
	if r.pos < len(r.buf) && r.buf[r.pos] == codeNil {
		r.pos++
		return true
	}
	return false
}

// skip consumes one complete value of any type, checking its structure.
func (r *reader) skip() error { return r.skipDepth(0) }

func (r *reader) skipDepth(depth int) error {
	c, err := r.peek()
	if err != nil {
		return err
	}
	// Scalars: compute the total size and advance.
	var size uint64 // bytes after the type code
	switch {
	case c <= codePosFixIntMax || c >= codeNegFixIntMin || c == codeNil || c == codeFalse || c == codeTrue:
		size = 0
	case c >= codeFixStrLow && c <= codeFixStrHigh:
		size = uint64(c & 0x1f)
	case c >= codeFixMapLow && c <= codeFixArrayHigh:
		return r.skipContainer(depth)
	default:
		switch c {
		case codeArray16, codeArray32, codeMap16, codeMap32:
			return r.skipContainer(depth)
		case codeNeverUsed:
			return errInvalidCode
		case codeUint8, codeInt8:
			size = 1
		case codeUint16, codeInt16:
			size = 2
		case codeUint32, codeInt32, codeFloat32:
			size = 4
		case codeUint64, codeInt64, codeFloat64:
			size = 8
		case codeFixExt1:
			size = 1 + 1
		case codeFixExt2:
			size = 1 + 2
		case codeFixExt4:
			size = 1 + 4
		case codeFixExt8:
			size = 1 + 8
		case codeFixExt16:
			size = 1 + 16
		case codeStr8, codeBin8, codeExt8:
			n, err := r.uintN(1, 1)
			if err != nil {
				return err
			}
			size = 1 + n
		case codeStr16, codeBin16, codeExt16:
			n, err := r.uintN(1, 2)
			if err != nil {
				return err
			}
			size = 2 + n
		case codeStr32, codeBin32, codeExt32:
			n, err := r.uintN(1, 4)
			if err != nil {
				return err
			}
			size = 4 + n
		}
		// ext8/16/32 carry a one-byte type after the length.
		if c == codeExt8 || c == codeExt16 || c == codeExt32 {
			size++
		}
	}
	if size >= uint64(r.remaining()) {
		return errTruncated
	}
	r.pos += 1 + int(size)
	return nil
}

func (r *reader) skipContainer(depth int) error {
	if depth >= MaxSkipDepth {
		return errTooDeep
	}
	c := r.buf[r.pos]
	isMap := (c >= codeFixMapLow && c <= codeFixMapHigh) || c == codeMap16 || c == codeMap32
	n, err := r.containerLen(isMap)
	if err != nil {
		return err
	}
	if isMap {
		n *= 2
	}
	for i := 0; i < n; i++ {
		if err := r.skipDepth(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// ---- Encoding: every function appends to dst and returns the extended slice.

func appendMapHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, codeFixMapLow|byte(n))
	case n <= math.MaxUint16:
		return append(dst, codeMap16, byte(n>>8), byte(n))
	}
	return append(dst, codeMap32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func appendArrayHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, codeFixArrayLow|byte(n))
	case n <= math.MaxUint16:
		return append(dst, codeArray16, byte(n>>8), byte(n))
	}
	return append(dst, codeArray32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func appendStrHeader(dst []byte, n int) []byte {
	switch {
	case n <= 31:
		return append(dst, codeFixStrLow|byte(n))
	case n <= math.MaxUint8:
		return append(dst, codeStr8, byte(n))
	case n <= math.MaxUint16:
		return append(dst, codeStr16, byte(n>>8), byte(n))
	}
	return append(dst, codeStr32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// appendString writes s as a msgpack str (never bin), for clients that
// unpack with raw=False.
func appendString(dst []byte, s string) []byte {
	return append(appendStrHeader(dst, len(s)), s...)
}

func appendStringBytes(dst []byte, s []byte) []byte {
	return append(appendStrHeader(dst, len(s)), s...)
}

// appendFloat64 always writes the 9-byte float64 form, even for integral
// values, so that clients never see an int where the contract says number.
func appendFloat64(dst []byte, v float64) []byte {
	u := math.Float64bits(v)
	return append(dst, codeFloat64,
		byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32),
		byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

// appendInt writes v in the smallest MessagePack integer form.
func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= codePosFixIntMax:
		return append(dst, byte(v))
	case v < 0 && v >= -32:
		return append(dst, byte(int8(v)))
	case v >= 0 && v <= math.MaxUint8:
		return append(dst, codeUint8, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		return append(dst, codeUint16, byte(v>>8), byte(v))
	case v >= 0 && v <= math.MaxUint32:
		return append(dst, codeUint32, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	case v >= math.MinInt8 && v < 0:
		return append(dst, codeInt8, byte(v))
	case v >= math.MinInt16 && v < 0:
		return append(dst, codeInt16, byte(v>>8), byte(v))
	case v >= math.MinInt32 && v < 0:
		return append(dst, codeInt32, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	u := uint64(v)
	return append(dst, codeInt64,
		byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32),
		byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, codeTrue)
	}
	return append(dst, codeFalse)
}

func appendNil(dst []byte) []byte { return append(dst, codeNil) }
