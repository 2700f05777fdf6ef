// Package wire holds the MessagePack primitives and the envelope vocabulary
// of the prediction channel (api/messages.md), shared by the server's codec
// (server/codec) and the Go client (client), so that neither reaches into
// the other for them.
//
// Reader walks a MessagePack byte slice without copying or allocating and
// never trusts a length read from the input before comparing it with the
// bytes left; the Append functions append one value to a caller-supplied
// buffer. Text is always written as msgpack str (never bin) and AppendFloat64
// always writes the 9-byte float64 form.
package wire

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
	CodePosFixIntMax = 0x7f
	CodeFixMapLow    = 0x80
	CodeFixMapHigh   = 0x8f
	CodeFixArrayLow  = 0x90
	CodeFixArrayHigh = 0x9f
	CodeFixStrLow    = 0xa0
	CodeFixStrHigh   = 0xbf
	CodeNil          = 0xc0
	CodeNeverUsed    = 0xc1
	CodeFalse        = 0xc2
	CodeTrue         = 0xc3
	CodeBin8         = 0xc4
	CodeBin16        = 0xc5
	CodeBin32        = 0xc6
	CodeExt8         = 0xc7
	CodeExt16        = 0xc8
	CodeExt32        = 0xc9
	CodeFloat32      = 0xca
	CodeFloat64      = 0xcb
	CodeUint8        = 0xcc
	CodeUint16       = 0xcd
	CodeUint32       = 0xce
	CodeUint64       = 0xcf
	CodeInt8         = 0xd0
	CodeInt16        = 0xd1
	CodeInt32        = 0xd2
	CodeInt64        = 0xd3
	CodeFixExt1      = 0xd4
	CodeFixExt2      = 0xd5
	CodeFixExt4      = 0xd6
	CodeFixExt8      = 0xd7
	CodeFixExt16     = 0xd8
	CodeStr8         = 0xd9
	CodeStr16        = 0xda
	CodeStr32        = 0xdb
	CodeArray16      = 0xdc
	CodeArray32      = 0xdd
	CodeMap16        = 0xde
	CodeMap32        = 0xdf
	CodeNegFixIntMin = 0xe0
)

// ProtocolVersion is the only envelope version (field v) of the channel.
const ProtocolVersion = 1

// Wire names of the request and reply types.
const (
	TypePing           = "ping"
	TypePredict        = "predict"
	TypeModelInfo      = "model_info"
	TypePong           = "pong"
	TypePredictReply   = "predict_reply"
	TypeModelInfoReply = "model_info_reply"
	// TypeError is the reply type of a request whose own type is unknown
	// or could not be read (see server/codec.ReplyTypeFor).
	TypeError = "error"
)

// MaxSkipDepth bounds the nesting of values the decoder walks over when it
// skips an unknown key. Skipping recurses once per level, so the bound keeps
// the goroutine stack small whatever a peer sends.
const MaxSkipDepth = 32

// Structural decoding failures. They make a message MALFORMED_MESSAGE.
var (
	ErrTruncated   = errors.New("message is truncated")
	ErrInvalidCode = errors.New("invalid MessagePack type code 0xc1")
	ErrTooDeep     = fmt.Errorf("values nested deeper than %d levels", MaxSkipDepth)
)

// WrongTypeError reports a value of another MessagePack type than the one
// expected. It is returned before the reader advances, so the caller can
// still skip the value.
type WrongTypeError struct {
	Code byte
}

func (e WrongTypeError) Error() string { return "unexpected " + KindName(e.Code) }

// KindName names the MessagePack family of a type code for error messages.
func KindName(c byte) string {
	switch {
	case c <= CodePosFixIntMax || c >= CodeNegFixIntMin:
		return "integer"
	case c <= CodeFixMapHigh:
		return "map"
	case c <= CodeFixArrayHigh:
		return "array"
	case c <= CodeFixStrHigh:
		return "string"
	}
	switch c {
	case CodeNil:
		return "nil"
	case CodeFalse, CodeTrue:
		return "boolean"
	case CodeBin8, CodeBin16, CodeBin32:
		return "binary"
	case CodeExt8, CodeExt16, CodeExt32, CodeFixExt1, CodeFixExt2, CodeFixExt4, CodeFixExt8, CodeFixExt16:
		return "extension"
	case CodeFloat32, CodeFloat64:
		return "float"
	case CodeUint8, CodeUint16, CodeUint32, CodeUint64, CodeInt8, CodeInt16, CodeInt32, CodeInt64:
		return "integer"
	case CodeStr8, CodeStr16, CodeStr32:
		return "string"
	case CodeArray16, CodeArray32:
		return "array"
	case CodeMap16, CodeMap32:
		return "map"
	}
	return "invalid code"
}

