package sklearn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"
)

// This file is the inverse of the restricted pickle machine: it writes
// the values the machine builds (tuple, *list, *dict, *object, *global,
// *dtype, *ndarray, strings, bytes and scalars) as a pickle that the
// machine reads back to the same value, and that Python's joblib.load
// reads as the scikit-learn objects they stand for. It writes protocol 3
// (no frames, so an array's raw data may follow its wrapper's BUILD as
// joblib writes it) and names only the globals on the machine's
// allowlist. Numeric arrays are written as joblib writes them (a
// NumpyArrayWrapper followed by the array's bytes), string arrays as
// NumPy pickles them.

// errWriteLimit is a value the machine could not read back within its own
// limits (stack, marks, memo): one nested deeper, or sharing more values,
// than any model file does.
var errWriteLimit = errors.New("value exceeds the pickle reader's limits")

// writerProtocol is the pickle protocol written: 3 has bytes opcodes and
// no frames.
const writerProtocol = 3

// arrayAlignment is joblib's alignment of array data in the file.
const arrayAlignment = 16

// writer writes one pickle into buf.
type writer struct {
	buf []byte
	// refs counts the references to each shareable value (by identity);
	// a value referenced more than once is memoized at its first write.
	refs map[any]int
	memo map[any]int
	// stack and marks mirror the reading machine's, to refuse a value it
	// could not read back.
	stack, marks int
}

// writePickle returns v as a pickle the machine reads back to v.
func writePickle(v any) ([]byte, error) {
	w := &writer{refs: map[any]int{}, memo: map[any]int{}}
	if err := w.count(v); err != nil {
		return nil, err
	}
	w.buf = append(w.buf, 0x80, writerProtocol)
	if err := w.value(v); err != nil {
		return nil, err
	}
	w.buf = append(w.buf, '.')
	return w.buf, nil
}

// identity is the key of a value that may be shared: a pointer for the
// reference kinds, the backing array for tuples, strings and bytes; nil
// for the rest, which are written again where they recur.
func identity(v any) any {
	switch x := v.(type) {
	case *list, *dict, *object, *global, *dtype, *ndarray:
		return x
	case tuple:
		if len(x) > 0 {
			return tupleKey{&x[0], len(x)}
		}
	case string:
		if len(x) > 0 {
			return bytesKey{unsafe.StringData(x), len(x)}
		}
	case []byte:
		if len(x) > 0 {
			return bytesKey{&x[0], len(x)}
		}
	}
	return nil
}

type tupleKey struct {
	first *any
	n     int
}

type bytesKey struct {
	first *byte
	n     int
}

// children lists the values v refers to, in the order they are written.
func children(v any) []any {
	switch x := v.(type) {
	case tuple:
		return x
	case *list:
		return x.items
	case *dict:
		out := make([]any, 0, 2*len(x.keys))
		for i := range x.keys {
			out = append(out, x.keys[i], x.values[i])
		}
		return out
	case *object:
		return []any{x.class, x.state}
	case *ndarray:
		if x.dtype != nil {
			return []any{x.dtype}
		}
	}
	return nil
}

// count visits every value once, counting references: a value on a
// cycle is counted from the path that reached it and from the cycle, so
// it is memoized before the cycle leads back to it.
func (w *writer) count(root any) error {
	return walk(root, func(v any) bool {
		id := identity(v)
		if id == nil {
			return true
		}
		w.refs[id]++
		return w.refs[id] == 1
	})
}

// walk calls visit on every value reachable from root, depth first,
// descending into a value's children when visit returns true. It refuses
// a value the machine never builds, and a joblib array wrapper that was
// given its state but is not its array: the machine replaces a wrapper by
// its array only where the wrapper is the top of its stack, so a wrapper
// also referenced elsewhere leaves a husk that no file means.
func walk(root any, visit func(any) bool) error {
	work := []any{root}
	for len(work) > 0 {
		v := work[len(work)-1]
		work = work[:len(work)-1]
		switch x := v.(type) {
		case *object:
			if x.class.name == "NumpyArrayWrapper" && x.state != nil {
				return corrupt("a joblib array wrapper is referenced apart from its array")
			}
		case nil, bool, int64, float64, string, []byte, tuple, *list, *dict, *global, *dtype, *ndarray:
		default:
			return fmt.Errorf("sklearn: cannot pickle a %T", v)
		}
		if visit(v) {
			work = append(work, children(v)...)
		}
	}
	return nil
}

func (w *writer) op(b ...byte) { w.buf = append(w.buf, b...) }

// push and pop follow the reader's stack; mark and unmark its marks.
func (w *writer) push(n int) error {
	w.stack += n
	// A few more than counted are on the stack while a call's arguments
	// are built.
	if w.stack > maxStackDepth-8 {
		return errWriteLimit
	}
	return nil
}

