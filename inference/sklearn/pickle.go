package sklearn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"ramanserve/inference"
)

// This file is a restricted pickle machine. It understands the opcodes
// that joblib and pickle write for scikit-learn models (protocols 2 to 5)
// and builds plain Go values; it executes nothing. A global is resolved
// only if it is on the allowlist, and only the numpy and codecs helpers on
// it may be called (REDUCE), with their arguments checked. Every length is
// checked against the bytes that remain before anything is allocated.

// Limits of the machine.
const (
	maxStackDepth = 1 << 16
	maxMarkDepth  = 1 << 12
	maxMemo       = 1 << 16
	maxNesting    = 8 // embedded pickles (object arrays) inside a pickle
)

// Value kinds built by the machine.
type (
	// global is a resolved, allowlisted class or function.
	global struct{ module, name string }
	// tuple and list are Python sequences.
	tuple []any
	list  struct{ items []any }
	// dict keeps insertion order; keys are strings or other hashables.
	dict struct {
		keys   []any
		values []any
	}
	// object is an instance of an allowlisted class with its state.
	object struct {
		class *global
		state any
	}
	// dtype is numpy.dtype: kind "f8", "f4", "i8" or "O8", byte order.
	dtype struct {
		kind  string
		order byte // '<', '>', '|' or '='
	}
	// ndarray is a numeric or string array.
	ndarray struct {
		shape   []int
		fortran bool
		dtype   *dtype
		floats  []float64 // numeric arrays, converted to float64 in C order
		strings []string  // object arrays of str
	}
)

// Allowlisted globals (module.name). NumPy 2 renamed numpy.core to
// numpy._core.
var allowedGlobals = map[string]bool{
	"joblib.numpy_pickle.NumpyArrayWrapper": true,
	"numpy.ndarray":                         true,
	"numpy.dtype":                           true,
	"numpy.core.multiarray.scalar":          true,
	"numpy.core.multiarray._reconstruct":    true,
	"numpy._core.multiarray.scalar":         true,
	"numpy._core.multiarray._reconstruct":   true,
	"_codecs.encode":                        true,
	classPLS:                                true,
	classPipeline:                           true,
	classStandardScaler:                     true,
	classFunctionTransformer:                true,
}

// Classes that NEWOBJ may instantiate (their state comes by BUILD).
var instantiable = map[string]bool{
	"joblib.numpy_pickle.NumpyArrayWrapper": true,
	classPLS:                                true,
	classPipeline:                           true,
	classStandardScaler:                     true,
	classFunctionTransformer:                true,
}

func (g *global) String() string { return g.module + "." + g.name }

// machine is one run of the pickle machine over buf from pos.
type machine struct {
	buf     []byte
	pos     int
	stack   []any
	marks   []int
	memo    map[int]any
	nesting int
}

var errTruncated = errors.New("truncated pickle")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", inference.ErrModelCorrupted, fmt.Sprintf(format, args...))
}

func unsafeGlobal(name string) error {
	return fmt.Errorf("%w: the file refers to %s, which is not on the allowlist; nothing was executed", inference.ErrUnsafeModel, name)
}

func (m *machine) need(n int) ([]byte, error) {
	if n < 0 || n > len(m.buf)-m.pos {
		return nil, corrupt("%v: need %d bytes at offset %d, %d remain", errTruncated, n, m.pos, len(m.buf)-m.pos)
	}
	b := m.buf[m.pos : m.pos+n]
	m.pos += n
	return b, nil
}

func (m *machine) u8() (int, error) {
	b, err := m.need(1)
	if err != nil {
		return 0, err
	}
	return int(b[0]), nil
}

func (m *machine) u32() (int, error) {
	b, err := m.need(4)
	if err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(b)
	if uint64(v) > uint64(len(m.buf)) {
		return 0, corrupt("length %d exceeds the file", v)
	}
	return int(v), nil
}

func (m *machine) u64() (int, error) {
	b, err := m.need(8)
	if err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(b)
	if v > uint64(len(m.buf)) {
		return 0, corrupt("length %d exceeds the file", v)
	}
	return int(v), nil
}

func (m *machine) push(v any) error {
	if len(m.stack) >= maxStackDepth {
		return corrupt("pickle stack deeper than %d", maxStackDepth)
	}
	m.stack = append(m.stack, v)
	return nil
}

