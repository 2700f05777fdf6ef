// Package axisfile reads an instrument's wavenumber axis from a text file
// (ramanserve -instrument-axis): one number per line, in cm-1, strictly
// increasing and finite, exactly as many lines as a spectrum has points.
// The file is read with a byte bound, so a wrong path (a log, a device)
// cannot make the server allocate without limit at start-up.
package axisfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// maxLineBytes bounds one line: a float64 in its longest decimal form
// (about 24 characters) with generous room for spaces and a CR.
const maxLineBytes = 64

// MaxBytes is the largest axis file accepted for n points.
func MaxBytes(n int) int64 { return int64(n) * (maxLineBytes + 1) }

// ErrInvalid marks an axis file that cannot be used; the message names
// the line.
var ErrInvalid = errors.New("invalid instrument axis file")

// Read parses an axis of exactly n points from r, reading at most
// MaxBytes(n) bytes. Blank lines are not allowed (they would shift every
// point after them); surrounding spaces and a final newline are. Errors
// wrap ErrInvalid and name the line (1-based).
func Read(r io.Reader, n int) ([]float64, error) {
	limit := MaxBytes(n)
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: larger than %d bytes (%d lines of at most %d bytes)", ErrInvalid, limit, n, maxLineBytes)
	}
	axis := make([]float64, 0, n)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, maxLineBytes+1), maxLineBytes+1)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if len(sc.Bytes()) > maxLineBytes {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrInvalid, line, maxLineBytes)
		}
		if line > n {
			return nil, fmt.Errorf("%w: line %d: more than %d lines (one wavenumber per intensity column)", ErrInvalid, line, n)
		}
		v, err := strconv.ParseFloat(text, 64)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%w: line %d: %q is not a number", ErrInvalid, line, clip(text))
		case math.IsNaN(v) || math.IsInf(v, 0):
			return nil, fmt.Errorf("%w: line %d: %q is not a finite number", ErrInvalid, line, clip(text))
		case len(axis) > 0 && !(v > axis[len(axis)-1]):
			return nil, fmt.Errorf("%w: line %d: %v is not above line %d's %v (the axis must be strictly increasing)", ErrInvalid, line, v, line-1, axis[len(axis)-1])
		}
		axis = append(axis, v)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrInvalid, line+1, maxLineBytes)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(axis) != n {
		return nil, fmt.Errorf("%w: %d lines, need %d (one wavenumber per intensity column)", ErrInvalid, len(axis), n)
	}
	return axis, nil
}

// clip shortens text for an error message.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// ReadFile reads the axis file at path (see Read); the error names the
// path.
func ReadFile(path string, n int) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	axis, err := Read(f, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return axis, nil
}