func (w *writer) mark() error {
	w.op('(')
	w.marks++
	if w.marks > maxMarkDepth {
		return errWriteLimit
	}
	return nil
}

// memoize records the value on top of the stack when it is shared.
func (w *writer) memoize(v any) error {
	id := identity(v)
	if id == nil || w.refs[id] < 2 {
		return nil
	}
	idx := len(w.memo)
	if idx >= maxMemo {
		return errWriteLimit
	}
	w.memo[id] = idx
	if idx < 256 {
		w.op('q', byte(idx))
	} else {
		w.op('r')
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(idx))
	}
	return nil
}

// get writes a reference to a memoized value; false when v is not.
func (w *writer) get(v any) (bool, error) {
	id := identity(v)
	if id == nil {
		return false, nil
	}
	idx, ok := w.memo[id]
	if !ok {
		return false, nil
	}
	if idx < 256 {
		w.op('h', byte(idx))
	} else {
		w.op('j')
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(idx))
	}
	return true, w.push(1)
}

// value writes v, leaving it on the stack.
func (w *writer) value(v any) error {
	if done, err := w.get(v); done || err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		w.op('N')
	case bool:
		if x {
			w.op(0x88)
		} else {
			w.op(0x89)
		}
	case int64:
		w.int(x)
	case float64:
		w.op('G')
		w.buf = binary.BigEndian.AppendUint64(w.buf, math.Float64bits(x))
	case string:
		w.op('X')
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(x)))
		w.buf = append(w.buf, x...)
	case []byte:
		if len(x) < 256 {
			w.op('C', byte(len(x)))
		} else {
			w.op('B')
			w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(x)))
		}
		w.buf = append(w.buf, x...)
	case tuple:
		return w.tuple(x)
	case *list:
		return w.list(x)
	case *dict:
		return w.dict(x)
	case *global:
		w.op('c')
		w.buf = append(w.buf, x.module+"\n"+x.name+"\n"...)
	case *object:
		return w.object(x)
	case *dtype:
		return w.dtype(x)
	case *ndarray:
		return w.ndarray(x)
	}
	if err := w.push(1); err != nil {
		return err
	}
	return w.memoize(v)
}

func (w *writer) int(x int64) {
	switch {
	case x >= 0 && x < 1<<8:
		w.op('K', byte(x))
	case x >= 0 && x < 1<<16:
		w.op('M')
		w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(x))
	case x >= math.MinInt32 && x <= math.MaxInt32:
		w.op('J')
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(int32(x)))
	default: // LONG1, eight bytes of two's complement
		w.op(0x8a, 8)
		w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(x))
	}
}

// tuple writes the items, then the tuple. An item may lead back to the
// tuple through a list or dict, which then wrote the tuple first: the
// items are dropped and the memoized tuple used, as Python's pickler does.
func (w *writer) tuple(t tuple) error {
	if len(t) == 0 {
		w.op(')')
		return w.push(1)
	}
	marked := len(t) > 3
	if marked {
		if err := w.mark(); err != nil {
			return err
		}
	}
	for _, it := range t {
		if err := w.value(it); err != nil {
			return err
		}
	}
	if _, ok := w.memo[identity(t)]; ok {
		if marked {
			w.op('1')
			w.marks--
		} else {
			for range t {
				w.op('0')
			}
		}
		w.stack -= len(t)
		_, err := w.get(t)
		return err
	}
	if marked {
		w.op('t')
		w.marks--
	} else {
		w.op(0x84 + byte(len(t)))
	}
	w.stack -= len(t)
	if err := w.push(1); err != nil {
		return err
	}
	return w.memoize(t)
}

// list writes an empty list, memoizes it, then appends each item: one
// APPEND each, so that nesting costs the reader no mark.
func (w *writer) list(l *list) error {
	w.op(']')
	if err := w.push(1); err != nil {
		return err
	}
	if err := w.memoize(l); err != nil {
		return err
	}
	for _, it := range l.items {
		if err := w.value(it); err != nil {
			return err
		}
		w.op('a')
		w.stack--
	}
	return nil
}

func (w *writer) dict(d *dict) error {
	w.op('}')
	if err := w.push(1); err != nil {
		return err
	}
	if err := w.memoize(d); err != nil {
		return err
	}
	for i := range d.keys {
		if err := w.value(d.keys[i]); err != nil {
			return err
		}
		if err := w.value(d.values[i]); err != nil {
			return err
		}
		w.op('s')
		w.stack -= 2
	}
	return nil
}