// reader walks a MessagePack byte slice without copying or allocating.
// Every read checks the remaining length first; no length read from the
// input is trusted before it is compared with what is left.
type Reader struct {
	Buf []byte
	Pos int
}

func (r *Reader) Remaining() int { return len(r.Buf) - r.Pos }

// peek returns the next type code without consuming it.
func (r *Reader) Peek() (byte, error) {
	if r.Pos >= len(r.Buf) {
		return 0, ErrTruncated
	}
	return r.Buf[r.Pos], nil
}

// uintN reads an n-byte big-endian unsigned integer at r.Pos+off without
// consuming it.
func (r *Reader) uintN(off, n int) (uint64, error) {
	start := r.Pos + off
	if n > len(r.Buf)-start {
		return 0, ErrTruncated
	}
	b := r.Buf[start : start+n]
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
func (r *Reader) containerLen(isMap bool) (int, error) {
	c, err := r.Peek()
	if err != nil {
		return 0, err
	}
	var n uint64
	var hdr int
	switch {
	case isMap && c >= CodeFixMapLow && c <= CodeFixMapHigh:
		n, hdr = uint64(c&0x0f), 1
	case !isMap && c >= CodeFixArrayLow && c <= CodeFixArrayHigh:
		n, hdr = uint64(c&0x0f), 1
	case (isMap && c == CodeMap16) || (!isMap && c == CodeArray16):
		n, err = r.uintN(1, 2)
		hdr = 3
	case (isMap && c == CodeMap32) || (!isMap && c == CodeArray32):
		n, err = r.uintN(1, 4)
		hdr = 5
	default:
		return 0, WrongTypeError{c}
	}
	if err != nil {
		return 0, err
	}
	perItem := uint64(1)
	if isMap {
		perItem = 2
	}
	if n > uint64(r.Remaining()-hdr)/perItem {
		return 0, ErrTruncated
	}
	r.Pos += hdr
	return int(n), nil
}

func (r *Reader) ReadMapLen() (int, error)   { return r.containerLen(true) }
func (r *Reader) ReadArrayLen() (int, error) { return r.containerLen(false) }

// readArrayHeader decodes an array header without the truncation check,
// so that the caller can apply its own element limit first and report
// "too many points" rather than truncation for huge announced counts.
func (r *Reader) ReadArrayHeader() (n uint64, hdr int, err error) {
	c, err := r.Peek()
	if err != nil {
		return 0, 0, err
	}
	switch {
	case c >= CodeFixArrayLow && c <= CodeFixArrayHigh:
		return uint64(c & 0x0f), 1, nil
	case c == CodeArray16:
		n, err = r.uintN(1, 2)
		return n, 3, err
	case c == CodeArray32:
		n, err = r.uintN(1, 4)
		return n, 5, err
	}
	return 0, 0, WrongTypeError{c}
}

// readText returns the bytes of a str or bin value (the contract accepts
// both on input). The slice aliases the input buffer.
func (r *Reader) ReadText() ([]byte, error) {
	c, err := r.Peek()
	if err != nil {
		return nil, err
	}
	var n uint64
	var hdr int
	switch {
	case c >= CodeFixStrLow && c <= CodeFixStrHigh:
		n, hdr = uint64(c&0x1f), 1
	case c == CodeStr8 || c == CodeBin8:
		n, err = r.uintN(1, 1)
		hdr = 2
	case c == CodeStr16 || c == CodeBin16:
		n, err = r.uintN(1, 2)
		hdr = 3
	case c == CodeStr32 || c == CodeBin32:
		n, err = r.uintN(1, 4)
		hdr = 5
	default:
		return nil, WrongTypeError{c}
	}
	if err != nil {
		return nil, err
	}
	if n > uint64(r.Remaining()-hdr) {
		return nil, ErrTruncated
	}
	start := r.Pos + hdr
	r.Pos = start + int(n)
	return r.Buf[start:r.Pos:r.Pos], nil
}

// readInt decodes any MessagePack integer. Unsigned values above
// math.MaxInt64 are reported as out of range (ok=false) but consumed.
func (r *Reader) ReadInt() (v int64, inRange bool, err error) {
	c, err := r.Peek()
	if err != nil {
		return 0, false, err
	}
	switch {
	case c <= CodePosFixIntMax:
		r.Pos++
		return int64(c), true, nil
	case c >= CodeNegFixIntMin:
		r.Pos++
		return int64(int8(c)), true, nil
	}
	var size int
	switch c {
	case CodeUint8, CodeInt8:
		size = 1
	case CodeUint16, CodeInt16:
		size = 2
	case CodeUint32, CodeInt32:
		size = 4
	case CodeUint64, CodeInt64:
		size = 8
	default:
		return 0, false, WrongTypeError{c}
	}
	u, err := r.uintN(1, size)
	if err != nil {
		return 0, false, err
	}
	r.Pos += 1 + size
	switch c {
	case CodeInt8:
		return int64(int8(u)), true, nil
	case CodeInt16:
		return int64(int16(u)), true, nil
	case CodeInt32:
		return int64(int32(u)), true, nil
	case CodeInt64:
		return int64(u), true, nil
	case CodeUint64:
		if u > math.MaxInt64 {
			return 0, false, nil
		}
	}
	return int64(u), true, nil
}

// readNumber decodes any MessagePack integer or float as float64. Python
// packs 1 as an int and 1.0 as a float, and a list may mix both.
func (r *Reader) ReadNumber() (float64, error) {
	c, err := r.Peek()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= CodePosFixIntMax:
		r.Pos++
		return float64(c), nil
	case c >= CodeNegFixIntMin:
		r.Pos++
		return float64(int8(c)), nil
	}
	var size int
	switch c {
	case CodeFloat64, CodeUint64, CodeInt64:
		size = 8
	case CodeFloat32, CodeUint32, CodeInt32:
		size = 4
	case CodeUint16, CodeInt16:
		size = 2
	case CodeUint8, CodeInt8:
		size = 1
	default:
		return 0, WrongTypeError{c}
	}
	u, err := r.uintN(1, size)
	if err != nil {
		return 0, err
	}
	r.Pos += 1 + size
	switch c {
	case CodeFloat64:
		return math.Float64frombits(u), nil
	case CodeFloat32:
		return float64(math.Float32frombits(uint32(u))), nil
	case CodeInt8:
		return float64(int8(u)), nil
	case CodeInt16:
		return float64(int16(u)), nil
	case CodeInt32:
		return float64(int32(u)), nil
	case CodeInt64:
		return float64(int64(u)), nil
	}
	return float64(u), nil
}