// stackFloor is the index of the first stack item above the last MARK.
// Items below it belong to an enclosing MARK and no opcode may consume
// them: CPython keeps them on a separate stack, and here a MARK index
// beyond the stack would make popMark slice out of range.
func (m *machine) stackFloor() int {
	if len(m.marks) == 0 {
		return 0
	}
	return m.marks[len(m.marks)-1]
}

func (m *machine) pop() (any, error) {
	if len(m.stack) <= m.stackFloor() {
		return nil, corrupt("pickle stack underflow at offset %d", m.pos)
	}
	v := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	return v, nil
}

func (m *machine) top() (any, error) {
	if len(m.stack) <= m.stackFloor() {
		return nil, corrupt("pickle stack empty at offset %d", m.pos)
	}
	return m.stack[len(m.stack)-1], nil
}

// topOf returns the top of the stack as a T: the dict SETITEM(S) adds to
// or the list APPEND(S) appends to; anything else there fails op.
func topOf[T any](m *machine, op string) (T, error) {
	var zero T
	t, err := m.top()
	if err != nil {
		return zero, err
	}
	v, ok := t.(T)
	if !ok {
		return zero, corrupt("%s on %T", op, t)
	}
	return v, nil
}

// popMark pops everything above the last MARK.
func (m *machine) popMark() ([]any, error) {
	if len(m.marks) == 0 {
		return nil, corrupt("no MARK at offset %d", m.pos)
	}
	k := m.marks[len(m.marks)-1]
	if k > len(m.stack) { // cannot happen while every pop respects stackFloor
		return nil, corrupt("MARK below the stack at offset %d", m.pos)
	}
	m.marks = m.marks[:len(m.marks)-1]
	items := append([]any(nil), m.stack[k:]...)
	m.stack = m.stack[:k]
	return items, nil
}

func (m *machine) memoize(idx int, v any) error {
	if _, exists := m.memo[idx]; !exists && len(m.memo) >= maxMemo {
		return corrupt("pickle memo larger than %d", maxMemo)
	}
	m.memo[idx] = v
	return nil
}

// run executes opcodes until STOP and returns the result.
func (m *machine) run() (any, error) {
	if m.memo == nil {
		m.memo = map[int]any{}
	}
	for {
		op, err := m.u8()
		if err != nil {
			return nil, err
		}
		if err := m.step(byte(op)); err != nil {
			if errors.Is(err, errStop) {
				v, err := m.pop()
				if err != nil {
					return nil, err
				}
				return v, nil
			}
			return nil, err
		}
	}
}

var errStop = errors.New("stop")