// object writes cls.__new__(cls) (NEWOBJ), then its state (BUILD).
func (w *writer) object(o *object) error {
	if err := w.value(o.class); err != nil {
		return err
	}
	w.op(')', 0x81)
	if err := w.memoize(o); err != nil {
		return err
	}
	if o.state == nil {
		return nil
	}
	if err := w.value(o.state); err != nil {
		return err
	}
	w.op('b')
	w.stack--
	return nil
}

// dtype writes numpy.dtype(kind, False, True) and, unless native, its
// byte order (BUILD with NumPy's state tuple).
func (w *writer) dtype(d *dtype) error {
	w.op('c')
	w.buf = append(w.buf, "numpy\ndtype\n"...)
	w.op('X')
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(d.kind)))
	w.buf = append(w.buf, d.kind...)
	w.op(0x89, 0x88, 0x87, 'R')
	if err := w.push(1); err != nil {
		return err
	}
	if err := w.memoize(d); err != nil {
		return err
	}
	if d.order == '=' {
		return nil
	}
	state := tuple{int64(3), string([]byte{d.order}), nil, nil, nil, int64(-1), int64(-1), int64(0)}
	if err := w.value(state); err != nil {
		return err
	}
	w.op('b')
	w.stack--
	return nil
}

var (
	globalNDArray = &global{module: "numpy", name: "ndarray"}
	globalWrapper = &global{module: "joblib.numpy_pickle", name: "NumpyArrayWrapper"}
)

// ndarray writes a numeric array as joblib does: a NumpyArrayWrapper
// whose BUILD is followed by padding to 16 bytes and the data. Any other
// array (strings, or one never given its state) is written as NumPy
// pickles it, _reconstruct then BUILD.
func (w *writer) ndarray(a *ndarray) error {
	if a.floats != nil && a.dtype != nil {
		return w.wrappedArray(a)
	}
	w.op('c')
	w.buf = append(w.buf, "numpy.core.multiarray\n_reconstruct\n"...)
	w.op('c')
	w.buf = append(w.buf, "numpy\nndarray\n"...)
	w.op('K', 0, 0x85, 'C', 1, 'b', 0x87, 'R')
	if err := w.push(1); err != nil {
		return err
	}
	if err := w.memoize(a); err != nil {
		return err
	}
	if a.dtype == nil {
		return nil // never built
	}
	items := make([]any, len(a.strings))
	for i, s := range a.strings {
		items[i] = s
	}
	state := tuple{int64(1), shapeTuple(a.shape), a.dtype, a.fortran, &list{items: items}}
	if err := w.value(state); err != nil {
		return err
	}
	w.op('b')
	w.stack--
	return nil
}

func shapeTuple(shape []int) tuple {
	t := make(tuple, len(shape))
	for i, d := range shape {
		t[i] = int64(d)
	}
	return t
}

func (w *writer) wrappedArray(a *ndarray) error {
	if err := w.value(globalWrapper); err != nil {
		return err
	}
	w.op(')', 0x81)
	order := "C"
	data := a.floats
	if a.fortran {
		order = "F"
		data = cToFortran(data, a.shape)
	}
	state := &dict{
		keys: []any{"subclass", "shape", "order", "dtype", "allow_mmap", "numpy_array_alignment_bytes"},
		values: []any{globalNDArray, shapeTuple(a.shape), order, a.dtype, true,
			int64(arrayAlignment)},
	}
	if err := w.value(state); err != nil {
		return err
	}
	w.op('b')
	w.stack--
	// The reader reads the padding's length, the padding, then the data,
	// which joblib aligns to 16 bytes in the stream.
	pad := (arrayAlignment - (len(w.buf)+1)%arrayAlignment) % arrayAlignment
	w.op(byte(pad))
	for range pad {
		w.op(0xff)
	}
	w.buf = appendNumbers(w.buf, a.dtype.kind, data)
	return w.memoize(a)
}

// appendNumbers encodes values as little-endian items of kind, the
// inverse of decodeNumbers.
func appendNumbers(buf []byte, kind string, values []float64) []byte {
	for _, v := range values {
		switch {
		case kind == "f4":
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(v)))
		case strings.HasPrefix(kind, "i"):
			// The values were read from int64s; 2^63 is MaxInt64 rounded.
			n := int64(math.MaxInt64)
			if v < math.MaxInt64 {
				n = int64(v)
			}
			buf = binary.LittleEndian.AppendUint64(buf, uint64(n))
		default:
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
	}
	return buf
}

// cToFortran reorders a row-major 2-D array to column-major, the inverse
// of fortranToC.
func cToFortran(v []float64, shape []int) []float64 {
	if len(shape) != 2 {
		return v
	}
	r, c := shape[0], shape[1]
	out := make([]float64, len(v))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = v[i*c+j]
		}
	}
	return out
}
