package axisfile

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func axisText(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestReadAcceptsANonLinearAxis(t *testing.T) {
	text := axisText(2048, func(i int) string { return fmt.Sprintf(" %.10g\r", 150+3100*math.Pow(float64(i)/2047, 1.1)) })
	axis, err := Read(strings.NewReader(text), 2048)
	if err != nil {
		t.Fatal(err)
	}
	if len(axis) != 2048 || axis[0] != 150 || math.Abs(axis[2047]-3250) > 1e-6 {
		t.Errorf("axis %v .. %v (%d points)", axis[0], axis[len(axis)-1], len(axis))
	}
	// Without the final newline too.
	if _, err := Read(strings.NewReader(strings.TrimSuffix(text, "\n")), 2048); err != nil {
		t.Error(err)
	}
}

func TestReadNamesTheBadLine(t *testing.T) {
	good := func(i int) string { return fmt.Sprint(200 + i) }
	cases := []struct {
		name, text, want string
	}{
		{"not a number", axisText(4, func(i int) string {
			if i == 2 {
				return "abc"
			}
			return good(i)
		}), `line 3: "abc" is not a number`},
		{"not increasing", axisText(4, func(i int) string {
			if i == 3 {
				return "201"
			}
			return good(i)
		}), "line 4: 201 is not above line 3's 202"},
		{"equal", axisText(4, func(i int) string {
			if i == 1 {
				return "200"
			}
			return good(i)
		}), "line 2: 200 is not above"},
		{"NaN", axisText(4, func(i int) string {
			if i == 0 {
				return "NaN"
			}
			return good(i)
		}), "line 1: \"NaN\" is not a finite number"},
		{"Inf", axisText(4, func(i int) string {
			if i == 3 {
				return "+Inf"
			}
			return good(i)
		}), "line 4: \"+Inf\" is not a finite number"},
		{"blank line", "200\n\n201\n202\n", `line 2: "" is not a number`},
		{"too few", axisText(3, good), "3 lines, need 4"},
		{"too many", axisText(5, good), "line 5: more than 4 lines"},
		{"long line", "200\n" + strings.Repeat("1", 70) + "\n", "line 2 is longer than 64 bytes"},
		{"huge", strings.Repeat("9", 10000), "larger than 260 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.text), 4)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
}

func TestReadFileNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "axis.txt")
	if err := os.WriteFile(path, []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, 3); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "2 lines, need 3") {
		t.Errorf("err = %v", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 3); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzRead: whatever the bytes, Read returns either an error or exactly n
// finite, strictly increasing values, and never reads past its bound.
func FuzzRead(f *testing.F) {
	f.Add([]byte("1\n2\n3\n4\n"))
	f.Add([]byte("1\r\n2.5\r\n3e2\r\n1e3"))
	f.Add([]byte("1\n1\n"))
	f.Add([]byte("NaN\n"))
	f.Add([]byte(" 0x1p-2\n1\n2\n3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const n = 4
		r := &countingReader{b: b}
		axis, err := Read(r, n)
		if r.read > MaxBytes(n)+1 {
			t.Fatalf("read %d bytes, bound %d", r.read, MaxBytes(n))
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if len(axis) != n {
			t.Fatalf("%d values", len(axis))
		}
		for i, v := range axis {
			if math.IsNaN(v) || math.IsInf(v, 0) || (i > 0 && !(v > axis[i-1])) {
				t.Fatalf("bad axis %v", axis)
			}
		}
	})
}

type countingReader struct {
	b    []byte
	read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.b)
	r.b = r.b[k:]
	r.read += int64(k)
	return k, nil
}
