package sklearn

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// CheckWriteBack is the fuzz target's check of the pickle writer: a
// stream the machine reads (data, compressed or not) is written again by
// writePickle, and the machine reads that back to the same value. A
// stream the machine refuses has nothing to check (nil); so has a value
// beyond the reader's limits once written out (errWriteLimit).
func CheckWriteBack(data []byte, limit int64) error {
	raw, _, err := decompress(bytes.NewReader(data), limit)
	if err != nil {
		return nil
	}
	v, err := (&machine{buf: raw}).run()
	if err != nil {
		return nil
	}
	if err := walk(v, once()); err != nil {
		return nil
	}
	b, err := writePickle(v)
	if errors.Is(err, errWriteLimit) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	back, err := (&machine{buf: b}).run()
	if err != nil {
		return fmt.Errorf("the written pickle does not read back: %w", err)
	}
	if !(&sameness{seen: map[[2]any]bool{}}).same(v, back) {
		return fmt.Errorf("the written pickle reads back to another value")
	}
	return nil
}

// sameness compares two value graphs; pairs already being compared are
// taken as equal, so cycles and shared values end.
type sameness struct{ seen map[[2]any]bool }

func (s *sameness) same(a, b any) bool {
	ia, ib := identity(a), identity(b)
	if ia != nil && ib != nil {
		k := [2]any{ia, ib}
		if s.seen[k] {
			return true
		}
		s.seen[k] = true
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && sameFloat(x, y)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case tuple:
		y, ok := b.(tuple)
		return ok && s.all(x, y)
	case *list:
		y, ok := b.(*list)
		return ok && s.all(x.items, y.items)
	case *dict:
		y, ok := b.(*dict)
		return ok && s.all(x.keys, y.keys) && s.all(x.values, y.values)
	case *global:
		y, ok := b.(*global)
		return ok && *x == *y
	case *object:
		y, ok := b.(*object)
		return ok && *x.class == *y.class && s.same(x.state, y.state)
	case *dtype:
		y, ok := b.(*dtype)
		return ok && *x == *y
	case *ndarray:
		y, ok := b.(*ndarray)
		if !ok || x.fortran != y.fortran || len(x.shape) != len(y.shape) || (x.dtype == nil) != (y.dtype == nil) ||
			(x.floats == nil) != (y.floats == nil) || (x.strings == nil) != (y.strings == nil) ||
			len(x.floats) != len(y.floats) || len(x.strings) != len(y.strings) {
			return false
		}
		if x.dtype != nil && *x.dtype != *y.dtype {
			return false
		}
		for i := range x.shape {
			if x.shape[i] != y.shape[i] {
				return false
			}
		}
		for i := range x.floats {
			if !sameFloat(x.floats[i], y.floats[i]) {
				return false
			}
		}
		for i := range x.strings {
			if x.strings[i] != y.strings[i] {
				return false
			}
		}
		return true
	}
	return false
}

func (s *sameness) all(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !s.same(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameFloat is equality of the bits, with every NaN alike (a float32
// NaN's payload may change on its way through float64).
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}