func (m *machine) step(op byte) error {
	switch op {
	case 0x80: // PROTO
		v, err := m.u8()
		if err != nil {
			return err
		}
		if v < 2 || v > 5 {
			return corrupt("pickle protocol %d is not supported (2 to 5)", v)
		}
	case 0x95: // FRAME: the frame length is informational here.
		if _, err := m.need(8); err != nil {
			return err
		}
	case '.': // STOP
		return errStop
	case '(': // MARK
		if len(m.marks) >= maxMarkDepth {
			return corrupt("pickle marks nested deeper than %d", maxMarkDepth)
		}
		m.marks = append(m.marks, len(m.stack))
	case '}': // EMPTY_DICT
		return m.push(&dict{})
	case ']': // EMPTY_LIST
		return m.push(&list{})
	case ')': // EMPTY_TUPLE
		return m.push(tuple{})
	case 'd': // DICT
		items, err := m.popMark()
		if err != nil {
			return err
		}
		d := &dict{}
		if err := d.setPairs(items); err != nil {
			return err
		}
		return m.push(d)
	case 'l': // LIST
		items, err := m.popMark()
		if err != nil {
			return err
		}
		return m.push(&list{items: items})
	case 't': // TUPLE
		items, err := m.popMark()
		if err != nil {
			return err
		}
		return m.push(tuple(items))
	case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
		n := int(op - 0x84)
		if len(m.stack)-m.stackFloor() < n {
			return corrupt("pickle stack underflow at offset %d", m.pos)
		}
		items := append(tuple(nil), m.stack[len(m.stack)-n:]...)
		m.stack = m.stack[:len(m.stack)-n]
		return m.push(items)
	case 's': // SETITEM
		v, err := m.pop()
		if err != nil {
			return err
		}
		k, err := m.pop()
		if err != nil {
			return err
		}
		d, err := topOf[*dict](m, "SETITEM")
		if err != nil {
			return err
		}
		return d.setPairs([]any{k, v})
	case 'u': // SETITEMS
		items, err := m.popMark()
		if err != nil {
			return err
		}
		d, err := topOf[*dict](m, "SETITEMS")
		if err != nil {
			return err
		}
		return d.setPairs(items)
	case 'a': // APPEND
		v, err := m.pop()
		if err != nil {
			return err
		}
		l, err := topOf[*list](m, "APPEND")
		if err != nil {
			return err
		}
		l.items = append(l.items, v)
	case 'e': // APPENDS
		items, err := m.popMark()
		if err != nil {
			return err
		}
		l, err := topOf[*list](m, "APPENDS")
		if err != nil {
			return err
		}
		l.items = append(l.items, items...)
	case 0x8c, 'X', 0x8d: // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
		var n int
		var err error
		switch op {
		case 0x8c:
			n, err = m.u8()
		case 'X':
			n, err = m.u32()
		default:
			n, err = m.u64()
		}
		if err != nil {
			return err
		}
		b, err := m.need(n)
		if err != nil {
			return err
		}
		return m.push(string(b))
	case 'C', 'B', 0x8e: // SHORT_BINBYTES, BINBYTES, BINBYTES8
		var n int
		var err error
		switch op {
		case 'C':
			n, err = m.u8()
		case 'B':
			n, err = m.u32()
		default:
			n, err = m.u64()
		}
		if err != nil {
			return err
		}
		b, err := m.need(n)
		if err != nil {
			return err
		}
		return m.push(append([]byte(nil), b...))
	case 'K': // BININT1
		v, err := m.u8()
		if err != nil {
			return err
		}
		return m.push(int64(v))
	case 'M': // BININT2
		b, err := m.need(2)
		if err != nil {
			return err
		}
		return m.push(int64(binary.LittleEndian.Uint16(b)))
	case 'J': // BININT
		b, err := m.need(4)
		if err != nil {
			return err
		}
		return m.push(int64(int32(binary.LittleEndian.Uint32(b))))
	case 0x8a: // LONG1
		n, err := m.u8()
		if err != nil {
			return err
		}
		if n > 8 {
			return corrupt("integer of %d bytes is too large", n)
		}
		b, err := m.need(n)
		if err != nil {
			return err
		}
		var v int64
		for i := n - 1; i >= 0; i-- {
			v = v<<8 | int64(b[i])
		}
		if n > 0 && n < 8 && b[n-1]&0x80 != 0 {
			v -= 1 << (8 * n)
		}
		return m.push(v)
	case 'G': // BINFLOAT
		b, err := m.need(8)
		if err != nil {
			return err
		}
		return m.push(math.Float64frombits(binary.BigEndian.Uint64(b)))
	case 'N':
		return m.push(nil)
	case 0x88:
		return m.push(true)
	case 0x89:
		return m.push(false)
	case 0x94: // MEMOIZE
		t, err := m.top()
		if err != nil {
			return err
		}
		return m.memoize(len(m.memo), t)
	case 'q', 'r': // BINPUT, LONG_BINPUT
		var idx int
		var err error
		if op == 'q' {
			idx, err = m.u8()
		} else {
			idx, err = m.u32()
		}
		if err != nil {
			return err
		}
		t, err := m.top()
		if err != nil {
			return err
		}
		return m.memoize(idx, t)
	case 'h', 'j': // BINGET, LONG_BINGET
		var idx int
		var err error
		if op == 'h' {
			idx, err = m.u8()
		} else {
			idx, err = m.u32()
		}
		if err != nil {
			return err
		}
		v, ok := m.memo[idx]
		if !ok {
			return corrupt("memo entry %d is missing", idx)
		}
		return m.push(v)
	case '0': // POP
		if len(m.stack) > m.stackFloor() {
			_, err := m.pop()
			return err
		}
		_, err := m.popMark()
		return err
	case '1': // POP_MARK
		_, err := m.popMark()
		return err
	case '2': // DUP
		t, err := m.top()
		if err != nil {
			return err
		}
		return m.push(t)
	case 'c': // GLOBAL: "module\nname\n"
		mod, err := m.line()
		if err != nil {
			return err
		}
		name, err := m.line()
		if err != nil {
			return err
		}
		return m.pushGlobal(mod, name)
	case 0x93: // STACK_GLOBAL
		n, err := m.pop()
		if err != nil {
			return err
		}
		mod, err := m.pop()
		if err != nil {
			return err
		}
		ms, ok1 := mod.(string)
		ns, ok2 := n.(string)
		if !ok1 || !ok2 {
			return corrupt("STACK_GLOBAL needs two strings")
		}
		return m.pushGlobal(ms, ns)
	case 0x81: // NEWOBJ
		args, err := m.pop()
		if err != nil {
			return err
		}
		cls, err := m.pop()
		if err != nil {
			return err
		}
		g, ok := cls.(*global)
		if !ok {
			return corrupt("NEWOBJ on %T", cls)
		}
		if !instantiable[g.String()] {
			return unsafeGlobal(g.String() + " (instantiation)")
		}
		if a, ok := args.(tuple); !ok || len(a) != 0 {
			return corrupt("NEWOBJ of %s with arguments", g)
		}
		return m.push(&object{class: g})
	case 'R': // REDUCE
		args, err := m.pop()
		if err != nil {
			return err
		}
		fn, err := m.pop()
		if err != nil {
			return err
		}
		g, ok := fn.(*global)
		if !ok {
			return corrupt("REDUCE on %T", fn)
		}
		a, ok := args.(tuple)
		if !ok {
			return corrupt("REDUCE of %s without an argument tuple", g)
		}
		v, err := m.call(g, a)
		if err != nil {
			return err
		}
		return m.push(v)
	case 'b': // BUILD
		state, err := m.pop()
		if err != nil {
			return err
		}
		t, err := m.top()
		if err != nil {
			return err
		}
		return m.build(t, state)
	default:
		return corrupt("pickle opcode 0x%02x at offset %d is not supported", op, m.pos-1)
	}
	return nil
}