// readBool decodes a MessagePack boolean.
func (r *Reader) ReadBool() (bool, error) {
	c, err := r.Peek()
	if err != nil {
		return false, err
	}
	switch c {
	case CodeTrue:
		r.Pos++
		return true, nil
	case CodeFalse:
		r.Pos++
		return false, nil
	}
	return false, WrongTypeError{c}
}

// skipNil consumes a nil and reports whether there was one.
func (r *Reader) SkipNil() bool {
	if r.Pos < len(r.Buf) && r.Buf[r.Pos] == CodeNil {
		r.Pos++
		return true
	}
	return false
}

// skip consumes one complete value of any type, checking its structure.
func (r *Reader) Skip() error { return r.SkipDepth(0) }

func (r *Reader) SkipDepth(depth int) error {
	c, err := r.Peek()
	if err != nil {
		return err
	}
	// Scalars: compute the total size and advance.
	var size uint64 // bytes after the type code
	switch {
	case c <= CodePosFixIntMax || c >= CodeNegFixIntMin || c == CodeNil || c == CodeFalse || c == CodeTrue:
		size = 0
	case c >= CodeFixStrLow && c <= CodeFixStrHigh:
		size = uint64(c & 0x1f)
	case c >= CodeFixMapLow && c <= CodeFixArrayHigh:
		return r.skipContainer(depth)
	default:
		switch c {
		case CodeArray16, CodeArray32, CodeMap16, CodeMap32:
			return r.skipContainer(depth)
		case CodeNeverUsed:
			return ErrInvalidCode
		case CodeUint8, CodeInt8:
			size = 1
		case CodeUint16, CodeInt16:
			size = 2
		case CodeUint32, CodeInt32, CodeFloat32:
			size = 4
		case CodeUint64, CodeInt64, CodeFloat64:
			size = 8
		case CodeFixExt1:
			size = 1 + 1
		case CodeFixExt2:
			size = 1 + 2
		case CodeFixExt4:
			size = 1 + 4
		case CodeFixExt8:
			size = 1 + 8
		case CodeFixExt16:
			size = 1 + 16
		case CodeStr8, CodeBin8, CodeExt8:
			n, err := r.uintN(1, 1)
			if err != nil {
				return err
			}
			size = 1 + n
		case CodeStr16, CodeBin16, CodeExt16:
			n, err := r.uintN(1, 2)
			if err != nil {
				return err
			}
			size = 2 + n
		case CodeStr32, CodeBin32, CodeExt32:
			n, err := r.uintN(1, 4)
			if err != nil {
				return err
			}
			size = 4 + n
		}
		// ext8/16/32 carry a one-byte type after the length.
		if c == CodeExt8 || c == CodeExt16 || c == CodeExt32 {
			size++
		}
	}
	if size >= uint64(r.Remaining()) {
		return ErrTruncated
	}
	r.Pos += 1 + int(size)
	return nil
}

