// Package csvdata reads the training CSV of the contract while it streams
// in: scan_id, wn_0..wn_2047, EPA_g_per_L, DHA_g_per_L, DPA_g_per_L. It
// parses row by row straight into a trainer.Dataset, so the memory held is
// the numeric matrix (8 bytes per cell) plus one line buffer, and it stops
// at the first bad row with a *trainer.CSVError naming line and column.
package csvdata

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"

	"ramanserve/trainer"
)

// LabelColumns are the contract names of the label columns, in order.
var labelColumns = [...]string{"EPA_g_per_L", "DHA_g_per_L", "DPA_g_per_L"}

// Header returns the contract header for p intensity columns:
// scan_id, wn_0 .. wn_{p-1}, EPA_g_per_L, DHA_g_per_L, DPA_g_per_L.
func Header(p int) []string {
	h := make([]string, 0, p+1+len(labelColumns))
	h = append(h, "scan_id")
	for i := 0; i < p; i++ {
		h = append(h, "wn_"+strconv.Itoa(i))
	}
	return append(h, labelColumns[:]...)
}

// Options bound and shape the read. The zero value means the contract's
// 2048 wavenumbers, no byte or row limit and the minimum row count of
// 10-fold cross-validation.
type Options struct {
	// Features is the number of wn_ columns; 0 means trainer.NumWavenumbers.
	Features int
	// MaxBytes stops the read with trainer.ErrCSVTooLarge once more bytes
	// than this have been consumed; 0 means no limit.
	MaxBytes int64
	// MaxRows stops the read with trainer.ErrCSVTooLarge past this many data
	// rows; 0 means no limit.
	MaxRows int
	// MinRows is the fewest data rows accepted (checked at end of input);
	// 0 means trainer.MinRows(trainer.DefaultFolds).
	MinRows int
	// Charger, when set, is charged for the data set's memory before each
	// storage block is allocated (trainer.NewChargedDataset); a refused
	// charge ends the read at once with a *trainer.MemoryBudgetError, so an
	// upload is refused while it is still arriving. The caller releases
	// Dataset.Charged() bytes (or, on error, what the charger holds) when
	// it drops the data.
	Charger trainer.Charger
}

// maxFieldBytes bounds one cell; a line longer than (columns x this) is
// rejected before it is buffered, so a file without newlines cannot make
// the line buffer grow without limit.
const maxFieldBytes = 256

// readBufferSize is the bufio buffer; most rows (~20-40 KB) fit in it and
// are parsed without copying.
const readBufferSize = 64 << 10

// Read parses a training CSV from r into a new Dataset. It returns an error
// wrapping trainer.ErrInvalidCSV (a *trainer.CSVError with line and column)
// for the first malformed row, trainer.ErrCSVTooLarge past the limits, the
// context's error when ctx ends, or the reader's own error.
//
// Accepted syntax: comma-separated fields, LF or CRLF line ends, an
// optional UTF-8 byte-order mark, spaces or tabs around a field, and
// double-quoted fields (with "" for a quote) that do not span lines. Empty
// lines are allowed only at the end of the input.
func Read(ctx context.Context, r io.Reader, opt Options) (*trainer.Dataset, error) {
	p := opt.Features
	if p == 0 {
		p = trainer.NumWavenumbers
	}
	minRows := opt.MinRows
	if minRows == 0 {
		minRows = trainer.MinRows(trainer.DefaultFolds)
	}
	pr := &parser{
		header: Header(p),
		p:      p,
		q:      len(labelColumns),
		counter: countingReader{
			r:     r,
			limit: opt.MaxBytes,
		},
		maxRows: opt.MaxRows,
		seen:    make(map[string]int),
	}
	pr.in = bufio.NewReaderSize(&pr.counter, readBufferSize)
	pr.maxLine = len(pr.header) * maxFieldBytes
	pr.ds = trainer.NewDataset(p, pr.q)
	if opt.Charger != nil {
		pr.ds = trainer.NewChargedDataset(p, pr.q, opt.Charger)
	}
	if err := pr.run(ctx, minRows); err != nil {
		return nil, err
	}
	return pr.ds, nil
}