// line reads a newline-terminated text line (GLOBAL operands).
func (m *machine) line() (string, error) {
	end := m.pos
	for end < len(m.buf) && m.buf[end] != '\n' && end-m.pos < 256 {
		end++
	}
	if end >= len(m.buf) || m.buf[end] != '\n' {
		return "", corrupt("unterminated GLOBAL operand at offset %d", m.pos)
	}
	s := string(m.buf[m.pos:end])
	m.pos = end + 1
	return s, nil
}

func (m *machine) pushGlobal(module, name string) error {
	full := module + "." + name
	// The preprocessing functions (pipeline.go) may be named, as a
	// FunctionTransformer's func, but never called.
	if _, isStep := stepFunctions[full]; !allowedGlobals[full] && !isStep && full != regionFunction {
		return unsafeGlobal(full)
	}
	return m.push(&global{module: module, name: name})
}

// call runs one of the allowlisted functions, with its arguments checked.
func (m *machine) call(g *global, a tuple) (any, error) {
	switch g.String() {
	case "numpy.dtype": // numpy.dtype(kind, align, copy)
		if len(a) < 1 {
			return nil, corrupt("numpy.dtype without a kind")
		}
		kind, ok := a[0].(string)
		if !ok {
			return nil, corrupt("numpy.dtype kind is %T", a[0])
		}
		switch kind {
		case "f8", "f4", "i8", "O8", "O":
		default:
			return nil, corrupt("array dtype %q is not supported (f8, f4, i8, O)", kind)
		}
		return &dtype{kind: kind, order: '='}, nil
	case "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar": // numpy.core.multiarray.scalar(dtype, bytes)
		if len(a) != 2 {
			return nil, corrupt("numpy scalar with %d arguments", len(a))
		}
		dt, ok1 := a[0].(*dtype)
		raw, ok2 := a[1].([]byte)
		if !ok1 || !ok2 {
			return nil, corrupt("numpy scalar arguments %T, %T", a[0], a[1])
		}
		v, err := decodeNumbers(dt, raw, 1)
		if err != nil {
			return nil, err
		}
		return v[0], nil
	case "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct": // _reconstruct(ndarray, (0,), b'b')
		if len(a) != 3 {
			return nil, corrupt("_reconstruct with %d arguments", len(a))
		}
		if c, ok := a[0].(*global); !ok || c.name != "ndarray" {
			return nil, corrupt("_reconstruct of %v", a[0])
		}
		return &ndarray{}, nil
	case "_codecs.encode": // _codecs.encode(str, 'latin1'): how protocol 2 spells bytes
		if len(a) != 2 {
			return nil, corrupt("_codecs.encode with %d arguments", len(a))
		}
		s, ok1 := a[0].(string)
		enc, ok2 := a[1].(string)
		if !ok1 || !ok2 || (enc != "latin1" && enc != "latin-1") {
			return nil, corrupt("_codecs.encode(%T, %v)", a[0], a[1])
		}
		out := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xff {
				return nil, corrupt("latin1 text with rune %U", r)
			}
			out = append(out, byte(r))
		}
		return out, nil
	}
	return nil, unsafeGlobal(g.String() + " (call)")
}

