package wire

import (
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

func TestWireCodesMatchMsgpcode(t *testing.T) {
	pairs := []struct {
		name      string
		ours, ref byte
	}{
		{"PosFixedNumHigh", CodePosFixIntMax, msgpcode.PosFixedNumHigh},
		{"NegFixedNumLow", CodeNegFixIntMin, msgpcode.NegFixedNumLow},
		{"FixedMapLow", CodeFixMapLow, msgpcode.FixedMapLow},
		{"FixedMapHigh", CodeFixMapHigh, msgpcode.FixedMapHigh},
		{"FixedArrayLow", CodeFixArrayLow, msgpcode.FixedArrayLow},
		{"FixedArrayHigh", CodeFixArrayHigh, msgpcode.FixedArrayHigh},
		{"FixedStrLow", CodeFixStrLow, msgpcode.FixedStrLow},
		{"FixedStrHigh", CodeFixStrHigh, msgpcode.FixedStrHigh},
		{"Nil", CodeNil, msgpcode.Nil},
		{"False", CodeFalse, msgpcode.False},
		{"True", CodeTrue, msgpcode.True},
		{"Bin8", CodeBin8, msgpcode.Bin8},
		{"Bin16", CodeBin16, msgpcode.Bin16},
		{"Bin32", CodeBin32, msgpcode.Bin32},
		{"Ext8", CodeExt8, msgpcode.Ext8},
		{"Ext16", CodeExt16, msgpcode.Ext16},
		{"Ext32", CodeExt32, msgpcode.Ext32},
		{"Float", CodeFloat32, msgpcode.Float},
		{"Double", CodeFloat64, msgpcode.Double},
		{"Uint8", CodeUint8, msgpcode.Uint8},
		{"Uint16", CodeUint16, msgpcode.Uint16},
		{"Uint32", CodeUint32, msgpcode.Uint32},
		{"Uint64", CodeUint64, msgpcode.Uint64},
		{"Int8", CodeInt8, msgpcode.Int8},
		{"Int16", CodeInt16, msgpcode.Int16},
		{"Int32", CodeInt32, msgpcode.Int32},
		{"Int64", CodeInt64, msgpcode.Int64},
		{"FixExt1", CodeFixExt1, msgpcode.FixExt1},
		{"FixExt2", CodeFixExt2, msgpcode.FixExt2},
		{"FixExt4", CodeFixExt4, msgpcode.FixExt4},
		{"FixExt8", CodeFixExt8, msgpcode.FixExt8},
		{"FixExt16", CodeFixExt16, msgpcode.FixExt16},
		{"Str8", CodeStr8, msgpcode.Str8},
		{"Str16", CodeStr16, msgpcode.Str16},
		{"Str32", CodeStr32, msgpcode.Str32},
		{"Array16", CodeArray16, msgpcode.Array16},
		{"Array32", CodeArray32, msgpcode.Array32},
		{"Map16", CodeMap16, msgpcode.Map16},
		{"Map32", CodeMap32, msgpcode.Map32},
	}
	for _, p := range pairs {
		if p.ours != p.ref {
			t.Errorf("%s: ours 0x%02x, msgpcode 0x%02x", p.name, p.ours, p.ref)
		}
	}
}

func TestAppendIntAndFloatForms(t *testing.T) {
	for _, v := range []int64{0, 127, 128, -1, -32, -33, 255, 256, -128, -129, 65535, 65536, -32768, -32769,
		math.MaxUint32, math.MaxUint32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxInt64, math.MinInt64} {
		r := Reader{Buf: AppendInt(nil, v)}
		got, ok, err := r.ReadInt()
		if err != nil || !ok || got != v || r.Pos != len(r.Buf) {
			t.Errorf("AppendInt(%d) read back %d ok=%v err=%v", v, got, ok, err)
		}
	}
	for _, v := range []float64{0, 1, -2.5, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		b := AppendFloat64(nil, v)
		if b[0] != CodeFloat64 || len(b) != 9 {
			t.Errorf("AppendFloat64(%v) = % x", v, b)
		}
	}
}