type parser struct {
	header  []string
	p, q    int
	in      *bufio.Reader
	counter countingReader
	maxRows int
	maxLine int

	ds     *trainer.Dataset
	seen   map[string]int // scan_id -> line of first occurrence
	line   int            // current 1-based line number
	long   []byte         // assembly buffer for lines longer than the bufio buffer
	fields [][]byte       // reused field slices of the current line
	spans  []span         // reused field positions of the current line
	quoted []byte         // reused buffer for unquoting
}

// span locates one field: in the line, or (quoted) in parser.quoted.
type span struct {
	quoted     bool
	start, end int
}

// countingReader enforces Options.MaxBytes on the raw input.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	if c.limit > 0 && c.n > c.limit {
		return 0, fmt.Errorf("%w: more than %d bytes", trainer.ErrCSVTooLarge, c.limit)
	}
	n, err := c.r.Read(b)
	c.n += int64(n)
	if c.limit > 0 && c.n > c.limit {
		return n, fmt.Errorf("%w: more than %d bytes", trainer.ErrCSVTooLarge, c.limit)
	}
	return n, err
}

func (pr *parser) fail(col int, format string, args ...any) error {
	e := &trainer.CSVError{Line: pr.line, Column: col, Reason: fmt.Sprintf(format, args...)}
	if col >= 1 && col <= len(pr.header) {
		e.ColumnName = pr.header[col-1]
	}
	return e
}

func (pr *parser) run(ctx context.Context, minRows int) error {
	// Header.
	line, err := pr.readLine()
	if err == io.EOF && line == nil {
		pr.line = 1
		return pr.fail(1, "empty input: expected the header %s,%s,...", pr.header[0], pr.header[1])
	}
	if err != nil && err != io.EOF {
		return err
	}
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	if err := pr.checkHeader(line); err != nil {
		return err
	}
	if err == io.EOF {
		return pr.tooFew(minRows)
	}

	blankLine := 0 // line number of a pending empty line, 0 if none
	for {
		if pr.ds.Len()%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line, rerr := pr.readLine()
		if rerr != nil && rerr != io.EOF {
			return rerr
		}
		if line == nil && rerr == io.EOF {
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if blankLine == 0 {
				blankLine = pr.line
			}
			if rerr == io.EOF {
				break
			}
			continue
		}
		if blankLine != 0 {
			pr.line = blankLine
			return pr.fail(1, "empty line inside the data (only allowed at the end)")
		}
		if pr.maxRows > 0 && pr.ds.Len() >= pr.maxRows {
			return fmt.Errorf("%w: more than %d data rows (line %d)", trainer.ErrCSVTooLarge, pr.maxRows, pr.line)
		}
		if err := pr.parseRow(line); err != nil {
			return err
		}
		if rerr == io.EOF {
			break
		}
	}
	return pr.tooFew(minRows)
}

func (pr *parser) tooFew(minRows int) error {
	if n := pr.ds.Len(); n < minRows {
		pr.line++
		return pr.fail(1, "too few rows: %d data rows, cross-validation needs at least %d", n, minRows)
	}
	return nil
}