// build applies BUILD's state to an object, a dtype or an ndarray.
func (m *machine) build(target, state any) error {
	switch t := target.(type) {
	case *object:
		if t.state != nil {
			return corrupt("%s built twice", t.class)
		}
		t.state = state
		if t.class.name == "NumpyArrayWrapper" {
			arr, err := m.readWrappedArray(t)
			if err != nil {
				return err
			}
			// The wrapper stands for its array from now on.
			m.stack[len(m.stack)-1] = arr
			for k, v := range m.memo {
				if v == target {
					m.memo[k] = arr
				}
			}
		}
		return nil
	case *dtype:
		// (version, byteorder, subarray, names, fields, elsize, alignment, flags)
		st, ok := state.(tuple)
		if !ok || len(st) < 2 {
			return corrupt("dtype state %T", state)
		}
		bo, ok := st[1].(string)
		if !ok || len(bo) != 1 {
			return corrupt("dtype byte order %v", st[1])
		}
		t.order = bo[0]
		if t.order == '>' {
			return corrupt("big-endian arrays are not supported")
		}
		return nil
	case *ndarray:
		// (version, shape, dtype, is_fortran, data). A second BUILD
		// replaces the first, as NumPy's __setstate__ does.
		t.floats, t.strings = nil, nil
		st, ok := state.(tuple)
		if !ok || len(st) != 5 {
			return corrupt("ndarray state %T", state)
		}
		shape, err := shapeOf(st[1])
		if err != nil {
			return err
		}
		dt, ok := st[2].(*dtype)
		if !ok {
			return corrupt("ndarray dtype %T", st[2])
		}
		fortran, _ := st[3].(bool)
		t.shape, t.dtype, t.fortran = shape, dt, fortran
		n := count(shape)
		switch data := st[4].(type) {
		case []byte:
			if strings.HasPrefix(dt.kind, "O") {
				return corrupt("object array with raw data")
			}
			t.floats, err = decodeNumbers(dt, data, n)
			if err != nil {
				return err
			}
			if fortran {
				t.floats = fortranToC(t.floats, shape)
			}
		case *list:
			if len(data.items) != n {
				return corrupt("object array of %d items, shape %v", len(data.items), shape)
			}
			for _, it := range data.items {
				s, ok := it.(string)
				if !ok {
					return corrupt("object array item %T (only str is supported)", it)
				}
				t.strings = append(t.strings, s)
			}
		default:
			return corrupt("ndarray data %T", st[4])
		}
		return nil
	}
	return corrupt("BUILD on %T", target)
}