func (r *Reader) skipContainer(depth int) error {
	if depth >= MaxSkipDepth {
		return ErrTooDeep
	}
	c := r.Buf[r.Pos]
	isMap := (c >= CodeFixMapLow && c <= CodeFixMapHigh) || c == CodeMap16 || c == CodeMap32
	n, err := r.containerLen(isMap)
	if err != nil {
		return err
	}
	if isMap {
		n *= 2
	}
	for i := 0; i < n; i++ {
		if err := r.SkipDepth(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// ---- Encoding: every function appends to dst and returns the extended slice.

func AppendMapHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, CodeFixMapLow|byte(n))
	case n <= math.MaxUint16:
		return append(dst, CodeMap16, byte(n>>8), byte(n))
	}
	return append(dst, CodeMap32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func AppendArrayHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, CodeFixArrayLow|byte(n))
	case n <= math.MaxUint16:
		return append(dst, CodeArray16, byte(n>>8), byte(n))
	}
	return append(dst, CodeArray32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func AppendStrHeader(dst []byte, n int) []byte {
	switch {
	case n <= 31:
		return append(dst, CodeFixStrLow|byte(n))
	case n <= math.MaxUint8:
		return append(dst, CodeStr8, byte(n))
	case n <= math.MaxUint16:
		return append(dst, CodeStr16, byte(n>>8), byte(n))
	}
	return append(dst, CodeStr32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// appendString writes s as a msgpack str (never bin), for clients that
// unpack with raw=False.
func AppendString(dst []byte, s string) []byte {
	return append(AppendStrHeader(dst, len(s)), s...)
}

func AppendStringBytes(dst []byte, s []byte) []byte {
	return append(AppendStrHeader(dst, len(s)), s...)
}

// appendFloat64 always writes the 9-byte float64 form, even for integral
// values, so that clients never see an int where the contract says number.
func AppendFloat64(dst []byte, v float64) []byte {
	u := math.Float64bits(v)
	return append(dst, CodeFloat64,
		byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32),
		byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

// appendInt writes v in the smallest MessagePack integer form.
func AppendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= CodePosFixIntMax:
		return append(dst, byte(v))
	case v < 0 && v >= -32:
		return append(dst, byte(int8(v)))
	case v >= 0 && v <= math.MaxUint8:
		return append(dst, CodeUint8, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		return append(dst, CodeUint16, byte(v>>8), byte(v))
	case v >= 0 && v <= math.MaxUint32:
		return append(dst, CodeUint32, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	case v >= math.MinInt8 && v < 0:
		return append(dst, CodeInt8, byte(v))
	case v >= math.MinInt16 && v < 0:
		return append(dst, CodeInt16, byte(v>>8), byte(v))
	case v >= math.MinInt32 && v < 0:
		return append(dst, CodeInt32, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	u := uint64(v)
	return append(dst, CodeInt64,
		byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32),
		byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, CodeTrue)
	}
	return append(dst, CodeFalse)
}

func AppendNil(dst []byte) []byte { return append(dst, CodeNil) }

// AppendFloatArray writes v as an array of float64.
func AppendFloatArray(dst []byte, v []float64) []byte {
	dst = AppendArrayHeader(dst, len(v))
	for _, x := range v {
		dst = AppendFloat64(dst, x)
	}
	return dst
}