// readLine returns the next line without its line end, advancing pr.line.
// It returns (nil, io.EOF) at the end of input. The slice is valid until
// the next call.
func (pr *parser) readLine() ([]byte, error) {
	chunk, err := pr.in.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		pr.long = append(pr.long[:0], chunk...)
		for err == bufio.ErrBufferFull {
			if len(pr.long) > pr.maxLine {
				pr.line++
				return nil, pr.fail(overflowColumn(pr.long, pr.maxLine), "line longer than %d bytes (the limit is crossed in this cell)", pr.maxLine)
			}
			chunk, err = pr.in.ReadSlice('\n')
			pr.long = append(pr.long, chunk...)
		}
		chunk = pr.long
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if err == io.EOF && len(chunk) == 0 {
		return nil, io.EOF
	}
	pr.line++
	if len(chunk) > pr.maxLine {
		return nil, pr.fail(overflowColumn(chunk, pr.maxLine), "line longer than %d bytes (the limit is crossed in this cell)", pr.maxLine)
	}
	chunk = bytes.TrimSuffix(chunk, []byte("\n"))
	chunk = bytes.TrimSuffix(chunk, []byte("\r"))
	return chunk, err
}

// overflowColumn is the 1-based column of the cell in which line crosses
// limit bytes: one more than the separators before that point.
func overflowColumn(line []byte, limit int) int {
	return bytes.Count(line[:min(len(line), limit)], []byte{','}) + 1
}

// split cuts line into fields (reusing pr.fields). Quoted fields are
// unquoted into pr.quoted, so the returned slices are valid until the next
// call.
func (pr *parser) split(line []byte) ([][]byte, error) {
	pr.fields = pr.fields[:0]
	pr.quoted = pr.quoted[:0]
	// Unquoted fields are views into line; quoted ones are appended to
	// pr.quoted, whose base may move while growing, so record offsets and
	// resolve them at the end.
	spans := pr.spans[:0]
	defer func() { pr.spans = spans[:0] }()
	i := 0
	for {
		// Skip leading blanks.
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i < len(line) && line[i] == '"' {
			col := len(spans) + 1
			start := len(pr.quoted)
			i++
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					return nil, pr.fail(col, "unterminated quoted field")
				}
				pr.quoted = append(pr.quoted, line[i:i+j]...)
				i += j + 1
				if i < len(line) && line[i] == '"' { // "" is a literal quote
					pr.quoted = append(pr.quoted, '"')
					i++
					continue
				}
				break
			}
			for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
				i++
			}
			if i < len(line) && line[i] != ',' {
				return nil, pr.fail(col, "unexpected character %q after a quoted field", line[i])
			}
			spans = append(spans, span{true, start, len(pr.quoted)})
		} else {
			j := bytes.IndexByte(line[i:], ',')
			end := len(line)
			if j >= 0 {
				end = i + j
			}
			k := end
			for k > i && (line[k-1] == ' ' || line[k-1] == '\t') {
				k--
			}
			spans = append(spans, span{false, i, k})
			i = end
		}
		if i >= len(line) {
			break
		}
		i++ // the comma
		if i == len(line) {
			spans = append(spans, span{false, i, i}) // trailing empty field
			break
		}
	}
	for _, s := range spans {
		if s.quoted {
			pr.fields = append(pr.fields, pr.quoted[s.start:s.end])
		} else {
			pr.fields = append(pr.fields, line[s.start:s.end])
		}
	}
	return pr.fields, nil
}

func (pr *parser) checkHeader(line []byte) error {
	fields, err := pr.split(line)
	if err != nil {
		return err
	}
	for c, want := range pr.header {
		if c >= len(fields) {
			return pr.fail(c+1, "header has %d columns, want %d: missing %q", len(fields), len(pr.header), want)
		}
		if string(fields[c]) != want {
			return pr.fail(c+1, "header column is %q, want %q", clip(fields[c]), want)
		}
	}
	if len(fields) > len(pr.header) {
		return pr.fail(len(pr.header)+1, "header has %d columns, want %d: unexpected %q", len(fields), len(pr.header), clip(fields[len(pr.header)]))
	}
	return nil
}