// readWrappedArray reads the data that follows a NumpyArrayWrapper's BUILD
// in a joblib stream.
func (m *machine) readWrappedArray(w *object) (*ndarray, error) {
	st, ok := w.state.(*dict)
	if !ok {
		return nil, corrupt("NumpyArrayWrapper state %T", w.state)
	}
	shape, err := shapeOf(st.get("shape"))
	if err != nil {
		return nil, err
	}
	dt, ok := st.get("dtype").(*dtype)
	if !ok {
		return nil, corrupt("NumpyArrayWrapper dtype %T", st.get("dtype"))
	}
	order, _ := st.get("order").(string)
	arr := &ndarray{shape: shape, dtype: dt, fortran: order == "F"}
	if strings.HasPrefix(dt.kind, "O") {
		// An embedded pickle, run to its STOP.
		if m.nesting >= maxNesting {
			return nil, corrupt("embedded pickles nested deeper than %d", maxNesting)
		}
		sub := &machine{buf: m.buf, pos: m.pos, nesting: m.nesting + 1}
		v, err := sub.run()
		if err != nil {
			return nil, err
		}
		m.pos = sub.pos
		inner, ok := v.(*ndarray)
		if !ok || inner.strings == nil && count(inner.shape) != 0 {
			return nil, corrupt("object array is %T", v)
		}
		return inner, nil
	}
	if _, aligned := st.lookup("numpy_array_alignment_bytes"); aligned {
		pad, err := m.u8()
		if err != nil {
			return nil, err
		}
		b, err := m.need(pad)
		if err != nil {
			return nil, err
		}
		for _, c := range b {
			if c != 0xff {
				return nil, corrupt("array padding byte 0x%02x", c)
			}
		}
	}
	n := count(shape)
	size := itemSize(dt.kind)
	if n < 0 || n > (len(m.buf)-m.pos)/size {
		return nil, corrupt("%v: array of shape %v needs %d bytes, %d remain", errTruncated, shape, n*size, len(m.buf)-m.pos)
	}
	raw, err := m.need(n * size)
	if err != nil {
		return nil, err
	}
	arr.floats, err = decodeNumbers(dt, raw, n)
	if err != nil {
		return nil, err
	}
	if arr.fortran {
		arr.floats = fortranToC(arr.floats, shape)
	}
	return arr, nil
}

func itemSize(kind string) int {
	if kind == "f4" {
		return 4
	}
	return 8
}

// decodeNumbers converts n little-endian items of dt to float64.
func decodeNumbers(dt *dtype, raw []byte, n int) ([]float64, error) {
	size := itemSize(dt.kind)
	if strings.HasPrefix(dt.kind, "O") {
		return nil, corrupt("object dtype where numbers were expected")
	}
	if len(raw) != n*size {
		return nil, corrupt("%d bytes of data for %d items of %s", len(raw), n, dt.kind)
	}
	out := make([]float64, n)
	for i := range out {
		b := raw[i*size:]
		switch dt.kind {
		case "f8":
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		case "f4":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case "i8":
			out[i] = float64(int64(binary.LittleEndian.Uint64(b)))
		}
	}
	return out, nil
}

// shapeOf checks a shape tuple.
func shapeOf(v any) ([]int, error) {
	t, ok := v.(tuple)
	if !ok || len(t) > 2 {
		return nil, corrupt("array shape %v (1 or 2 dimensions expected)", v)
	}
	shape := make([]int, len(t))
	total := int64(1)
	for i, d := range t {
		n, ok := d.(int64)
		if !ok || n < 0 || n > 1<<28 {
			return nil, corrupt("array dimension %v", d)
		}
		shape[i] = int(n)
		total *= n
		if total > 1<<28 {
			return nil, corrupt("array of shape %v is too large", t)
		}
	}
	return shape, nil
}

func count(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// fortranToC reorders a column-major 2-D array to row-major.
func fortranToC(v []float64, shape []int) []float64 {
	if len(shape) != 2 {
		return v
	}
	r, c := shape[0], shape[1]
	out := make([]float64, len(v))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[i*c+j] = v[j*r+i]
		}
	}
	return out
}

func (d *dict) setPairs(items []any) error {
	if len(items)%2 != 0 {
		return corrupt("dict with an odd number of items")
	}
	for i := 0; i < len(items); i += 2 {
		switch items[i].(type) {
		case string, int64, bool, nil, float64:
		default:
			return corrupt("dict key of type %T", items[i])
		}
		d.keys = append(d.keys, items[i])
		d.values = append(d.values, items[i+1])
	}
	return nil
}

func (d *dict) lookup(key string) (any, bool) {
	for i := len(d.keys) - 1; i >= 0; i-- {
		if k, ok := d.keys[i].(string); ok && k == key {
			return d.values[i], true
		}
	}
	return nil, false
}

func (d *dict) get(key string) any {
	v, _ := d.lookup(key)
	return v
}