func (pr *parser) parseRow(line []byte) error {
	fields, err := pr.split(line)
	if err != nil {
		return err
	}
	if len(fields) != len(pr.header) {
		col := len(pr.header) + 1
		if len(fields) < len(pr.header) {
			col = len(fields) + 1
		}
		return pr.fail(col, "row has %d fields, want %d", len(fields), len(pr.header))
	}
	id := fields[0]
	if len(id) == 0 {
		return pr.fail(1, "empty scan_id")
	}
	if first, dup := pr.seen[string(id)]; dup {
		return pr.fail(1, "duplicate scan_id %q (first on line %d)", clip(id), first)
	}
	// A rejected row leaves a partial row behind, but the whole data set is
	// discarded with the error.
	idStr := string(id)
	x, y, err := pr.ds.TryAppend(idStr)
	if err != nil {
		return err
	}
	for j := 0; j < pr.p; j++ {
		v, err := pr.number(fields[1+j], 2+j)
		if err != nil {
			return err
		}
		x[j] = v
	}
	for k := 0; k < pr.q; k++ {
		col := 2 + pr.p + k
		if len(fields[col-1]) == 0 {
			return pr.fail(col, "missing label")
		}
		v, err := pr.number(fields[col-1], col)
		if err != nil {
			return err
		}
		if v < 0 {
			return pr.fail(col, "negative concentration %s", clip(fields[col-1]))
		}
		y[k] = v
	}
	pr.seen[idStr] = pr.line
	return nil
}

// number parses one finite decimal number in column col.
func (pr *parser) number(b []byte, col int) (float64, error) {
	if len(b) == 0 {
		return 0, pr.fail(col, "empty cell, want a number")
	}
	if !isDecimal(b) {
		return 0, pr.fail(col, "%s", notDecimalReason(b))
	}
	// The string view is not retained: strconv copies it into any error it
	// returns, and we discard that error.
	v, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange && math.IsInf(v, 0) {
			return 0, pr.fail(col, "%s overflows to Inf", clip(b))
		}
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return v, nil // underflow to (sub)normal or zero is fine
		}
		return 0, pr.fail(col, "%q is not a number", clip(b))
	}
	return v, nil
}

// isDecimal reports whether b is a decimal number as the contract writes
// it: an optional sign, digits with an optional decimal point (at least
// one digit on either side), and an optional exponent e or E, signed,
// with at least one digit. It is checked before strconv.ParseFloat, which
// also takes what the contract's "finite decimal numbers" exclude: digit
// separators (1_000, 1e1_0), hexadecimal floats (0x1p-2), and inf,
// infinity and nan in any case.
func isDecimal(b []byte) bool {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	intDigits := digits(b[i:])
	i += intDigits
	fracDigits := 0
	if i < len(b) && b[i] == '.' {
		i++
		fracDigits = digits(b[i:])
		i += fracDigits
	}
	if intDigits == 0 && fracDigits == 0 {
		return false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		exp := digits(b[i:])
		if exp == 0 {
			return false
		}
		i += exp
	}
	return i == len(b)
}

// notDecimalReason says why a cell that is not a decimal number was
// refused, naming the strconv extras a client may have meant.
func notDecimalReason(b []byte) string {
	body := bytes.TrimLeft(b, "+-")
	lower := bytes.ToLower(body)
	switch {
	case bytes.Equal(lower, []byte("nan")) || bytes.Equal(lower, []byte("inf")) || bytes.Equal(lower, []byte("infinity")):
		return fmt.Sprintf("%s is not allowed (NaN or Inf): want a finite decimal number", clip(b))
	case bytes.HasPrefix(lower, []byte("0x")):
		return fmt.Sprintf("%q is not a decimal number (hexadecimal)", clip(b))
	case bytes.IndexByte(b, '_') >= 0 && isDecimal(bytes.ReplaceAll(b, []byte("_"), nil)):
		return fmt.Sprintf("%q is not a decimal number: digit separators (_) are not allowed", clip(b))
	}
	return fmt.Sprintf("%q is not a number", clip(b))
}

// digits counts the leading ASCII digits of b.
func digits(b []byte) int {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return n
}

// clip shortens a field for an error message.
func clip(b []byte) string {
	const max = 40
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
